//! Downstream tasks passed through to a Tasks client with code mode off (docs/mcp.md, "Code
//! mode off: a plain aggregating server", "Tasks passed through").
//!
//! When a 2026-07-28 client that declares `io.modelcontextprotocol/tasks` calls a downstream
//! tool and its server answers with a `CreateTaskResult`, the client gets that task under an id
//! `serve` makes ([`RelayedTasks::relay`]): a random UUID (122 random bits, unguessable) mapped to
//! the server and the server's own task id, bound to the caller's code-mode scope (its session
//! key: the MCP session, the stateless scope, or the principal's with `--auth`). `tasks/get`,
//! `tasks/update` and `tasks/cancel` naming it are sent to that server with the server's id
//! ([`RelayedTasks::get`], [`RelayedTasks::update`], [`RelayedTasks::cancel`]), declaring the
//! client's own capabilities, and the answer comes back with the id replaced. An id that is
//! unknown, expired or another scope's is `-32602` `Unknown task: <id>` (the server's id never
//! reaches the client, and a client cannot name another server's task).
//!
//! A mapping lives for the task's `ttlMs` (at least [`MIN_LIFETIME`], at most
//! [`MAX_LIFETIME`]; [`MAX_LIFETIME`] when the server says `null`, unlimited), counted again
//! from every request that names it; at most [`MAX_RELAYED`] are kept, the one closest to
//! expiry leaving first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, GetTaskResult, RequestMetaObject};
use rmcp::ErrorData;
use serde_json::{json, Value};

use crate::error::ClientError;
use crate::hub::McpHub;
use crate::tasks::unknown_task;

/// The shortest a mapping is kept (a server's `ttlMs` below it is raised to it).
pub const MIN_LIFETIME: Duration = Duration::from_secs(60);

/// The longest a mapping is kept without a request naming it (a server's `ttlMs` above it, or
/// `null`, is cut to it).
pub const MAX_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// The most mappings one process keeps.
pub const MAX_RELAYED: usize = 10_000;

/// One downstream task as a client knows it.
#[derive(Debug, Clone)]
struct Relayed {
    /// The session key of the caller that created it.
    owner: String,
    /// The configured name of the server that made it.
    server: String,
    /// The server's own task id.
    downstream: String,
    /// How long it is kept after each request naming it.
    lifetime: Duration,
    expires: Instant,
}

/// The downstream tasks passed through by one `serve` process, by the id the clients know.
#[derive(Clone, Default)]
pub struct RelayedTasks {
    tasks: Arc<Mutex<HashMap<String, Relayed>>>,
}

impl std::fmt::Debug for RelayedTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayedTasks").finish_non_exhaustive()
    }
}

/// The request `_meta` declaring `capabilities` (the upstream client's), if it declared any.
fn meta_of(capabilities: Option<ClientCapabilities>) -> Option<RequestMetaObject> {
    let capabilities = capabilities?;
    let mut meta = RequestMetaObject::new();
    meta.set_client_capabilities(capabilities);
    Some(meta)
}

impl RelayedTasks {
    /// No tasks.
    pub fn new() -> Self {
        RelayedTasks::default()
    }

    /// The `CreateTaskResult` JSON `created` of `server` (configured name), made the task of
    /// `owner` under a new id: `created` with its `taskId` replaced. `None` when `created` has
    /// no string `taskId` (the caller answers it as a malformed result).
    pub fn relay(&self, owner: &str, server: &str, mut created: Value) -> Option<Value> {
        let downstream = created.get("taskId")?.as_str()?.to_string();
        let lifetime = match created.get("ttlMs") {
            Some(Value::Number(ms)) => ms
                .as_u64()
                .map(Duration::from_millis)
                .unwrap_or(MAX_LIFETIME)
                .clamp(MIN_LIFETIME, MAX_LIFETIME),
            _ => MAX_LIFETIME,
        };
        let id = uuid::Uuid::new_v4().to_string();
        let now = Instant::now();
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        tasks.retain(|_, t| t.expires > now);
        if tasks.len() >= MAX_RELAYED {
            let soonest = tasks
                .iter()
                .min_by_key(|(_, t)| t.expires)
                .map(|(id, _)| id.clone());
            if let Some(soonest) = soonest {
                tasks.remove(&soonest);
            }
        }
        tasks.insert(
            id.clone(),
            Relayed {
                owner: owner.to_string(),
                server: server.to_string(),
                downstream,
                lifetime,
                expires: now + lifetime,
            },
        );
        created["taskId"] = Value::String(id);
        Some(created)
    }

    /// The mapping of `id` when `owner` may use it, its lifetime counted again.
    fn find(&self, id: &str, owner: &str) -> Result<Relayed, ErrorData> {
        let now = Instant::now();
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        match tasks.get_mut(id) {
            Some(task) if task.expires > now && task.owner == owner => {
                task.expires = now + task.lifetime;
                Ok(task.clone())
            }
            Some(task) if task.expires <= now => {
                tasks.remove(id);
                Err(unknown_task(id))
            }
            _ => Err(unknown_task(id)),
        }
    }

    /// Sends `method` about task `id` (the client's id) to its server with `extra` params; the
    /// server's raw answer. Errors: [`unknown_task`] for an id `owner` may not use or the
    /// server no longer knows (`-32602`), the server's own JSON-RPC error otherwise, or
    /// `-32603` when the server cannot be reached.
    async fn send(
        &self,
        hub: &McpHub,
        method: &str,
        id: &str,
        owner: &str,
        capabilities: Option<ClientCapabilities>,
        extra: Value,
    ) -> Result<Value, ErrorData> {
        let task = self.find(id, owner)?;
        let Some(client) = hub.client(&task.server) else {
            return Err(unknown_task(id));
        };
        let mut params = json!({"taskId": task.downstream});
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        match client
            .task_request(method, params, meta_of(capabilities))
            .await
        {
            Ok(answer) => Ok(answer),
            Err(ClientError::Refused { source, .. })
                if source.code == rmcp::model::ErrorCode::INVALID_PARAMS =>
            {
                // The server's "unknown task" names its own id: the client hears of its own.
                Err(unknown_task(id))
            }
            Err(ClientError::Refused { source, .. }) => Err(*source),
            Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }

    /// `tasks/get` of the client's task `id`: the server's answer with `taskId` = `id`.
    /// Errors: as [`RelayedTasks::update`], and `-32603` when the server's answer is not a task.
    pub async fn get(
        &self,
        hub: &McpHub,
        id: &str,
        owner: &str,
        capabilities: Option<ClientCapabilities>,
    ) -> Result<GetTaskResult, ErrorData> {
        let mut answer = self
            .send(hub, "tasks/get", id, owner, capabilities, json!({}))
            .await?;
        if let Some(fields) = answer.as_object_mut() {
            fields.insert("taskId".into(), Value::String(id.to_string()));
        }
        serde_json::from_value::<GetTaskResult>(answer).map_err(|e| {
            ErrorData::internal_error(
                format!("the MCP server answered tasks/get with something that is not a task: {e}"),
                None,
            )
        })
    }

    /// `tasks/update` of the client's task `id`: `inputResponses` passed as they are. Errors:
    /// [`unknown_task`] (`-32602`) for an id `owner` may not use or the server no longer knows,
    /// the server's own JSON-RPC error otherwise, `-32603` when it cannot be reached.
    pub async fn update(
        &self,
        hub: &McpHub,
        id: &str,
        owner: &str,
        capabilities: Option<ClientCapabilities>,
        responses: &rmcp::model::InputResponses,
    ) -> Result<(), ErrorData> {
        let extra = json!({ "inputResponses": responses });
        self.send(hub, "tasks/update", id, owner, capabilities, extra)
            .await
            .map(drop)
    }

    /// `tasks/cancel` of the client's task `id` (the mapping stays, so the client can observe
    /// the `cancelled` status). Errors: as [`RelayedTasks::update`].
    pub async fn cancel(
        &self,
        hub: &McpHub,
        id: &str,
        owner: &str,
        capabilities: Option<ClientCapabilities>,
    ) -> Result<(), ErrorData> {
        self.send(hub, "tasks/cancel", id, owner, capabilities, json!({}))
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(ttl: Value) -> Value {
        json!({"resultType": "task", "taskId": "down-1", "status": "working",
               "createdAt": "2026-12-02T20:00:00Z", "lastUpdatedAt": "2026-12-02T20:00:00Z",
               "ttlMs": ttl, "pollIntervalMs": 1000})
    }

    #[test]
    fn a_relayed_task_gets_a_new_id_bound_to_its_owner() {
        let relayed = RelayedTasks::new();
        let answer = relayed
            .relay("mcp:a", "fixture", created(json!(300000)))
            .unwrap();
        let id = answer["taskId"].as_str().unwrap().to_string();
        assert_ne!(id, "down-1");
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 4);
        let mut expected = created(json!(300000));
        expected["taskId"] = json!(id);
        assert_eq!(answer, expected);
        let task = relayed.find(&id, "mcp:a").unwrap();
        assert_eq!(
            (task.server.as_str(), task.downstream.as_str()),
            ("fixture", "down-1")
        );
        assert_eq!(task.lifetime, Duration::from_secs(300));
        let foreign = relayed.find(&id, "mcp:b").unwrap_err();
        assert_eq!(foreign.message, format!("Unknown task: {id}"));
        assert_eq!(foreign.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn lifetimes_are_clamped_and_a_created_result_without_an_id_is_refused() {
        let relayed = RelayedTasks::new();
        let short = relayed.relay("o", "s", created(json!(5))).unwrap();
        let unlimited = relayed.relay("o", "s", created(Value::Null)).unwrap();
        let lifetime = |answer: &Value| {
            relayed
                .find(answer["taskId"].as_str().unwrap(), "o")
                .unwrap()
                .lifetime
        };
        assert_eq!(lifetime(&short), MIN_LIFETIME);
        assert_eq!(lifetime(&unlimited), MAX_LIFETIME);
        assert_eq!(relayed.relay("o", "s", json!({"resultType": "task"})), None);
        assert_eq!(relayed.relay("o", "s", json!({"taskId": 7})), None);
    }
}
