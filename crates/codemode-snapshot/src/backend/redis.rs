//! `--state redis://HOST:PORT[/DB]`: records in Redis, shared by any number of processes
//! (docs/snapshot-store.md, "Backends"). Uses the `redis` crate's tokio connection manager
//! (reconnects on its own).
//!
//! Keys (prefix `codemode:`):
//! - `codemode:run:<runId>`: a hash with `meta` (the header's JSON), `body` (the sealed body)
//!   and `owner` (the name of the owner's index key), expiring with the run (`PEXPIREAT`);
//! - `codemode:lease:<runId>`: the claiming `wait`'s token (`SET NX PX`);
//! - `codemode:runs`: a sorted set of run ids scored by expiry (listing and purging);
//! - `codemode:owner:<SHA-256 of the owner's JSON>`: the same per owner, for the cap.
//!
//! Parking and removing are Lua scripts, so the cap check and the writes are one atomic step.

use std::time::Duration;

use codemode_bridge::RunScope;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};

use super::{admit, lease_token, owner_key, Claim, RunStore, StoreFuture};
use crate::error::{RunStoreError, StoreError};
use crate::record::{now_ms, valid_run_id, RecordMeta, StoredRun};

const RUNS: &str = "codemode:runs";

/// KEYS: run, runs index, owner index. ARGV: run id, meta, body, expiry ms, now ms, cap.
/// Returns 1 when stored, 0 when the owner's cap is reached.
const PUT: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[5])
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'meta', ARGV[2], 'body', ARGV[3], 'owner', KEYS[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
redis.call('DEL', 'codemode:lease:' .. ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return 1
";

/// KEYS: run, lease, runs index. ARGV: run id. Returns 1 when a record (or the index entry of
/// one Redis already expired) was removed.
const REMOVE: &str = r"
local owner = redis.call('HGET', KEYS[1], 'owner')
local found = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
local indexed = redis.call('ZREM', KEYS[3], ARGV[1])
if owner then redis.call('ZREM', owner, ARGV[1]) end
if found + indexed > 0 then return 1 end
return 0
";

/// KEYS: lease. ARGV: token. Deletes the lease only if it is still this token's.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

/// Records in one Redis database (see the module docs).
#[derive(Clone)]
pub struct RedisRunStore {
    url: String,
    connection: ConnectionManager,
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
            connection,
        })
    }

    fn fail(&self, e: &redis::RedisError) -> RunStoreError {
        RunStoreError::Backend {
            backend: self.url.clone(),
            message: e.to_string(),
        }
    }

    async fn put_now(&self, run: StoredRun, cap: usize) -> Result<(), RunStoreError> {
        if !valid_run_id(&run.meta.run_id) {
            return Err(StoreError::Unavailable.into());
        }
        let meta = serde_json::to_vec(&run.meta).unwrap_or_default();
        let mut connection = self.connection.clone();
        let stored: i64 = Script::new(PUT)
            .key(run_key(&run.meta.run_id))
            .key(RUNS)
            .key(owner_index(&run.meta.owner))
            .arg(&run.meta.run_id)
            .arg(meta)
            .arg(run.body)
            .arg(run.meta.expires_at_ms)
            .arg(now_ms())
            .arg(cap)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        if stored == 0 {
            return Err(StoreError::TooManySuspended.into());
        }
        Ok(())
    }

    async fn get(&self, run_id: &str) -> Result<Option<StoredRun>, RunStoreError> {
        let mut connection = self.connection.clone();
        let (meta, body): (Option<Vec<u8>>, Option<Vec<u8>>) = redis::cmd("HMGET")
            .arg(run_key(run_id))
            .arg("meta")
            .arg("body")
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
        Ok(Some(StoredRun { meta, body }))
    }

    async fn delete(&self, run_id: &str) -> Result<bool, RunStoreError> {
        let mut connection = self.connection.clone();
        let found: i64 = Script::new(REMOVE)
            .key(run_key(run_id))
            .key(lease_key(run_id))
            .key(RUNS)
            .arg(run_id)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        Ok(found > 0)
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
        let Some(run) = self.get(run_id).await? else {
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
        let token = lease_token(&self.url)?;
        let mut connection = self.connection.clone();
        let taken: Option<String> = redis::cmd("SET")
            .arg(lease_key(run_id))
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1))
            .query_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        if taken.is_none() {
            return Err(StoreError::AlreadyResuming.into());
        }
        // Parked again or removed between the read and the lease: answer from the record now.
        match self.get(run_id).await? {
            Some(current) if current == run => Ok(Claim { run, lease: token }),
            _ => {
                let claim = Claim { run, lease: token };
                self.release_now(&claim).await?;
                Err(StoreError::AlreadyResuming.into())
            }
        }
    }

    async fn release_now(&self, claim: &Claim) -> Result<(), RunStoreError> {
        let mut connection = self.connection.clone();
        let _: i64 = Script::new(RELEASE)
            .key(lease_key(&claim.run.meta.run_id))
            .arg(&claim.lease)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.fail(&e))?;
        Ok(())
    }

    async fn ids(&self, min: &str, max: &str) -> Result<Vec<String>, RunStoreError> {
        let mut connection = self.connection.clone();
        connection
            .zrangebyscore(RUNS, min, max)
            .await
            .map_err(|e| self.fail(&e))
    }

    async fn list_now(&self) -> Result<Vec<RecordMeta>, RunStoreError> {
        let now = now_ms();
        let mut metas = Vec::new();
        for id in self.ids(&format!("({now}"), "+inf").await? {
            if let Some(run) = self.get(&id).await? {
                if !run.meta.expired(now) {
                    metas.push(run.meta);
                }
            }
        }
        metas.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        Ok(metas)
    }

    async fn purge(&self, max: &str) -> Result<usize, RunStoreError> {
        let mut purged = 0;
        for id in self.ids("-inf", max).await? {
            if self.delete(&id).await? {
                purged += 1;
            }
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
        Box::pin(self.put_now(run, cap))
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
            self.delete(run_id).await
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
}
