//! `--state redis://HOST:PORT[/DB]`: records in Redis, shared by any number of processes
//! (docs/snapshot-store.md, "Backends"). Uses the `redis` crate's tokio connection manager
//! (reconnects on its own).
//!
//! Keys (prefix `codemode:`):
//! - `codemode:run:<runId>`: a hash with `meta` (the header's JSON), `body` (the sealed body)
//!   and `owner` (the name of the owner's index key), expiring with the run (`PEXPIREAT`);
//!   and `finished` (`1` for a finished run's result);
//! - `codemode:lease:<runId>`: the claiming `wait`'s token (`SET NX PX`);
//! - `codemode:inflight:<runId>`: the owner lease, the instance id of the process running the
//!   run's tool calls (`SET PX`, renewed by it; docs/snapshot-store.md, "Owner leases and
//!   changes");
//! - `codemode:runs`: a sorted set of parked run ids scored by expiry (listing and purging);
//! - `codemode:finished`: the same for finished records;
//! - `codemode:owner:<SHA-256 of the owner's JSON>`: parked runs per owner, for the cap;
//! - `codemode:answer:<approvalId>`: a relayed approval answer (sealed by the caller), expiring
//!   with it (`PXAT`), taken once (docs/snapshot-store.md, "Approval answers").
//!
//! - `codemode:task:<taskKey>`: an MCP task's record (sealed by the caller): a hash with
//!   `record` and `ended` (`1` once the task reached a terminal status, after which only an
//!   ended record replaces it), expiring with it (`PEXPIREAT`; docs/snapshot-store.md, "Task
//!   records").
//!
//! Every change of a run (written, removed, claim released, owner lease dropped) is published
//! on the channel `codemode:changes` with the run id as the message (a relayed approval answer
//! with its approval id, a task record with its task key); [`RedisRunStore`] reads it
//! on one pub/sub connection per store and fans it out to its subscribers.
//!
//! Parking, claiming, removing and the owner lease are Lua scripts, so each check and its writes
//! are one atomic step.

use std::time::Duration;

use codemode_bridge::RunScope;
use std::sync::Arc;

use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};

use super::changes::{Changes, Notifier};
use super::{admit, lease_token, owner_key, Claim, RunStore, StoreFuture};
use crate::error::{RunStoreError, StoreError};
use crate::record::{now_ms, valid_run_id, RecordMeta, StoredRun};

const RUNS: &str = "codemode:runs";
const FINISHED: &str = "codemode:finished";
/// The pub/sub channel of changes (the message is the run id).
const CHANGES: &str = "codemode:changes";

/// KEYS: run, runs index, owner index, finished index. ARGV: run id, meta, body, expiry ms,
/// now ms, cap, finished (`1` or `0`). Returns 1 when stored, 0 when the owner's cap is reached
/// (a finished record is never counted).
const PUT: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[5])
local finished = ARGV[7] == '1'
if not finished and redis.call('EXISTS', KEYS[1]) == 0
    and redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'meta', ARGV[2], 'body', ARGV[3], 'owner', KEYS[3], 'finished', ARGV[7])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
redis.call('DEL', 'codemode:lease:' .. ARGV[1])
if finished then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
else
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
end
redis.call('PUBLISH', 'codemode:changes', ARGV[1])
return 1
";

/// KEYS: run, lease, runs index, owner lease, finished index. ARGV: run id. Returns 1 when a
/// parked record (or the index entry of one Redis already expired) was removed, 2 for a
/// finished one, 0 when there was none.
const REMOVE: &str = r"
local owner = redis.call('HGET', KEYS[1], 'owner')
local found = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[4])
local indexed = redis.call('ZREM', KEYS[3], ARGV[1])
local done = redis.call('ZREM', KEYS[5], ARGV[1])
if owner then redis.call('ZREM', owner, ARGV[1]) end
redis.call('PUBLISH', 'codemode:changes', ARGV[1])
if indexed > 0 or (found > 0 and done == 0) then return 1 end
if done > 0 then return 2 end
return 0
";

/// KEYS: a lease (a claim's, or the owner lease). ARGV: its holder (the claim's token, or this
/// instance), run id. Deletes the lease only if it is still that holder's (a change of the run).
const DROP_IF_HELD: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', 'codemode:changes', ARGV[2])
  return 1
end
return 0
";

/// KEYS: lease, owner lease. ARGV: token, lease ms, this instance. Returns 2 when another
/// instance holds the owner lease, 1 when the lease was taken, 0 when another claim holds it.
const CLAIM: &str = r"
local owner = redis.call('GET', KEYS[2])
if owner and owner ~= ARGV[3] then return 2 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
";

/// KEYS: owner lease. ARGV: this instance, ttl ms, `1` to renew only. Returns 1 when this
/// instance holds the lease afterwards.
const HOLD_OWNER: &str = r"
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
if not owner and ARGV[3] == '1' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// KEYS: answer. ARGV: sealed answer, expiry ms, approval id. Stores the answer and publishes
/// the approval id as a change, so the process holding the approval hears of it at once.
const PUT_ANSWER: &str = r"
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
redis.call('PUBLISH', 'codemode:changes', ARGV[3])
return 1
";

/// KEYS: answer. Returns the answer and deletes it (one taker), or nil.
const TAKE_ANSWER: &str = r"
local answer = redis.call('GET', KEYS[1])
if answer then redis.call('DEL', KEYS[1]) end
return answer
";

/// KEYS: task record. ARGV: sealed record, expiry ms, `1` when ended, task key. Writes the
/// record unless the stored one ended and this one has not; publishes the task key. Returns 1
/// when written.
const PUT_TASK: &str = r"
if ARGV[3] ~= '1' and redis.call('HGET', KEYS[1], 'ended') == '1' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'ended', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
redis.call('PUBLISH', 'codemode:changes', ARGV[4])
return 1
";

fn task_key(task_key: &str) -> String {
    format!("codemode:task:{task_key}")
}

fn answer_key(approval_id: &str) -> String {
    format!("codemode:answer:{approval_id}")
}

/// Records in one Redis database (see the module docs).
#[derive(Clone)]
pub struct RedisRunStore {
    url: String,
    client: redis::Client,
    connection: ConnectionManager,
    /// This process's id in owner leases (random per store, so per process).
    instance: String,
    /// The fan-out of the `codemode:changes` subscription, connected on first use and again
    /// after its connection is lost.
    feed: Arc<tokio::sync::Mutex<Option<Notifier>>>,
}

impl std::fmt::Debug for RedisRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRunStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

fn run_key(run_id: &str) -> String {
    format!("codemode:run:{run_id}")
}

fn lease_key(run_id: &str) -> String {
    format!("codemode:lease:{run_id}")
}

fn inflight_key(run_id: &str) -> String {
    format!("codemode:inflight:{run_id}")
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

fn owner_index(owner: &RunScope) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(owner_key(owner).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("codemode:owner:{hex}")
}

impl RedisRunStore {
    /// Connects to `url` (`redis://HOST:PORT/DB`, as [`super::StateUrl`] normalises it) with a
    /// connection manager: 5 s to connect, 10 s per command, reconnecting on failure.
    ///
    /// # Errors
    /// [`RunStoreError::Backend`] when the URL is refused or Redis does not answer `PING`.
    pub async fn connect(url: &str) -> Result<Self, RunStoreError> {
        let fail = |e: redis::RedisError| RunStoreError::Backend {
            backend: url.to_string(),
            message: e.to_string(),
        };
        let client = redis::Client::open(url).map_err(fail)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(10)))
            .set_number_of_retries(2);
        let mut connection = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(fail)?;
        let _: String = redis::cmd("PING")
            .query_async(&mut connection)
            .await
            .map_err(fail)?;
        Ok(RedisRunStore {
            url: url.to_string(),
            client,
            connection,
            instance: lease_token(url)?,
            feed: Arc::new(tokio::sync::Mutex::new(None)),
        })
    }

    fn fail(&self, e: &redis::RedisError) -> RunStoreError {
        RunStoreError::Backend {
            backend: self.url.clone(),
            message: e.to_string(),
        }
    }

    /// Stores `run` (a finished result when `finished`, never counted against `cap`).
    async fn put_now(
        &self,
        run: StoredRun,
        cap: usize,
        finished: bool,
    ) -> Result<(), RunStoreError> {
        if !valid_run_id(&run.meta.run_id) {
            return Err(StoreError::Unavailable.into());
        }
        let meta = serde_json::to_vec(&run.meta).unwrap_or_default();
        let mut connection = self.connection.clone();
        let stored: i64 = Script::new(PUT)
            .key(run_key(&run.meta.run_id))
            .key(RUNS)
            .key(owner_index(&run.meta.owner))
            .key(FINISHED)
            .arg(&run.meta.run_id)
            .arg(meta)
            .arg(run.body)
            .arg(run.meta.expires_at_ms)
            .arg(now_ms())
            .arg(cap)
            .arg(if finished { "1" } else { "0" })
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        if stored == 0 {
            return Err(StoreError::TooManySuspended.into());
        }
        Ok(())
    }

    /// `run_id`'s record and whether it is a finished run's.
    async fn get(&self, run_id: &str) -> Result<Option<(StoredRun, bool)>, RunStoreError> {
        let mut connection = self.connection.clone();
        let (meta, body, finished): (Option<Vec<u8>>, Option<Vec<u8>>, Option<String>) =
            redis::cmd("HMGET")
                .arg(run_key(run_id))
                .arg("meta")
                .arg("body")
                .arg("finished")
                .query_async(&mut connection)
                .await
                .map_err(|e| self.fail(&e))?;
        let (Some(meta), Some(body)) = (meta, body) else {
            return Ok(None);
        };
        let meta: RecordMeta =
            serde_json::from_slice(&meta).map_err(|e| RunStoreError::Corrupt {
                run_id: run_id.to_string(),
                reason: format!("header: {e}"),
            })?;
        if meta.run_id != run_id {
            return Err(RunStoreError::Corrupt {
                run_id: run_id.to_string(),
                reason: format!("the record holds run {:?}; refused", meta.run_id),
            });
        }
        let finished = finished.as_deref() == Some("1");
        Ok(Some((StoredRun { meta, body }, finished)))
    }

    /// Removes `run_id`'s record: 1 when it was a parked run, 2 a finished one, 0 none.
    async fn delete(&self, run_id: &str) -> Result<i64, RunStoreError> {
        let mut connection = self.connection.clone();
        Script::new(REMOVE)
            .key(run_key(run_id))
            .key(lease_key(run_id))
            .key(RUNS)
            .key(inflight_key(run_id))
            .key(FINISHED)
            .arg(run_id)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))
    }

    async fn claim_now(
        &self,
        run_id: &str,
        caller: &RunScope,
        lease: Duration,
    ) -> Result<Claim, RunStoreError> {
        if !valid_run_id(run_id) {
            return Err(StoreError::Unavailable.into());
        }
        let Some((run, finished)) = self.get(run_id).await? else {
            // Redis may have expired the record itself: drop its index entries too.
            self.delete(run_id).await?;
            return Err(StoreError::Unavailable.into());
        };
        if let Err(refused) = admit(&run.meta, caller, now_ms()) {
            if refused == StoreError::Unavailable {
                self.delete(run_id).await?;
            }
            return Err(refused.into());
        }
        if finished {
            return Ok(Claim { run, lease: None });
        }
        let token = lease_token(&self.url)?;
        let mut connection = self.connection.clone();
        let taken: i64 = Script::new(CLAIM)
            .key(lease_key(run_id))
            .key(inflight_key(run_id))
            .arg(&token)
            .arg(millis(lease))
            .arg(&self.instance)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        match taken {
            1 => {}
            2 => return Err(RunStoreError::OwnedElsewhere(Box::new(run))),
            _ => return Err(StoreError::AlreadyResuming.into()),
        }
        let claim = Claim {
            run,
            lease: Some(token),
        };
        // Parked again or removed between the read and the lease: answer from the record now.
        match self.get(run_id).await? {
            Some((current, false)) if current == claim.run => Ok(claim),
            _ => {
                self.release_now(&claim).await?;
                Err(StoreError::AlreadyResuming.into())
            }
        }
    }

    async fn release_now(&self, claim: &Claim) -> Result<(), RunStoreError> {
        let Some(token) = &claim.lease else {
            return Ok(());
        };
        let mut connection = self.connection.clone();
        let _: i64 = Script::new(DROP_IF_HELD)
            .key(lease_key(&claim.run.meta.run_id))
            .arg(token)
            .arg(&claim.run.meta.run_id)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        Ok(())
    }

    /// Takes (`renew_only` false) or renews this instance's owner lease on `run_id`.
    async fn hold_owner(
        &self,
        run_id: &str,
        ttl: Duration,
        renew_only: bool,
    ) -> Result<bool, RunStoreError> {
        let mut connection = self.connection.clone();
        let held: i64 = Script::new(HOLD_OWNER)
            .key(inflight_key(run_id))
            .arg(&self.instance)
            .arg(millis(ttl))
            .arg(if renew_only { "1" } else { "0" })
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        Ok(held == 1)
    }

    async fn drop_owner(&self, run_id: &str) -> Result<(), RunStoreError> {
        let mut connection = self.connection.clone();
        let _: i64 = Script::new(DROP_IF_HELD)
            .key(inflight_key(run_id))
            .arg(&self.instance)
            .arg(run_id)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        Ok(())
    }

    /// Subscribes to `run_id`'s changes, connecting the `codemode:changes` subscription first if
    /// it is not up (it is confirmed by Redis before this returns, so no later change is
    /// missed). A reader task fans messages out; when its connection ends it clears the slot so
    /// the next subscriber reconnects.
    async fn subscribe(&self, run_id: &str) -> Result<Changes, RunStoreError> {
        let mut slot = self.feed.lock().await;
        if let Some(notifier) = slot.as_ref() {
            return Ok(notifier.subscribe(run_id));
        }
        let mut pubsub = self
            .client
            .get_async_pubsub()
            .await
            .map_err(|e| self.fail(&e))?;
        pubsub.subscribe(CHANGES).await.map_err(|e| self.fail(&e))?;
        let notifier = Notifier::default();
        let changes = notifier.subscribe(run_id);
        let mut messages = pubsub.into_on_message();
        let feed = Arc::downgrade(&self.feed);
        let fan_out = notifier.clone();
        tokio::spawn(async move {
            while let Some(message) = messages.next().await {
                if feed.strong_count() == 0 {
                    return; // the store is gone
                }
                if let Ok(run_id) = message.get_payload::<String>() {
                    fan_out.send(&run_id);
                }
            }
            if let Some(feed) = feed.upgrade() {
                *feed.lock().await = None;
            }
        });
        *slot = Some(notifier);
        Ok(changes)
    }

    async fn ids(&self, index: &str, min: &str, max: &str) -> Result<Vec<String>, RunStoreError> {
        let mut connection = self.connection.clone();
        connection
            .zrangebyscore(index, min, max)
            .await
            .map_err(|e| self.fail(&e))
    }

    async fn list_now(&self) -> Result<Vec<RecordMeta>, RunStoreError> {
        let now = now_ms();
        let mut metas = Vec::new();
        for id in self.ids(RUNS, &format!("({now}"), "+inf").await? {
            if let Some((run, false)) = self.get(&id).await? {
                if !run.meta.expired(now) {
                    metas.push(run.meta);
                }
            }
        }
        metas.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        Ok(metas)
    }

    /// Removes the parked and finished records indexed with an expiry up to `max`; returns
    /// how many parked runs it removed.
    async fn purge(&self, max: &str) -> Result<usize, RunStoreError> {
        let mut purged = 0;
        for id in self.ids(RUNS, "-inf", max).await? {
            if self.delete(&id).await? == 1 {
                purged += 1;
            }
        }
        for id in self.ids(FINISHED, "-inf", max).await? {
            self.delete(&id).await?;
        }
        Ok(purged)
    }
}

impl RunStore for RedisRunStore {
    fn describe(&self) -> String {
        self.url.clone()
    }

    fn is_durable(&self) -> bool {
        true
    }

    fn put(&self, run: StoredRun, cap: usize) -> StoreFuture<'_, ()> {
        Box::pin(self.put_now(run, cap, false))
    }

    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        caller: &'a RunScope,
        lease: Duration,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(self.claim_now(run_id, caller, lease))
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, ()> {
        Box::pin(self.release_now(claim))
    }

    fn remove<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if !valid_run_id(run_id) {
                return Ok(false);
            }
            Ok(self.delete(run_id).await? > 0)
        })
    }

    fn list(&self) -> StoreFuture<'_, Vec<RecordMeta>> {
        Box::pin(self.list_now())
    }

    fn purge_expired(&self) -> StoreFuture<'_, usize> {
        Box::pin(async move { self.purge(&now_ms().to_string()).await })
    }

    fn purge_all(&self) -> StoreFuture<'_, usize> {
        Box::pin(self.purge("+inf"))
    }

    fn put_finished(&self, run: StoredRun) -> StoreFuture<'_, ()> {
        Box::pin(self.put_now(run, usize::MAX, true))
    }

    fn take_owner_lease<'a>(&'a self, run_id: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        Box::pin(self.hold_owner(run_id, ttl, false))
    }

    fn renew_owner_lease<'a>(&'a self, run_id: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        Box::pin(self.hold_owner(run_id, ttl, true))
    }

    fn drop_owner_lease<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.drop_owner(run_id))
    }

    fn changes<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Changes> {
        Box::pin(self.subscribe(run_id))
    }

    fn put_answer<'a>(
        &'a self,
        approval_id: &'a str,
        answer: Vec<u8>,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if !valid_run_id(approval_id) {
                return Err(StoreError::Unavailable.into());
            }
            let mut connection = self.connection.clone();
            let _: i64 = Script::new(PUT_ANSWER)
                .key(answer_key(approval_id))
                .arg(answer)
                .arg(expires_at_ms.max(1))
                .arg(approval_id)
                .invoke_async(&mut connection)
                .await
                .map_err(|e| self.fail(&e))?;
            Ok(())
        })
    }

    fn take_answer<'a>(&'a self, approval_id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            if !valid_run_id(approval_id) {
                return Ok(None);
            }
            let mut connection = self.connection.clone();
            Script::new(TAKE_ANSWER)
                .key(answer_key(approval_id))
                .invoke_async(&mut connection)
                .await
                .map_err(|e| self.fail(&e))
        })
    }

    fn put_task<'a>(
        &'a self,
        task: &'a str,
        record: Vec<u8>,
        expires_at_ms: u64,
        ended: bool,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if !valid_run_id(task) {
                return Err(StoreError::Unavailable.into());
            }
            let mut connection = self.connection.clone();
            let written: i64 = Script::new(PUT_TASK)
                .key(task_key(task))
                .arg(record)
                .arg(expires_at_ms.max(1))
                .arg(if ended { "1" } else { "0" })
                .arg(task)
                .invoke_async(&mut connection)
                .await
                .map_err(|e| self.fail(&e))?;
            Ok(written == 1)
        })
    }

    fn get_task<'a>(&'a self, task: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            if !valid_run_id(task) {
                return Ok(None);
            }
            let mut connection = self.connection.clone();
            connection
                .hget(task_key(task), "record")
                .await
                .map_err(|e| self.fail(&e))
        })
    }
}
