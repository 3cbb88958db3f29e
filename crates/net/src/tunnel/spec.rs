//! Forward specifications: `PROTO:LOCAL_PORT:TARGET_HOST:TARGET_PORT[,class=N][,reliability=…][,deadline=DUR]`.

use peregrine_proto::StreamReliability;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The transport a forward carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FlowProto {
    /// Datagrams: one message per datagram.
    Udp,
    /// A byte stream: one reliable, ordered Peregrine stream per connection.
    Tcp,
}

impl fmt::Display for FlowProto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FlowProto::Udp => "udp",
            FlowProto::Tcp => "tcp",
        })
    }
}

/// The MAVLink port: UDP forwards to it default to class 0, unreliable,
/// with [`MAVLINK_DEADLINE`] (the MAVLink recipe of `docs/tunnel.md`).
pub const MAVLINK_PORT: u16 = 14550;
/// Default deadline of a MAVLink (UDP 14550) forward: a command older
/// than this is no use to a vehicle.
pub const MAVLINK_DEADLINE: Duration = Duration::from_millis(500);

/// One `-L` forward: a local port whose traffic goes, through the
/// tunnel, to `target` as seen from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardSpec {
    /// UDP or TCP.
    pub proto: FlowProto,
    /// The local port the client listens on (0: any free port).
    pub local_port: u16,
    /// `HOST:PORT` as the server resolves it (IPv6 in brackets).
    pub target: String,
    /// Priority class, 0 (most urgent) to 3.
    pub class: u8,
    /// Reliability of the flow's stream (TCP: always reliable, ordered).
    pub reliability: StreamReliability,
    /// Lifetime of each message (UDP): dropped if not acknowledged in time.
    pub deadline: Option<Duration>,
}

/// A forward specification that cannot work; the text names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("-L {spec}: {what}")]
pub struct SpecError {
    /// The specification as given.
    pub spec: String,
    /// What is wrong, naming the field.
    pub what: String,
}

impl ForwardSpec {
    /// The defaults for a forward of `proto` to target port `port`: UDP
    /// 14550 (MAVLink) class 0, unreliable, 500 ms deadline; other UDP
    /// class 1, unreliable, no deadline; TCP class 2, reliable.
    pub fn defaults(proto: FlowProto, port: u16) -> (u8, StreamReliability, Option<Duration>) {
        match proto {
            FlowProto::Udp if port == MAVLINK_PORT => {
                (0, StreamReliability::Unreliable, Some(MAVLINK_DEADLINE))
            }
            FlowProto::Udp => (1, StreamReliability::Unreliable, None),
            FlowProto::Tcp => (2, StreamReliability::ReliableOrdered, None),
        }
    }
}

/// Split `HOST:PORT` (IPv6 as `[addr]:port`) into host and port.
pub fn split_host_port(s: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest.split_once("]:")?;
        (h, p)
    } else {
        s.rsplit_once(':')?
    };
    if host.is_empty() || host.contains(':') && !s.starts_with('[') {
        return None;
    }
    Some((host, port.parse().ok()?))
}

/// A duration written `500ms`, `2s`, `1.5s`, `250us`.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|i| s.split_at(i))?;
    let v: f64 = num.parse().ok()?;
    let secs = match unit {
        "s" => v,
        "ms" => v / 1e3,
        "us" => v / 1e6,
        _ => return None,
    };
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

impl FromStr for ForwardSpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<ForwardSpec, SpecError> {
        let err = |what: String| SpecError {
            spec: spec.to_string(),
            what,
        };
        let mut parts = spec.split(',');
        let main = parts.next().unwrap_or_default();
        let (proto, rest) = main
            .split_once(':')
            .ok_or_else(|| err("expected PROTO:LOCAL_PORT:TARGET_HOST:TARGET_PORT".into()))?;
        let proto = match proto {
            "udp" => FlowProto::Udp,
            "tcp" => FlowProto::Tcp,
            p => return Err(err(format!("PROTO: `{p}` is not udp or tcp"))),
        };
        let (local, target) = rest
            .split_once(':')
            .ok_or_else(|| err("expected LOCAL_PORT:TARGET_HOST:TARGET_PORT".into()))?;
        let local_port: u16 = local
            .parse()
            .map_err(|_| err(format!("LOCAL_PORT: `{local}` is not a port (0–65535)")))?;
        let (host, port) = split_host_port(target).ok_or_else(|| {
            err(format!(
                "TARGET_HOST:TARGET_PORT: `{target}` is not HOST:PORT (IPv6 as [ADDR]:PORT)"
            ))
        })?;
        if port == 0 {
            return Err(err("TARGET_PORT: 0 is not a port one can reach".into()));
        }
        if target.len() > 255 {
            return Err(err("TARGET_HOST: longer than 255 bytes".into()));
        }
        let _ = host;
        let (mut class, mut reliability, mut deadline) = ForwardSpec::defaults(proto, port);
        for opt in parts {
            let (k, v) = opt
                .split_once('=')
                .ok_or_else(|| err(format!("option `{opt}`: expected KEY=VALUE")))?;
            match k {
                "class" => {
                    class = v
                        .parse()
                        .ok()
                        .filter(|c| *c <= 3)
                        .ok_or_else(|| err(format!("class: `{v}` is not 0, 1, 2 or 3")))?;
                }
                "reliability" => {
                    reliability = match v {
                        "reliable" => StreamReliability::ReliableOrdered,
                        "unordered" => StreamReliability::ReliableUnordered,
                        "unreliable" => StreamReliability::Unreliable,
                        _ => {
                            return Err(err(format!(
                                "reliability: `{v}` is not reliable, unordered or unreliable"
                            )))
                        }
                    };
                }
                "deadline" => {
                    deadline = match v {
                        "none" => None,
                        _ => Some(parse_duration(v).filter(|d| !d.is_zero()).ok_or_else(|| {
                            err(format!(
                                "deadline: `{v}` is not a positive duration (e.g. 200ms) or none"
                            ))
                        })?),
                    };
                }
                _ => {
                    return Err(err(format!(
                        "option `{k}`: unknown (class, reliability, deadline)"
                    )))
                }
            }
        }
        if proto == FlowProto::Tcp {
            if reliability != StreamReliability::ReliableOrdered {
                return Err(err(
                    "reliability: a TCP forward is a byte stream and must be reliable".into(),
                ));
            }
            if deadline.is_some() {
                return Err(err(
                    "deadline: a TCP forward cannot drop bytes; deadlines are for UDP".into(),
                ));
            }
        }
        Ok(ForwardSpec {
            proto,
            local_port,
            target: target.to_string(),
            class,
            reliability,
            deadline,
        })
    }
}

/// The reliability's name in specifications and reports.
pub fn reliability_name(r: StreamReliability) -> &'static str {
    match r {
        StreamReliability::ReliableOrdered => "reliable",
        StreamReliability::ReliableUnordered => "unordered",
        StreamReliability::Unreliable => "unreliable",
    }
}

impl fmt::Display for ForwardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{},class={},reliability={}",
            self.proto,
            self.local_port,
            self.target,
            self.class,
            reliability_name(self.reliability)
        )?;
        if let Some(d) = self.deadline {
            write!(f, ",deadline={}ms", d.as_millis())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mavlink_defaults_and_options() {
        let f: ForwardSpec = "udp:14550:127.0.0.1:14550".parse().unwrap();
        assert_eq!(f.class, 0);
        assert_eq!(f.reliability, StreamReliability::Unreliable);
        assert_eq!(f.deadline, Some(MAVLINK_DEADLINE));
        let f: ForwardSpec = "udp:5000:[::1]:5001,class=3,reliability=unordered,deadline=200ms"
            .parse()
            .unwrap();
        assert_eq!((f.local_port, f.target.as_str()), (5000, "[::1]:5001"));
        assert_eq!(f.class, 3);
        assert_eq!(f.reliability, StreamReliability::ReliableUnordered);
        assert_eq!(f.deadline, Some(Duration::from_millis(200)));
        let f: ForwardSpec = "tcp:2222:host.example:22".parse().unwrap();
        assert_eq!((f.class, f.deadline), (2, None));
        // Display parses back to the same forward.
        assert_eq!(f.to_string().parse::<ForwardSpec>().unwrap(), f);
    }

    #[test]
    fn bad_fields_are_named() {
        let e = |s: &str| s.parse::<ForwardSpec>().unwrap_err().what;
        assert!(e("sctp:1:h:2").contains("PROTO"));
        assert!(e("udp:99999:h:2").contains("LOCAL_PORT"));
        assert!(e("udp:1:h").contains("TARGET_HOST:TARGET_PORT"));
        assert!(e("udp:1:h:0").contains("TARGET_PORT"));
        assert!(e("udp:1:h:2,class=4").contains("class"));
        assert!(e("udp:1:h:2,reliability=maybe").contains("reliability"));
        assert!(e("udp:1:h:2,deadline=soon").contains("deadline"));
        assert!(e("udp:1:h:2,color=red").contains("color"));
        assert!(e("tcp:1:h:2,reliability=unreliable").contains("reliability"));
        assert!(e("tcp:1:h:2,deadline=1s").contains("deadline"));
    }
}
