//! Every durable backend against the same rules and texts as the in-process store
//! (docs/snapshot-store.md, "Backends"): `memory`, `dir:` in a temp directory and `redis://`
//! against a real `redis-server`.

#[path = "support/redis_server.rs"]
mod redis_server;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::Arc;
use std::time::Duration;

use codemode_snapshot::backend::dir::DirRunStore;
use codemode_snapshot::backend::memory::MemoryRunStore;
use codemode_snapshot::backend::redis::RedisRunStore;
use codemode_snapshot::record::now_ms;
use codemode_snapshot::{open, RecordMeta, RunScope, RunStore, RunStoreError, StateUrl, StoredRun};
use redis_server::RedisServer;

const LEASE: Duration = Duration::from_secs(30);

fn session(id: &str) -> RunScope {
    RunScope {
        session_id: Some(id.into()),
        ..RunScope::default()
    }
}

fn run(id: &str, owner: &RunScope, ttl_ms: i64, body: &[u8]) -> StoredRun {
    StoredRun {
        meta: RecordMeta {
            run_id: id.into(),
            owner: owner.clone(),
            expires_at_ms: now_ms().saturating_add_signed(ttl_ms),
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

/// The rules every backend shares, with the in-process store's exact texts.
async fn conformance(store: &dyn RunStore) {
    let owner = session("s1");
    assert_eq!(store.purge_all().await.unwrap(), 0);

    // Park, claim, and the lease.
    let first = run("cm_a", &owner, 60_000, b"sealed body \x00\xff");
    store.put(first.clone(), 64).await.unwrap();
    let claim = store.claim("cm_a", &owner, LEASE).await.unwrap();
    assert_eq!(claim.run, first);
    assert_eq!(
        refused(store.claim("cm_a", &owner, LEASE).await),
        "code mode run is already being resumed."
    );
    store.release(&claim).await.unwrap();
    let claim = store.claim("cm_a", &owner, LEASE).await.unwrap();
    // Parking again replaces the record and ends the lease.
    let second = run("cm_a", &owner, 60_000, b"second");
    store.put(second.clone(), 1).await.unwrap();
    store.release(&claim).await.unwrap(); // a stale release is harmless
    let again = store.claim("cm_a", &owner, LEASE).await.unwrap();
    assert_eq!(again.run, second);
    store.release(&again).await.unwrap();

    // Scope checks in the contract's order, then unknown ids.
    let agent = RunScope {
        run_id: Some("agent-1".into()),
        ..session("s1")
    };
    store
        .put(run("cm_agent", &agent, 60_000, b"x"), 64)
        .await
        .unwrap();
    assert_eq!(
        refused(store.claim("cm_agent", &session("s2"), LEASE).await),
        "code mode run belongs to a different agent run."
    );
    assert_eq!(
        refused(store.claim("cm_a", &session("s2"), LEASE).await),
        "code mode run belongs to a different session."
    );
    assert_eq!(
        refused(store.claim("cm_a", &RunScope::default(), LEASE).await),
        "code mode run belongs to a different session."
    );
    for unknown in ["cm_nope", "../cm_a", "", "cm_a/../../etc/passwd"] {
        assert_eq!(
            refused(store.claim(unknown, &owner, LEASE).await),
            "code mode run is unavailable or expired.",
            "{unknown:?}"
        );
    }

    // The cap counts the owner's unexpired runs; replacing a run never hits it.
    store
        .put(run("cm_b", &owner, 60_000, b"b"), 2)
        .await
        .unwrap();
    assert_eq!(
        refused(store.put(run("cm_c", &owner, 60_000, b"c"), 2).await),
        "too many suspended code mode runs."
    );
    store
        .put(run("cm_b", &owner, 60_000, b"b2"), 2)
        .await
        .unwrap();
    store
        .put(run("cm_c", &session("s9"), 60_000, b"c"), 2)
        .await
        .unwrap();

    // Expiry: an expired run is unavailable and removed when found; listing skips it.
    store
        .put(run("cm_old", &owner, -1, b"old"), 64)
        .await
        .unwrap();
    assert_eq!(
        refused(store.claim("cm_old", &owner, LEASE).await),
        "code mode run is unavailable or expired."
    );
    assert!(!store.remove("cm_old").await.unwrap(), "removed when found");
    store
        .put(run("cm_old2", &owner, 150, b"old"), 64)
        .await
        .unwrap();
    let ids = |metas: Vec<RecordMeta>| metas.into_iter().map(|m| m.run_id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list().await.unwrap()),
        ["cm_a", "cm_agent", "cm_b", "cm_c", "cm_old2"]
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        ids(store.list().await.unwrap()),
        ["cm_a", "cm_agent", "cm_b", "cm_c"]
    );
    assert_eq!(store.purge_expired().await.unwrap(), 1, "cm_old2");
    assert_eq!(store.purge_expired().await.unwrap(), 0);
    // An expired run no longer counts against the cap.
    store
        .put(run("cm_old3", &owner, -1, b"old"), 64)
        .await
        .unwrap();
    store
        .put(run("cm_d", &owner, 60_000, b"d"), 3)
        .await
        .unwrap();

    assert!(store.remove("cm_d").await.unwrap());
    assert!(!store.remove("cm_d").await.unwrap());
    assert_eq!(store.purge_all().await.unwrap(), 4);
    assert!(store.list().await.unwrap().is_empty());
}

/// Task records (docs/snapshot-store.md, "Task records"): replaced by each write and announced
/// as a change of their key, never replaced by an unended one once ended, gone when expired.
async fn task_records(store: &dyn RunStore) {
    let later = now_ms() + 60_000;
    assert_eq!(store.get_task("task_cm_t").await.unwrap(), None);
    let mut changes = store.changes("task_cm_t").await.unwrap();
    assert!(store
        .put_task("task_cm_t", b"working".to_vec(), later, false)
        .await
        .unwrap());
    tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .expect("a write is a change of the task key");
    assert!(store
        .put_task("task_cm_t", b"input".to_vec(), later, false)
        .await
        .unwrap());
    assert_eq!(
        store.get_task("task_cm_t").await.unwrap().as_deref(),
        Some(&b"input"[..])
    );
    assert!(store
        .put_task("task_cm_t", b"cancelled".to_vec(), later, true)
        .await
        .unwrap());
    assert!(!store
        .put_task("task_cm_t", b"working again".to_vec(), later, false)
        .await
        .unwrap());
    assert_eq!(
        store.get_task("task_cm_t").await.unwrap().as_deref(),
        Some(&b"cancelled"[..])
    );
    assert!(store
        .put_task("task_cm_t", b"completed".to_vec(), later, true)
        .await
        .unwrap());
    assert_eq!(
        store.get_task("task_cm_t").await.unwrap().as_deref(),
        Some(&b"completed"[..])
    );
    store
        .put_task("task_cm_short", b"x".to_vec(), now_ms() + 100, false)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(store.get_task("task_cm_short").await.unwrap(), None);
    assert_eq!(
        refused(
            store
                .put_task("no/such key", b"x".to_vec(), later, false)
                .await
        ),
        "code mode run is unavailable or expired."
    );
    assert_eq!(store.get_task("no/such key").await.unwrap(), None);
}

#[tokio::test]
async fn memory_backend_follows_the_rules() {
    let store = MemoryRunStore::new();
    assert!(!store.is_durable());
    conformance(&store).await;
    task_records(&store).await;
}

#[tokio::test]
async fn dir_backend_follows_the_rules_and_survives_reopening() {
    let parent = tempfile::tempdir().unwrap();
    let path = parent.path().join("runs");
    let store = open(&StateUrl::Dir(path.clone())).await.unwrap();
    assert!(store.is_durable());
    assert_eq!(store.describe(), format!("dir:{}", path.display()));
    let mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700, "created private");
    conformance(store.as_ref()).await;
    task_records(store.as_ref()).await;

    let owner = session("s1");
    let parked = run("cm_kept", &owner, 60_000, b"survives");
    store.put(parked.clone(), 64).await.unwrap();
    let file = path.join("cm_kept.cmrun");
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
    drop(store);
    let reopened = DirRunStore::open(&path).unwrap();
    assert_eq!(
        reopened.claim("cm_kept", &owner, LEASE).await.unwrap().run,
        parked
    );
}

#[tokio::test]
async fn dir_backend_refuses_unsafe_directories_and_files() {
    let parent = tempfile::tempdir().unwrap();
    let open_err = |p: &std::path::Path| DirRunStore::open(p).unwrap_err().to_string();

    let shared = parent.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o770)).unwrap();
    assert_eq!(
        open_err(&shared),
        format!(
            "code mode run store dir:{} failed: has mode 770: group or others can write it; it must be a directory only this user can write (chmod 700)",
            shared.display()
        )
    );
    let real = parent.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = parent.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(
        open_err(&link),
        format!(
            "code mode run store dir:{} failed: is a symlink; give the real directory",
            link.display()
        )
    );
    let file = parent.path().join("file");
    std::fs::write(&file, b"").unwrap();
    assert!(open_err(&file).ends_with("failed: is not a directory"));
    let orphan = parent.path().join("missing/runs");
    assert!(open_err(&orphan).contains("cannot create the directory"));

    // Records that are symlinks, FIFOs or open to others are refused, never read.
    let store = DirRunStore::open(&real).unwrap();
    let owner = session("s1");
    store
        .put(run("cm_ok", &owner, 60_000, b"ok"), 64)
        .await
        .unwrap();
    std::os::unix::fs::symlink(real.join("cm_ok.cmrun"), real.join("cm_link.cmrun")).unwrap();
    let fifo = codemode_test_support::files::fifo(&real, "cm_fifo.cmrun");
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::copy(real.join("cm_ok.cmrun"), real.join("cm_open.cmrun")).unwrap();
    std::fs::set_permissions(
        real.join("cm_open.cmrun"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::write(real.join("cm_junk.cmrun"), b"not a record").unwrap();
    std::fs::set_permissions(
        real.join("cm_junk.cmrun"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let claim_err = |id: &'static str| {
        let store = &store;
        let owner = owner.clone();
        async move {
            store
                .claim(id, &owner, LEASE)
                .await
                .unwrap_err()
                .to_string()
        }
    };
    assert_eq!(
        claim_err("cm_link").await,
        "stored code mode run cm_link is unreadable: the record is a symlink; refused"
    );
    assert_eq!(
        claim_err("cm_fifo").await,
        "stored code mode run cm_fifo is unreadable: the record is not a regular file; refused"
    );
    assert_eq!(
        claim_err("cm_open").await,
        "stored code mode run cm_open is unreadable: the record is not a file of this user with mode 0600; refused"
    );
    assert_eq!(
        claim_err("cm_junk").await,
        "stored code mode run cm_junk is unreadable: bad header"
    );
    // A record copied under another run's name is refused too.
    std::fs::copy(real.join("cm_ok.cmrun"), real.join("cm_moved.cmrun")).unwrap();
    assert_eq!(
        claim_err("cm_moved").await,
        "stored code mode run cm_moved is unreadable: the file holds run \"cm_ok\"; refused"
    );
    // Listing skips what it cannot read.
    let listed: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.run_id)
        .collect();
    assert_eq!(listed, ["cm_ok"]);
}

#[tokio::test]
async fn redis_backend_follows_the_rules_across_connections() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let url: StateUrl = format!("redis://127.0.0.1:{}/2", server.port)
        .parse()
        .unwrap();
    let store = open(&url).await.unwrap();
    assert!(store.is_durable());
    assert_eq!(store.describe(), server.url(2));
    conformance(store.as_ref()).await;
    task_records(store.as_ref()).await;

    // A second connection stands for another process: it sees the record and the lease.
    let other: Arc<dyn RunStore> = Arc::new(RedisRunStore::connect(&server.url(2)).await.unwrap());
    let owner = session("s1");
    store
        .put(run("cm_shared", &owner, 60_000, b"x"), 64)
        .await
        .unwrap();
    let claim = store.claim("cm_shared", &owner, LEASE).await.unwrap();
    assert_eq!(
        refused(other.claim("cm_shared", &owner, LEASE).await),
        "code mode run is already being resumed."
    );
    store.release(&claim).await.unwrap();
    // A lease that expires frees the run (its holder died).
    let short = other
        .claim("cm_shared", &owner, Duration::from_millis(100))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let taken = store.claim("cm_shared", &owner, LEASE).await.unwrap();
    other.release(&short).await.unwrap(); // the dead holder's release leaves the new lease
    assert_eq!(
        refused(other.claim("cm_shared", &owner, LEASE).await),
        "code mode run is already being resumed."
    );
    store.release(&taken).await.unwrap();
    // Another database is another store.
    let db3 = RedisRunStore::connect(&server.url(3)).await.unwrap();
    assert_eq!(
        refused(db3.claim("cm_shared", &owner, LEASE).await),
        "code mode run is unavailable or expired."
    );
}

#[tokio::test]
async fn redis_backend_that_cannot_connect_says_where() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}/0");
    let err = RedisRunStore::connect(&url).await.unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("code mode run store {url} failed: ")),
        "{err}"
    );
}
