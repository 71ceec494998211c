//! Sealed records (docs/snapshot-store.md, "Sealing"): a record opens only for exactly the run,
//! scope, guest build, catalog and expiry it was sealed for, under a key of the ring; any other
//! byte or binding is refused with a clear error.

use std::os::unix::fs::PermissionsExt;

use codemode_snapshot::{Binding, KeyError, RunScope, SealError, StateKeys, StateUrl};
use proptest::prelude::*;

const KEY_A: [u8; 32] = [7; 32];
const KEY_B: [u8; 32] = [9; 32];

fn scope(session: &str) -> RunScope {
    RunScope {
        session_id: Some(session.into()),
        ..RunScope::default()
    }
}

fn binding<'a>(run_id: &'a str, owner: &'a RunScope) -> Binding<'a> {
    Binding {
        run_id,
        owner,
        guest_sha256: "aa11",
        catalog_fingerprint: "cat-1",
        expires_at_ms: 1_800_000_000_000,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sealed_records_open_only_for_their_binding(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        flip in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let keys = StateKeys::new(vec![KEY_A]).unwrap();
        let owner = scope("s1");
        let bound = binding("cm_1", &owner);
        let sealed = keys.seal(&bound, &body).unwrap();
        prop_assert_eq!(keys.open(&bound, &sealed).unwrap(), body.clone());

        // Any flipped bit is refused.
        let mut tampered = sealed.clone();
        let at = flip.index(tampered.len());
        tampered[at] ^= 1 << bit;
        prop_assert!(keys.open(&bound, &tampered).is_err());

        // Any other binding is refused with the authentication error.
        let other_scope = scope("s2");
        let refused = SealError::Refused { run_id: "cm_1".into() };
        for moved in [
            Binding { owner: &other_scope, ..bound },
            Binding { guest_sha256: "bb22", ..bound },
            Binding { catalog_fingerprint: "cat-2", ..bound },
            Binding { expires_at_ms: bound.expires_at_ms + 1, ..bound },
        ] {
            prop_assert_eq!(keys.open(&moved, &sealed), Err(refused.clone()));
        }
        let elsewhere = Binding { run_id: "cm_2", ..bound };
        prop_assert_eq!(
            keys.open(&elsewhere, &sealed),
            Err(SealError::Refused { run_id: "cm_2".into() })
        );
    }
}

#[test]
fn errors_say_why_a_record_is_not_restored() {
    let keys = StateKeys::new(vec![KEY_A]).unwrap();
    let owner = scope("s1");
    let bound = binding("cm_1", &owner);
    let sealed = keys.seal(&bound, b"run").unwrap();
    assert_eq!(
        keys.open(&Binding { owner: &scope("s2"), ..bound }, &sealed)
            .unwrap_err()
            .to_string(),
        "stored code mode run cm_1 failed authentication: it was altered, or moved to another run, scope, guest build, catalog or expiry; it is not restored"
    );
    assert_eq!(
        keys.open(&bound, b"CMSEAL1 too short")
            .unwrap_err()
            .to_string(),
        "stored code mode run cm_1 is not a sealed record; it is not restored"
    );
    let stranger = StateKeys::new(vec![KEY_B]).unwrap();
    let id_a = keys.key_ids()[0].clone();
    assert_eq!(id_a.len(), 16);
    assert_eq!(
        stranger.open(&bound, &sealed).unwrap_err().to_string(),
        format!("stored code mode run cm_1 was sealed with a key this process does not have (key id {id_a}); it is not restored")
    );
    // Two seals of the same body differ (random nonces).
    assert_ne!(keys.seal(&bound, b"run").unwrap(), sealed);
    // Debug never shows key bytes.
    assert_eq!(
        format!("{keys:?}"),
        format!("StateKeys {{ key_ids: [\"{id_a}\"] }}")
    );
}

#[test]
fn rotation_seals_with_the_first_key_and_opens_with_any() {
    let owner = scope("s1");
    let bound = binding("cm_1", &owner);
    let old = StateKeys::new(vec![KEY_A]).unwrap();
    let rotated = StateKeys::new(vec![KEY_B, KEY_A]).unwrap();
    let before = old.seal(&bound, b"old").unwrap();
    let after = rotated.seal(&bound, b"new").unwrap();
    assert_eq!(rotated.open(&bound, &before).unwrap(), b"old");
    assert_eq!(rotated.open(&bound, &after).unwrap(), b"new");
    assert!(matches!(
        old.open(&bound, &after),
        Err(SealError::UnknownKey { .. })
    ));
}

#[test]
fn keys_come_from_the_environment_or_a_private_file() {
    use base64::Engine;
    let b64 = |k: &[u8]| base64::engine::general_purpose::STANDARD.encode(k);
    let dir = tempfile::tempdir().unwrap();
    let redis: StateUrl = "redis://127.0.0.1:6379".parse().unwrap();
    let memory = StateUrl::Memory;

    assert_eq!(StateKeys::for_state(&memory, None, None), Ok(None));
    assert_eq!(
        StateKeys::for_state(&redis, None, None).unwrap_err().to_string(),
        "--state redis://127.0.0.1:6379/0 keeps parked runs outside the process and needs a sealing key: set CODEMODE_STATE_KEY (32 bytes, standard base64) or pass --state-key-file FILE"
    );
    assert_eq!(
        StateKeys::for_state(&redis, Some(" \n"), None).unwrap_err(),
        KeyError::Missing {
            url: "redis://127.0.0.1:6379/0".into()
        },
        "an empty variable is no key"
    );
    let env = StateKeys::for_state(&redis, Some(&b64(&KEY_A)), None)
        .unwrap()
        .unwrap();
    assert_eq!(env, StateKeys::new(vec![KEY_A]).unwrap());
    assert_eq!(
        StateKeys::from_base64(&b64(&[1; 16])).unwrap_err().to_string(),
        "CODEMODE_STATE_KEY: a key is 32 bytes, this one is 16 (make one with: head -c 32 /dev/urandom | base64)"
    );
    assert!(StateKeys::from_base64("not base64!")
        .unwrap_err()
        .to_string()
        .starts_with("CODEMODE_STATE_KEY: not standard base64 ("));

    let file = dir.path().join("keys");
    std::fs::write(
        &file,
        format!("# new first\n{}\n\n{}\n", b64(&KEY_B), b64(&KEY_A)),
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        StateKeys::from_file(&file).unwrap_err().to_string(),
        format!(
            "state key file {}: group or others can access it (mode 644); chmod 600 it",
            file.display()
        )
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        StateKeys::from_file(&file).unwrap(),
        StateKeys::new(vec![KEY_B, KEY_A]).unwrap()
    );
    // The env key seals; the file's keys still open.
    assert_eq!(
        StateKeys::for_state(&redis, Some(&b64(&KEY_A)), Some(&file))
            .unwrap()
            .unwrap(),
        StateKeys::new(vec![KEY_A, KEY_B, KEY_A]).unwrap()
    );
    std::fs::write(&file, format!("{}\nshort\n", b64(&KEY_B))).unwrap();
    assert!(StateKeys::from_file(&file)
        .unwrap_err()
        .to_string()
        .starts_with(&format!(
            "state key file {} line 2: not standard base64",
            file.display()
        )));
    std::fs::write(&file, "# nothing\n").unwrap();
    assert_eq!(
        StateKeys::from_file(&file).unwrap_err().to_string(),
        format!("state key file {}: holds no key", file.display())
    );
}
