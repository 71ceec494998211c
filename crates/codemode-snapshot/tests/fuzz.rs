//! Fuzz target `store_record` (docs/threat-model.md, "Fuzzing"): the record files of a `dir:`
//! run store are bytes that outlive the process that wrote them (a crash mid-write, a disk
//! error, an operator's edit), so every input is written as a record file of a real
//! [`DirRunStore`] and read back the ways a `codemode serve` reads it: `list`, `claim` (the
//! `wait` path) and `purge_expired`. None may panic; a claimed record is always the run it was
//! claimed as; and a sealed body opens only when it is, byte for byte, the body that was sealed
//! for that binding (any other input is refused by the seal, never restored).

#[path = "../../../xtask/fuzz/engine.rs"]
mod engine;

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

use codemode_snapshot::backend::dir::DirRunStore;
use codemode_snapshot::record::now_ms;
use codemode_snapshot::{Binding, RecordMeta, RunScope, RunStore, StateKeys, StoredRun};

/// The run id every input is stored under.
const RUN_ID: &str = "cm_fuzz_1";

/// The plaintext of the genuine record (what a restore would see).
const PLAINTEXT: &[u8] = b"CMPORT1 the portable part of a parked run";

fn owner() -> RunScope {
    RunScope {
        session_id: Some("s1".into()),
        ..RunScope::default()
    }
}

fn keys() -> StateKeys {
    StateKeys::new(vec![[7; 32]]).expect("one key")
}

fn binding<'a>(meta: &'a RecordMeta) -> Binding<'a> {
    Binding {
        run_id: &meta.run_id,
        owner: &meta.owner,
        guest_sha256: "aa11",
        catalog_fingerprint: "cat-1",
        expires_at_ms: meta.expires_at_ms,
    }
}

/// The genuine record file (an hour to live), as the store writes it, plus its expired twin.
fn seeds(runtime: &tokio::runtime::Runtime) -> Vec<Vec<u8>> {
    [3_600_000, 0]
        .into_iter()
        .map(|ttl_ms| {
            let dir = tempfile::tempdir().expect("temp dir");
            let store = DirRunStore::open(dir.path()).expect("dir store");
            let meta = RecordMeta {
                run_id: RUN_ID.into(),
                owner: owner(),
                expires_at_ms: now_ms() + ttl_ms,
            };
            let body = keys().seal(&binding(&meta), PLAINTEXT).expect("seal");
            runtime
                .block_on(store.put(StoredRun { meta, body }, 64))
                .expect("put");
            std::fs::read(dir.path().join(format!("{RUN_ID}.cmrun"))).expect("record file")
        })
        .collect()
}

/// Writes `bytes` as the record of [`RUN_ID`] (mode 0600, as the store writes records).
fn plant(dir: &std::path::Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(dir.join(format!("{RUN_ID}.cmrun")))
        .expect("record file");
    file.write_all(bytes).expect("write record");
}

#[test]
fn fuzz_store_record() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let seeds = seeds(&runtime);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = DirRunStore::open(dir.path()).expect("dir store");
    let keys = keys();
    let caller = owner();
    engine::run("store_record", &seeds, None, &|bytes| {
        plant(dir.path(), bytes);
        runtime.block_on(async {
            if let Ok(listed) = store.list().await {
                for meta in &listed {
                    assert_eq!(meta.run_id, RUN_ID, "list shows another run");
                }
            }
            if let Ok(claim) = store.claim(RUN_ID, &caller, Duration::from_secs(30)).await {
                assert_eq!(claim.run.meta.run_id, RUN_ID, "claimed another run");
                assert!(!claim.run.meta.expired(now_ms()), "claimed an expired run");
                if let Ok(plain) = keys.open(&binding(&claim.run.meta), &claim.run.body) {
                    assert_eq!(plain, PLAINTEXT, "a changed record opened");
                }
                let _ = store.release(&claim).await;
            }
            let _ = store.purge_expired().await;
        });
    });
}
