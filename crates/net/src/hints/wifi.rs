//! `wifi:IFACE`: hints from a Linux Wi-Fi station's own statistics.
//!
//! Every [`POLL_INTERVAL`] the source asks nl80211 for the interface's
//! stations (`NL80211_CMD_GET_STATION`, a dump — what `iw dev IFACE
//! station dump` prints; in station mode the one entry is the access
//! point) through `wl-nl80211`, and turns the change since the previous
//! poll into hints by one rule ([`Detector`]):
//!
//! | seen in one poll interval, while the link is up | hint | duration | confidence |
//! |---|---|---|---|
//! | the station is gone (disassociated) | `outage` | — | 1 |
//! | `beacon_loss` grew (the driver declared lost beacons) | `outage` | [`BEACON_OUTAGE`] | 1 |
//! | `tx_failed` grew by ≥ [`FAILED_THRESHOLD`] (frames given up after every retry) | `blockage` | [`FAILURE_OUTAGE`] | 0.8 |
//! | ≥ [`RETRY_MIN_PACKETS`] frames sent and more than [`RETRY_RATIO`] retries per frame | `blockage` | [`FAILURE_OUTAGE`] | 0.6 |
//!
//! and, once a failure was announced, the first poll in which the station
//! is there, no beacon was lost, no frame failed and the signal is at
//! least [`SIGNAL_FLOOR_DBM`] announces `restored`. One failure hint per
//! episode: nothing more is announced until the link is restored. The
//! signal alone never announces an outage (a weak link is a slow link, not
//! a dead one); it only keeps an episode open.
//!
//! [`decode_dump`] reads the kernel's reply bytes (the unit tests run it
//! on replies in the kernel's layout); malformed replies are errors, never
//! panics.

use super::{Hint, HintError, HintKind, HintSource, SourcePoll};
use std::collections::VecDeque;
use std::time::Duration;
use wl_nl80211::packet_core::{NetlinkMessage, NetlinkPayload};
use wl_nl80211::packet_generic::GenlMessage;
use wl_nl80211::{Nl80211Attr, Nl80211Message, Nl80211StationInfo};

/// How often the station statistics are read.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// Predicted length of an outage announced by lost beacons: two beacon
/// intervals of the usual 102.4 ms.
pub const BEACON_OUTAGE: Duration = Duration::from_millis(200);
/// Predicted length of a blockage announced by failed or retried frames.
pub const FAILURE_OUTAGE: Duration = Duration::from_millis(100);
/// Failed frames in one poll interval that announce a blockage.
pub const FAILED_THRESHOLD: u32 = 3;
/// Frames sent in one interval before the retry ratio is judged.
pub const RETRY_MIN_PACKETS: u32 = 10;
/// Retries per frame sent above which the interval announces a blockage.
pub const RETRY_RATIO: f64 = 1.0;
/// Signal (dBm) below which the link is not declared restored (about the
/// sensitivity of the lowest 802.11 rates).
pub const SIGNAL_FLOOR_DBM: i8 = -85;

/// One station's counters (cumulative, as the driver keeps them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StationStats {
    /// The peer's MAC address.
    pub mac: [u8; 6],
    /// Signal of the last frame, dBm.
    pub signal_dbm: Option<i8>,
    /// Beacon-loss events.
    pub beacon_loss: Option<u32>,
    /// Frames sent.
    pub tx_packets: Option<u32>,
    /// Retransmissions.
    pub tx_retries: Option<u32>,
    /// Frames given up.
    pub tx_failed: Option<u32>,
}

/// The station in one nl80211 message, if it describes one.
pub fn station_of(msg: &Nl80211Message) -> Option<StationStats> {
    let mut s = StationStats::default();
    let mut info = None;
    for a in &msg.attributes {
        match a {
            Nl80211Attr::Mac(m) => s.mac = *m,
            Nl80211Attr::StationInfo(i) => info = Some(i),
            _ => {}
        }
    }
    for i in info? {
        match i {
            Nl80211StationInfo::Signal(v) => s.signal_dbm = Some(*v),
            Nl80211StationInfo::BeaconLoss(v) => s.beacon_loss = Some(*v),
            Nl80211StationInfo::TxPackets(v) => s.tx_packets = Some(*v),
            Nl80211StationInfo::TxRetries(v) => s.tx_retries = Some(*v),
            Nl80211StationInfo::TxFailed(v) => s.tx_failed = Some(*v),
            _ => {}
        }
    }
    Some(s)
}

/// Decode the bytes of a `GET_STATION` dump reply (one or more netlink
/// messages, as one `recv` returns them): the stations, and whether the
/// dump is complete (`NLMSG_DONE` seen). Errors say what is malformed.
/// O(bytes).
pub fn decode_dump(mut bytes: &[u8]) -> Result<(Vec<StationStats>, bool), String> {
    let mut stations = Vec::new();
    let mut done = false;
    while !bytes.is_empty() {
        if bytes.len() < 16 {
            return Err(format!(
                "{} bytes left, shorter than a netlink header",
                bytes.len()
            ));
        }
        let len = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if len < 16 || len > bytes.len() {
            return Err(format!(
                "netlink length {len} with {} bytes left",
                bytes.len()
            ));
        }
        let msg = NetlinkMessage::<GenlMessage<Nl80211Message>>::deserialize(&bytes[..len])
            .map_err(|e| format!("netlink message: {e}"))?;
        match msg.payload {
            NetlinkPayload::InnerMessage(g) => {
                if let Some(s) = station_of(&g.payload) {
                    stations.push(s);
                }
            }
            NetlinkPayload::Done(_) => done = true,
            NetlinkPayload::Error(e) => {
                return Err(format!("the kernel answered error {:?}", e.code));
            }
            _ => {}
        }
        // Messages are 4-byte aligned.
        let step = (len + 3) & !3;
        bytes = &bytes[step.min(bytes.len())..];
    }
    Ok((stations, done))
}

/// The hint rule (module documentation) over successive polls.
#[derive(Clone, Debug, Default)]
pub struct Detector {
    last: Option<StationStats>,
    /// A failure was announced and the link is not restored yet.
    down: bool,
}

fn delta(now: Option<u32>, before: Option<u32>) -> u32 {
    match (now, before) {
        // Counters wrap (u32) or reset (a new association).
        (Some(n), Some(b)) if n >= b => n - b,
        _ => 0,
    }
}

impl Detector {
    /// Feed one poll: the interface's first station (the access point), or
    /// `None` when it has none. At most one hint. O(1).
    pub fn observe(&mut self, station: Option<&StationStats>) -> Option<Hint> {
        let Some(now) = station else {
            self.last = None;
            if self.down {
                return None;
            }
            self.down = true;
            return Some(Hint::now(HintKind::Outage));
        };
        let before = self.last.replace(now.clone());
        let Some(before) = before.filter(|b| b.mac == now.mac) else {
            // First sight (or a new access point): nothing to compare yet,
            // but the link is there.
            return std::mem::take(&mut self.down).then(|| Hint::now(HintKind::Restored));
        };
        let beacons = delta(now.beacon_loss, before.beacon_loss);
        let failed = delta(now.tx_failed, before.tx_failed);
        let packets = delta(now.tx_packets, before.tx_packets);
        let retries = delta(now.tx_retries, before.tx_retries);
        let weak = now.signal_dbm.is_some_and(|s| s < SIGNAL_FLOOR_DBM);
        if self.down {
            if beacons == 0 && failed == 0 && !weak {
                self.down = false;
                return Some(Hint::now(HintKind::Restored));
            }
            return None;
        }
        let failure = |kind, duration, confidence| {
            Some(Hint {
                duration: Some(duration),
                confidence,
                ..Hint::now(kind)
            })
        };
        let hint = if beacons > 0 {
            failure(HintKind::Outage, BEACON_OUTAGE, 1.0)
        } else if failed >= FAILED_THRESHOLD {
            failure(HintKind::Blockage, FAILURE_OUTAGE, 0.8)
        } else if packets >= RETRY_MIN_PACKETS
            && f64::from(retries) > RETRY_RATIO * f64::from(packets)
        {
            failure(HintKind::Blockage, FAILURE_OUTAGE, 0.6)
        } else {
            None
        };
        self.down = hint.is_some();
        hint
    }
}

/// The nl80211 source of `wifi:IFACE`.
pub struct WifiSource {
    iface: String,
    if_index: u32,
    /// Its own runtime for the netlink connection (`None` once dropped).
    runtime: Option<tokio::runtime::Runtime>,
    handle: wl_nl80211::Nl80211Handle,
    detector: Detector,
    queued: VecDeque<Hint>,
    next_poll: tokio::time::Instant,
}

impl std::fmt::Debug for WifiSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WifiSource")
            .field("iface", &self.iface)
            .finish()
    }
}

impl WifiSource {
    /// Open nl80211 for `iface` and read its stations once (so a missing
    /// interface, a missing Wi-Fi driver or a missing permission is an
    /// error now, naming the interface). Callable from async code: the
    /// source's own runtime is started on a helper thread.
    pub fn open(iface: &str) -> Result<WifiSource, HintError> {
        std::thread::scope(|s| s.spawn(|| WifiSource::open_here(iface)).join())
            .unwrap_or_else(|_| Err(HintError::new(format!("wifi:{iface}"), "opening panicked")))
    }

    fn open_here(iface: &str) -> Result<WifiSource, HintError> {
        let name = format!("wifi:{iface}");
        let c = std::ffi::CString::new(iface)
            .map_err(|_| HintError::new(&name, "the interface name contains a NUL byte"))?;
        // SAFETY: a valid NUL-terminated string.
        let if_index = unsafe { libc::if_nametoindex(c.as_ptr()) };
        if if_index == 0 {
            return Err(HintError::new(&name, format!("no interface {iface:?}")));
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| HintError::new(&name, format!("runtime: {e}")))?;
        let handle = runtime.block_on(async {
            let (conn, handle, _) = wl_nl80211::new_connection()
                .map_err(|e| HintError::new(&name, format!("netlink socket: {e}")))?;
            tokio::spawn(conn);
            Ok::<_, HintError>(handle)
        })?;
        let mut s = WifiSource {
            iface: iface.to_string(),
            if_index,
            runtime: Some(runtime),
            handle,
            detector: Detector::default(),
            queued: VecDeque::new(),
            next_poll: tokio::time::Instant::now(),
        };
        let first = s.dump().map_err(|e| {
            HintError::new(
                &name,
                format!("cannot read {iface}'s stations through nl80211 (is it a Wi-Fi interface?): {e}"),
            )
        })?;
        s.detector.observe(first.first());
        Ok(s)
    }

    fn dump(&mut self) -> Result<Vec<StationStats>, String> {
        use futures_util::TryStreamExt;
        let handle = self.handle.clone();
        let if_index = self.if_index;
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| "the source is closed".to_string())?;
        runtime.block_on(async move {
            let replies = tokio::time::timeout(Duration::from_secs(1), async {
                let stream = handle.station().dump(if_index).execute().await;
                stream.try_collect::<Vec<_>>().await
            })
            .await
            .map_err(|_| "no answer within 1 s".to_string())?
            .map_err(|e| e.to_string())?;
            Ok(replies
                .iter()
                .filter_map(|g| station_of(&g.payload))
                .collect())
        })
    }
}

impl Drop for WifiSource {
    fn drop(&mut self) {
        // Without blocking: the source may be dropped in async code.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl HintSource for WifiSource {
    fn next(&mut self, wait: Duration) -> Result<SourcePoll, HintError> {
        if let Some(h) = self.queued.pop_front() {
            return Ok(SourcePoll::Hint(h));
        }
        let now = tokio::time::Instant::now();
        if now < self.next_poll {
            let until = self.next_poll - now;
            std::thread::sleep(wait.min(until));
            if tokio::time::Instant::now() < self.next_poll {
                return Ok(SourcePoll::Idle);
            }
        }
        self.next_poll = tokio::time::Instant::now() + POLL_INTERVAL;
        let stations = self
            .dump()
            .map_err(|e| HintError::new(self.describe(), e))?;
        Ok(match self.detector.observe(stations.first()) {
            Some(h) => SourcePoll::Hint(h),
            None => SourcePoll::Idle,
        })
    }

    fn describe(&self) -> String {
        format!("wifi:{}", self.iface)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // nl80211 numbers (include/uapi/linux/nl80211.h).
    const CMD_NEW_STATION: u8 = 19;
    const ATTR_IFINDEX: u16 = 3;
    const ATTR_MAC: u16 = 6;
    const ATTR_STA_INFO: u16 = 21;
    const ATTR_GENERATION: u16 = 46;
    const STA_INFO_INACTIVE_TIME: u16 = 1;
    const STA_INFO_RX_BYTES: u16 = 2;
    const STA_INFO_TX_BYTES: u16 = 3;
    const STA_INFO_SIGNAL: u16 = 7;
    const STA_INFO_TX_PACKETS: u16 = 10;
    const STA_INFO_TX_RETRIES: u16 = 11;
    const STA_INFO_TX_FAILED: u16 = 12;
    const STA_INFO_SIGNAL_AVG: u16 = 13;
    const STA_INFO_CONNECTED_TIME: u16 = 16;
    const STA_INFO_BEACON_LOSS: u16 = 18;
    const NLA_F_NESTED: u16 = 0x8000;
    const NLMSG_DONE: u16 = 3;
    const NLM_F_MULTI: u16 = 2;
    /// The family id the kernel gave nl80211 on the machine the layout
    /// was taken from (dynamic; the decoder does not depend on it).
    const FAMILY: u16 = 0x22;

    fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
        let len = 4 + payload.len();
        let mut v = Vec::new();
        v.extend_from_slice(&(len as u16).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(payload);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn nlmsg(kind: u16, flags: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((16 + payload.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&7u32.to_ne_bytes()); // sequence
        v.extend_from_slice(&4242u32.to_ne_bytes()); // port id
        v.extend_from_slice(payload);
        v
    }

    /// One station entry as the kernel's `nl80211_send_station` lays it
    /// out (`iw dev wlan0 station dump` on an associated client), followed
    /// by `NLMSG_DONE`: signal −58 dBm, 12 beacon losses, 90,000 frames,
    /// 4,100 retries, 37 failures.
    fn reply(signal: i8, beacon_loss: u32, packets: u32, retries: u32, failed: u32) -> Vec<u8> {
        let mut info = Vec::new();
        info.extend(attr(STA_INFO_INACTIVE_TIME, &40u32.to_ne_bytes()));
        info.extend(attr(STA_INFO_RX_BYTES, &81_234_567u32.to_ne_bytes()));
        info.extend(attr(STA_INFO_TX_BYTES, &9_876_543u32.to_ne_bytes()));
        info.extend(attr(STA_INFO_SIGNAL, &[signal as u8]));
        info.extend(attr(STA_INFO_SIGNAL_AVG, &[(signal - 2) as u8]));
        info.extend(attr(STA_INFO_TX_PACKETS, &packets.to_ne_bytes()));
        info.extend(attr(STA_INFO_TX_RETRIES, &retries.to_ne_bytes()));
        info.extend(attr(STA_INFO_TX_FAILED, &failed.to_ne_bytes()));
        info.extend(attr(STA_INFO_CONNECTED_TIME, &3600u32.to_ne_bytes()));
        info.extend(attr(STA_INFO_BEACON_LOSS, &beacon_loss.to_ne_bytes()));
        let mut genl = vec![CMD_NEW_STATION, 1, 0, 0];
        genl.extend(attr(ATTR_IFINDEX, &3u32.to_ne_bytes()));
        genl.extend(attr(ATTR_MAC, &[0x02, 0x11, 0x22, 0x33, 0x44, 0x55]));
        genl.extend(attr(ATTR_GENERATION, &17u32.to_ne_bytes()));
        genl.extend(attr(ATTR_STA_INFO | NLA_F_NESTED, &info));
        let mut out = nlmsg(FAMILY, NLM_F_MULTI, &genl);
        out.extend(nlmsg(NLMSG_DONE, NLM_F_MULTI, &0i32.to_ne_bytes()));
        out
    }

    #[test]
    fn station_dumps_decode() {
        let (st, done) = decode_dump(&reply(-58, 12, 90_000, 4_100, 37)).expect("valid");
        assert!(done);
        assert_eq!(
            st,
            vec![StationStats {
                mac: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55],
                signal_dbm: Some(-58),
                beacon_loss: Some(12),
                tx_packets: Some(90_000),
                tx_retries: Some(4_100),
                tx_failed: Some(37),
            }]
        );
    }

    #[test]
    fn malformed_replies_are_errors_not_panics() {
        let good = reply(-58, 12, 90_000, 4_100, 37);
        assert!(decode_dump(&good[..10]).is_err(), "short header");
        let mut long = good.clone();
        long[0] = 0xff;
        long[1] = 0xff;
        assert!(decode_dump(&long).is_err(), "length past the end");
        // Every truncation and every single-byte corruption: an answer,
        // never a panic.
        for cut in 0..good.len() {
            let _ = decode_dump(&good[..cut]);
        }
        for i in 0..good.len() {
            for b in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] = b;
                let _ = decode_dump(&bad);
            }
        }
    }

    fn stats(
        signal: i8,
        beacon_loss: u32,
        packets: u32,
        retries: u32,
        failed: u32,
    ) -> StationStats {
        let (mut st, _) =
            decode_dump(&reply(signal, beacon_loss, packets, retries, failed)).expect("valid");
        st.remove(0)
    }

    #[test]
    fn the_rule_announces_one_failure_per_episode_and_the_recovery() {
        let mut d = Detector::default();
        assert_eq!(d.observe(Some(&stats(-58, 12, 1000, 100, 5))), None);
        // Quiet interval: 50 frames, 10 retries.
        assert_eq!(d.observe(Some(&stats(-60, 12, 1050, 110, 5))), None);
        // A beacon lost: an outage of two beacon intervals.
        let h = d
            .observe(Some(&stats(-75, 13, 1060, 140, 6)))
            .expect("outage");
        assert_eq!(
            (h.kind, h.duration),
            (HintKind::Outage, Some(BEACON_OUTAGE))
        );
        // Still failing: no second hint.
        assert_eq!(d.observe(Some(&stats(-80, 14, 1061, 160, 9))), None);
        // Weak signal keeps the episode open.
        assert_eq!(d.observe(Some(&stats(-90, 14, 1070, 170, 9))), None);
        let r = d
            .observe(Some(&stats(-62, 14, 1200, 180, 9)))
            .expect("restored");
        assert_eq!(r.kind, HintKind::Restored);
        // Failed frames: a blockage, confidence 0.8.
        let h = d
            .observe(Some(&stats(-63, 14, 1210, 200, 9 + FAILED_THRESHOLD)))
            .expect("blockage");
        assert_eq!((h.kind, h.confidence), (HintKind::Blockage, 0.8));
        assert!(
            d.observe(Some(&stats(-63, 14, 1300, 210, 12))).is_some(),
            "restored"
        );
        // Many retries per frame: a blockage, confidence 0.6.
        let h = d
            .observe(Some(&stats(-70, 14, 1320, 240, 12)))
            .expect("retries");
        assert_eq!((h.kind, h.confidence), (HintKind::Blockage, 0.6));
        // Disassociation while down: nothing more; reassociation restores.
        assert_eq!(d.observe(None), None);
        assert_eq!(
            d.observe(Some(&stats(-60, 0, 0, 0, 0))).map(|h| h.kind),
            Some(HintKind::Restored)
        );
        // Disassociation while up: an outage.
        assert_eq!(d.observe(None).map(|h| h.kind), Some(HintKind::Outage));
    }

    /// `perf --hints wifi:IFACE` opens the source inside its runtime.
    #[tokio::test]
    async fn opening_inside_a_runtime_does_not_panic() {
        let r = WifiSource::open("lo");
        if let Err(e) = r {
            assert!(e.to_string().contains("wifi:lo"), "{e}");
        }
    }

    #[test]
    fn a_missing_interface_is_named() {
        let e = WifiSource::open("pg-no-such-if0").expect_err("refused");
        assert!(
            e.to_string().contains("no interface \"pg-no-such-if0\""),
            "{e}"
        );
        // `lo` exists but is no Wi-Fi interface (or nl80211 is absent).
        if let Err(e) = WifiSource::open("lo") {
            assert!(e.to_string().contains("wifi:lo"), "{e}");
        }
    }
}
