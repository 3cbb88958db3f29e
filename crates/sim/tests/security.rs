//! Encrypted flows in the simulator (`security` in `[[flows]]`): every
//! Noise pattern completes its handshake over a lossy bottleneck and
//! delivers the file, the summary reports the sealing, runs reproduce bit
//! for bit, and unencrypted flows carry no `security` key.

use peregrine_sim::{run, Scenario};

fn scenario(security: &str, loss: f64) -> Scenario {
    let toml = format!(
        r#"
name = "sec"
duration = "4s"
seed = 9
[[links]]
name = "l"
a = "a"
b = "b"
rate = "10Mbps"
delay = "10ms"
queue = {{ packets = 100 }}
loss = {{ model = "bernoulli", p = {loss} }}
[[flows]]
src = "a"
dst = "b"
security = "{security}"
[[flows.streams]]
app = "file"
bytes = 500000
"#
    );
    Scenario::from_toml_str(&toml, "sec.toml", &[]).expect("valid scenario")
}

#[test]
fn every_pattern_delivers_the_file_encrypted_over_a_lossy_link() {
    for mode in ["ik", "xx", "ikpsk2", "nnpsk0"] {
        let s = run(&scenario(mode, 0.02)).expect("runs").summary_json();
        let f = &s["flows"][0];
        let st = &f["streams"][0];
        assert_eq!(
            st["bytes_delivered"].as_u64(),
            Some(500_000),
            "{mode}: file delivered"
        );
        let sec = &f["security"];
        assert_eq!(sec["encrypted"].as_bool(), Some(true), "{mode}: {sec}");
        assert!(
            sec["pattern"]
                .as_str()
                .is_some_and(|p| p.to_lowercase().contains(&format!("_{mode}_"))),
            "{mode}: {sec}"
        );
        assert!(
            sec["packets_sealed"].as_u64().unwrap_or(0) > 300,
            "{mode}: {sec}"
        );
        assert!(
            sec["packets_opened"].as_u64().unwrap_or(0) > 0,
            "{mode}: {sec}"
        );
        assert_eq!(sec["auth_failures"].as_u64(), Some(0), "{mode}: {sec}");
    }
}

#[test]
fn encrypted_runs_reproduce_and_plain_runs_carry_no_security_key() {
    let a = run(&scenario("xx", 0.01)).expect("runs").summary_json();
    let b = run(&scenario("xx", 0.01)).expect("runs").summary_json();
    assert_eq!(a, b, "same seed, same bytes");
    let plain = run(&scenario("none", 0.01)).expect("runs").summary_json();
    assert!(plain["flows"][0].get("security").is_none());
    // The tag costs 16 bytes per packet: the encrypted flow puts more bytes
    // on the wire for the same file.
    assert!(
        a["flows"][0]["tx_bytes"].as_u64() > plain["flows"][0]["tx_bytes"].as_u64(),
        "{} vs {}",
        a["flows"][0]["tx_bytes"],
        plain["flows"][0]["tx_bytes"]
    );
}

#[test]
fn an_unknown_security_mode_names_the_field() {
    let toml = r#"
name = "bad"
duration = "1s"
seed = 1
[[links]]
name = "l"
a = "a"
b = "b"
rate = "1Mbps"
delay = "1ms"
[[flows]]
src = "a"
dst = "b"
security = "tls"
[[flows.streams]]
app = "bulk"
"#;
    let Err(err) = Scenario::from_toml_str(toml, "bad.toml", &[]) else {
        panic!("an unknown security mode must be rejected")
    };
    let err = err.to_string();
    assert!(err.contains("flows.0.security"), "{err}");
    assert!(err.contains("allowed: none, ik, xx"), "{err}");
}
