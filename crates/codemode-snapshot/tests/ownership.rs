//! Finished records, owner leases and change notifications on every durable backend
//! (docs/snapshot-store.md, "Owner leases and changes"): `memory`, `dir:` in a temp directory
//! and `redis://` against a real `redis-server`, where a second connection stands for another
//! process.

#[path = "support/redis_server.rs"]
mod redis_server;

use std::time::Duration;

use codemode_snapshot::backend::memory::MemoryRunStore;
use codemode_snapshot::backend::redis::RedisRunStore;
use codemode_snapshot::backend::Changes;
use codemode_snapshot::record::now_ms;
use codemode_snapshot::{open, RecordMeta, RunScope, RunStore, RunStoreError, StateUrl, StoredRun};
use redis_server::RedisServer;

const LEASE: Duration = Duration::from_secs(30);
const OWNER: Duration = Duration::from_secs(5);

fn owner() -> RunScope {
    RunScope {
        session_id: Some("s1".into()),
        ..RunScope::default()
    }
}

fn run(id: &str, ttl_ms: u64, body: &[u8]) -> StoredRun {
    StoredRun {
        meta: RecordMeta {
            run_id: id.into(),
            owner: owner(),
            expires_at_ms: now_ms() + ttl_ms,
        },
        body: body.to_vec(),
    }
}

fn refused(result: Result<impl std::fmt::Debug, RunStoreError>) -> String {
    match result {
        Err(RunStoreError::Refused(e)) => e.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// `true` when `changes` resolves within `within`.
async fn changed(changes: &mut Changes, within: Duration) -> bool {
    tokio::time::timeout(within, changes.next()).await.is_ok()
}

/// What every backend does alike, in one process.
async fn rules(store: &dyn RunStore) {
    let scope = owner();
    assert_eq!(store.purge_all().await.unwrap(), 0);

    // Finished records: read by any number of claims without a lease, never listed or counted.
    store.put(run("cm_f", 60_000, b"parked"), 64).await.unwrap();
    let claim = store.claim("cm_f", &scope, LEASE).await.unwrap();
    assert!(!claim.is_finished());
    let done = run("cm_f", 60_000, b"result");
    store.put_finished(done.clone()).await.unwrap();
    for _ in 0..2 {
        let read = store.claim("cm_f", &scope, LEASE).await.unwrap();
        assert_eq!(read.run, done);
        assert_eq!(read.lease, None);
        assert!(read.is_finished());
    }
    store.release(&claim).await.unwrap(); // the parked claim's lease ended with the write
    assert_eq!(
        refused(
            store
                .claim("cm_f", &RunScope::default(), LEASE)
                .await
                .map(|c| c.run)
        ),
        "code mode run belongs to a different session."
    );
    assert!(
        store.list().await.unwrap().is_empty(),
        "finished: not listed"
    );
    store.put(run("cm_p", 60_000, b"p"), 1).await.unwrap(); // not counted against the cap
    let expired = run("cm_old", 100, b"old");
    store.put_finished(expired).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        refused(store.claim("cm_old", &scope, LEASE).await.map(|c| c.run)),
        "code mode run is unavailable or expired."
    );

    // Owner leases: taken, renewed, dropped; a renewal after the drop fails; remove ends one.
    assert!(store.take_owner_lease("cm_p", OWNER).await.unwrap());
    assert!(store.take_owner_lease("cm_p", OWNER).await.unwrap(), "mine");
    assert!(store.renew_owner_lease("cm_p", OWNER).await.unwrap());
    let own = store.claim("cm_p", &scope, LEASE).await.unwrap();
    store.release(&own).await.unwrap();
    store.drop_owner_lease("cm_p").await.unwrap();
    assert!(!store.renew_owner_lease("cm_p", OWNER).await.unwrap());
    assert!(store
        .take_owner_lease("cm_p", Duration::from_millis(100))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !store.renew_owner_lease("cm_p", OWNER).await.unwrap(),
        "expired"
    );
    assert!(store.take_owner_lease("cm_p", OWNER).await.unwrap());
    assert!(store.remove("cm_p").await.unwrap());
    assert!(!store.renew_owner_lease("cm_p", OWNER).await.unwrap());

    // Changes: every write, release, owner drop and removal of the run; not other runs'.
    let mut changes = store.changes("cm_c").await.unwrap();
    store.put(run("cm_other", 60_000, b"o"), 64).await.unwrap();
    assert!(!changed(&mut changes, Duration::from_millis(200)).await);
    store.put(run("cm_c", 60_000, b"c"), 64).await.unwrap();
    assert!(changed(&mut changes, Duration::from_secs(2)).await, "put");
    let claim = store.claim("cm_c", &scope, LEASE).await.unwrap();
    store.release(&claim).await.unwrap();
    assert!(
        changed(&mut changes, Duration::from_secs(2)).await,
        "release"
    );
    assert!(store.take_owner_lease("cm_c", OWNER).await.unwrap());
    store.drop_owner_lease("cm_c").await.unwrap();
    assert!(changed(&mut changes, Duration::from_secs(2)).await, "owner");
    store
        .put_finished(run("cm_c", 60_000, b"done"))
        .await
        .unwrap();
    assert!(
        changed(&mut changes, Duration::from_secs(2)).await,
        "finished"
    );
    store.remove("cm_c").await.unwrap();
    assert!(
        changed(&mut changes, Duration::from_secs(2)).await,
        "remove"
    );

    // Purging counts parked runs; finished records go too.
    assert_eq!(store.purge_all().await.unwrap(), 1, "cm_other");
    assert_eq!(
        refused(store.claim("cm_f", &scope, LEASE).await.map(|c| c.run)),
        "code mode run is unavailable or expired."
    );
}

#[tokio::test]
async fn memory_backend_keeps_finished_records_owner_leases_and_changes() {
    rules(&MemoryRunStore::new()).await;
}

#[tokio::test]
async fn dir_backend_keeps_finished_records_owner_leases_and_changes() {
    let parent = tempfile::tempdir().unwrap();
    let store = open(&StateUrl::Dir(parent.path().join("runs")))
        .await
        .unwrap();
    rules(store.as_ref()).await;
    // A finished record is a file that survives reopening, still finished.
    store
        .put_finished(run("cm_kept", 60_000, b"result"))
        .await
        .unwrap();
    drop(store);
    let reopened = open(&StateUrl::Dir(parent.path().join("runs")))
        .await
        .unwrap();
    let claim = reopened.claim("cm_kept", &owner(), LEASE).await.unwrap();
    assert!(claim.is_finished());
    assert_eq!(claim.run.body, b"result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_owner_leases_keep_other_processes_out_until_dropped_or_expired() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let a = RedisRunStore::connect(&server.url(4)).await.unwrap();
    rules(&a).await;
    let b = RedisRunStore::connect(&server.url(4)).await.unwrap();
    let scope = owner();

    // A owns the run: B's claim is refused with the record, B cannot take or renew the lease.
    let parked = run("cm_owned", 60_000, b"parked with a call in flight");
    assert!(a.take_owner_lease("cm_owned", OWNER).await.unwrap());
    a.put(parked.clone(), 64).await.unwrap();
    match b.claim("cm_owned", &scope, LEASE).await {
        Err(RunStoreError::OwnedElsewhere(record)) => assert_eq!(*record, parked),
        other => panic!("expected OwnedElsewhere, got {other:?}"),
    }
    assert_eq!(
        b.claim("cm_owned", &scope, LEASE)
            .await
            .unwrap_err()
            .to_string(),
        "code mode run cm_owned has tool calls in flight in another codemode process"
    );
    // The scope is checked first.
    assert_eq!(
        refused(b.claim("cm_owned", &RunScope::default(), LEASE).await),
        "code mode run belongs to a different session."
    );
    assert!(!b.take_owner_lease("cm_owned", OWNER).await.unwrap());
    assert!(!b.renew_owner_lease("cm_owned", OWNER).await.unwrap());
    b.drop_owner_lease("cm_owned").await.unwrap(); // not B's: nothing happens
    assert!(a.renew_owner_lease("cm_owned", OWNER).await.unwrap());
    let own = a.claim("cm_owned", &scope, LEASE).await.unwrap();
    a.release(&own).await.unwrap();

    // B follows: A's rewrite and A's drop both reach B's subscription.
    let mut changes = b.changes("cm_owned").await.unwrap();
    let settled = run("cm_owned", 60_000, b"settled");
    a.put(settled.clone(), 64).await.unwrap();
    assert!(
        changed(&mut changes, Duration::from_secs(2)).await,
        "rewrite"
    );
    a.drop_owner_lease("cm_owned").await.unwrap();
    assert!(changed(&mut changes, Duration::from_secs(2)).await, "drop");
    let claim = b.claim("cm_owned", &scope, LEASE).await.unwrap();
    assert_eq!(claim.run, settled);

    // B finishes it: A, following, is told and reads the result without a lease.
    let mut a_changes = a.changes("cm_owned").await.unwrap();
    let result = run("cm_owned", 60_000, b"finished");
    b.put_finished(result.clone()).await.unwrap();
    assert!(changed(&mut a_changes, Duration::from_secs(2)).await);
    assert_eq!(
        a.claim("cm_owned", &scope, LEASE).await.unwrap().run,
        result
    );

    // An owner that dies stops renewing: its lease expires and the run can be claimed.
    let orphan = run("cm_orphan", 60_000, b"x");
    assert!(a
        .take_owner_lease("cm_orphan", Duration::from_millis(200))
        .await
        .unwrap());
    a.put(orphan.clone(), 64).await.unwrap();
    assert!(b.claim("cm_orphan", &scope, LEASE).await.is_err());
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(
        b.claim("cm_orphan", &scope, LEASE).await.unwrap().run,
        orphan
    );
    assert!(!a.renew_owner_lease("cm_orphan", OWNER).await.unwrap());
}
