//! Key file round trips and the errors of bad files.

use super::*;

/// A fresh directory under the system temp dir for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("peregrine-keys-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a scratch dir");
    d
}

#[test]
fn keypair_round_trips_through_its_file_with_mode_0600() {
    let dir = scratch("round");
    let kp = generate_keypair().expect("OS entropy");
    let path = dir.join("id");
    save_keypair(&path, &kp, false).expect("write");
    save_public_key(&public_key_path(&path), &kp.public(), false).expect("write .pub");
    assert_eq!(load_keypair(&path).expect("read"), kp);
    assert_eq!(
        load_public_key(&dir.join("id.pub")).expect("read .pub"),
        kp.public()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(permission_warning(&path), None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(permission_warning(&path)
            .expect("a warning")
            .contains("0644"));
    }
    // No silent overwrite; with `overwrite` the file is replaced (and 0600 again).
    let other = generate_keypair().expect("OS entropy");
    let e = save_keypair(&path, &other, false).expect_err("exists");
    assert!(e.to_string().contains("already exists"), "{e}");
    save_keypair(&path, &other, true).expect("overwrite");
    assert_eq!(load_keypair(&path).expect("read"), other);
    assert_eq!(permission_warning(&path), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn psk_and_authorized_keys_round_trip() {
    let dir = scratch("psk");
    let psk = generate_psk().expect("OS entropy");
    assert_ne!(psk, generate_psk().expect("OS entropy"));
    let path = dir.join("fleet.psk");
    save_psk(&path, &psk, false).expect("write");
    assert_eq!(load_psk(&path).expect("read"), psk);
    let a = generate_keypair().expect("entropy").public();
    let b = generate_keypair().expect("entropy").public();
    let text = format!("# fleet\n{a} drone-1\n\n{b}\n");
    assert_eq!(
        parse_authorized_keys(&text, Path::new("auth")).expect("parse"),
        vec![a, b]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_files_name_the_file_line_and_problem_without_echoing_secrets() {
    let p = Path::new("k");
    let kp = StaticKeypair::from_private([0x42; 32]);
    let good = format_keypair(&kp);
    assert_eq!(parse_keypair(&good, p).expect("parse"), kp);

    let e = parse_keypair("", p).expect_err("empty");
    assert_eq!((e.line, e.to_string().contains("empty")), (None, true));

    let e = parse_keypair(&format_public_key(&kp.public()), p).expect_err("wrong kind");
    assert_eq!(e.line, Some(1));
    assert!(e.problem.contains("public key file"), "{e}");

    let secret = "ab".repeat(32);
    let e = parse_keypair(&secret, p).expect_err("raw hex");
    assert_eq!(e.line, Some(1));
    assert!(!e.to_string().contains("abab"), "echoes the secret: {e}");

    let short = good.replace(&format!("public = {}", kp.public()), "public = 1234");
    let e = parse_keypair(&short, p).expect_err("short");
    assert_eq!(e.line, Some(4));
    assert!(
        e.to_string().starts_with("k:4: `public` must be 64 hex"),
        "{e}"
    );

    let e = parse_keypair(&good.replace("private =", "privat ="), p).expect_err("typo");
    assert_eq!(e.line, Some(3));
    assert!(e.problem.contains("unknown field `privat`"), "{e}");

    let e = parse_keypair(&format!("{good}private = {}\n", "00".repeat(32)), p).expect_err("twice");
    assert_eq!(e.line, Some(5));
    assert!(e.problem.contains("given twice (first on line 3)"), "{e}");

    let e = parse_keypair(&format!("{KEYPAIR_HEADER}\nprivate\n"), p).expect_err("no =");
    assert_eq!(e.line, Some(2));

    let e = parse_keypair(&format!("{KEYPAIR_HEADER}\npublic = {}\n", kp.public()), p)
        .expect_err("missing private");
    assert_eq!(e.line, None);
    assert!(e.problem.contains("no `private"), "{e}");

    let other = StaticKeypair::from_private([0x43; 32]).public();
    let mismatch = good.replace(&kp.public().to_hex(), &other.to_hex());
    let e = parse_keypair(&mismatch, p).expect_err("mismatch");
    assert_eq!(e.line, Some(4));
    assert!(e.problem.contains("not the public half"), "{e}");

    let e = parse_psk(&format!("{PSK_HEADER}\npsk = zz\n"), p).expect_err("bad psk");
    assert_eq!(e.line, Some(2));
    let e = parse_authorized_keys("# none\n\n", p).expect_err("empty list");
    assert!(e.problem.contains("no public keys"), "{e}");
    let e =
        parse_authorized_keys(&format!("{}\nnot-a-key\n", kp.public()), p).expect_err("bad entry");
    assert_eq!(e.line, Some(2));

    let e = load_keypair(Path::new("/nonexistent/peregrine/key")).expect_err("missing file");
    assert!(
        e.to_string()
            .starts_with("/nonexistent/peregrine/key: cannot read"),
        "{e}"
    );
}
