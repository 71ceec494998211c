//! `exec` and `wait` of one request: their environment and session, cancellation, and the
//! 2026-07-28 answers of a parked run (MRTR `input_required`, a task for Tasks clients).

use std::future::Future;
use std::sync::Arc;

use codemode_facade::RunEnv;
use codemode_runtime::AbortHandle;
use rmcp::model::{InputRequiredResult, JsonObject, ProtocolVersion};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::Value;

use super::env::disabled_result;
use super::progress::with_progress;
use super::results::call_result;
use super::session::{session_owner, Session};
use super::CodeModeServer;
use crate::http_auth::Principal;
use crate::tasks::{Caller, Driver, Parked};

/// True when the request of `context` is on protocol 2026-07-28 or later (its own `_meta`
/// version, else the session's) and its client declared elicitation: it gets approvals by MRTR
/// (`crate::mrtr`), since the revision has no server-to-client requests. A 2026-07-28 client
/// without elicitation is denied as a legacy one is (`the client cannot elicit`).
pub(super) fn uses_mrtr(context: &RequestContext<RoleServer>) -> bool {
    is_current_revision(context)
        && context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
}

/// True when the request of `context` is on protocol 2026-07-28 or later (its own `_meta`
/// version, else the session's): a client that cannot be sent requests, but answers
/// `input_required` itself.
pub(super) fn is_current_revision(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// True when the request of `context` declared the tasks extension
/// (`io.modelcontextprotocol/tasks`): its `exec`s that park become tasks (`crate::tasks`).
pub(super) fn uses_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
}

/// Runs `run` with an [`AbortHandle`] that fires when `cancelled` resolves (the request's
/// cancellation token: the client's `notifications/cancelled`, or the session ending), and still
/// awaits the run's result (then `failed` / `aborted`, docs/contract/lifecycle.md#s5-9).
async fn abortable<C, F, Fut>(cancelled: C, run: F) -> Value
where
    C: Future<Output = ()>,
    F: FnOnce(AbortHandle) -> Fut,
    Fut: Future<Output = Value>,
{
    let abort = AbortHandle::new();
    let fut = run(abort.clone());
    tokio::pin!(fut);
    tokio::select! {
        biased;
        value = &mut fut => value,
        () = cancelled => {
            tracing::debug!("codemode MCP call cancelled; aborting the run");
            abort.abort();
            fut.await
        }
    }
}

impl CodeModeServer {
    /// The `input_required` answer asking `approvals` of `run` (`crate::mrtr`): one elicitation
    /// per approval and a `requestState` bound to `binding`, carrying the program's `output`
    /// not yet delivered, expiring after `ttl`.
    pub(super) fn input_required(
        &self,
        binding: &str,
        run: &str,
        approvals: &[codemode_facade::ApprovalRequest],
        output: Vec<Value>,
        ttl: std::time::Duration,
    ) -> InputRequiredResult {
        let ids = approvals.iter().map(|r| r.approval_id.clone()).collect();
        let state = self.states.seal(binding, run, ids, output, ttl);
        InputRequiredResult::new(Some(crate::mrtr::input_requests(approvals)), Some(state))
    }

    /// For a 2026-07-28 request whose result (`result`, docs/contract/lifecycle.md#s5-1) is
    /// `waiting` with `pendingApprovals`: the `input_required` answer asking all of them, if they
    /// are still outstanding in the session's MRTR approvals. `None` otherwise (the result is
    /// answered as it is).
    pub(super) fn ask_approvals(
        &self,
        session: &Session,
        binding: &str,
        result: &Value,
    ) -> Option<InputRequiredResult> {
        if result.get("status").and_then(Value::as_str) != Some("waiting") {
            return None;
        }
        let run = result.get("runId").and_then(Value::as_str)?;
        let ids: Vec<&str> = result
            .get("pendingApprovals")
            .and_then(Value::as_array)?
            .iter()
            .filter_map(|p| p.get("approvalId").and_then(Value::as_str))
            .collect();
        let broker = session.mrtr.get()?;
        let outstanding = broker.pending();
        let approvals: Vec<_> = ids
            .iter()
            .filter_map(|id| outstanding.iter().find(|r| r.approval_id == *id).cloned())
            .collect();
        if approvals.is_empty() {
            return None;
        }
        let output = result
            .get("output")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Some(self.input_required(binding, run, &approvals, output, broker.ttl()))
    }

    /// For a Tasks client's `exec` whose run parked (`result` is `waiting`): the run becomes a
    /// task the server drives (`crate::tasks`), and the `CreateTaskResult` to answer. `None`
    /// when the run did not park (the result is answered as it is).
    pub(super) async fn park_as_task(
        &self,
        session: &Session,
        result: &Value,
    ) -> Option<rmcp::model::CreateTaskResult> {
        if result.get("status").and_then(Value::as_str) != Some("waiting") {
            return None;
        }
        let run_id = result.get("runId").and_then(Value::as_str)?.to_string();
        let driver = self.task_driver(session)?;
        Some(
            self.tasks
                .create(Parked {
                    driver,
                    run_id,
                    owner: session_owner(session),
                    scope: session.scope.clone(),
                    first: result.clone(),
                })
                .await,
        )
    }

    /// What drives a task of `session` (`crate::tasks::Driver`): the front, the session's
    /// environment with its MRTR approvals, and the task's result as an `exec` answer.
    fn task_driver(&self, session: &Session) -> Option<Driver> {
        Some(Driver {
            code_mode: self.code_mode.clone(),
            env: self.run_env(session, true)?,
            answer: Box::new(|result: Value| {
                match serde_json::to_value(call_result(result, &[])) {
                    Ok(Value::Object(object)) => object,
                    _ => JsonObject::new(),
                }
            }),
        })
    }

    /// Who asks about a task in a `tasks/*` request of `session` (`crate::tasks::Caller`),
    /// able to take over a task whose driving process died.
    pub(super) fn task_caller(&self, session: &Session) -> Caller {
        Caller {
            owner: session_owner(session),
            scope: session.scope.clone(),
            driver: self.task_driver(session),
        }
    }

    /// Resolves when the call of `context` must stop: the client cancelled it (or its session
    /// ended), or the server is shutting down ([`Drain::stop`]).
    pub(super) async fn cancelled(&self, context: &RequestContext<RoleServer>) {
        tokio::select! {
            () = context.ct.cancelled() => {}
            () = self.drain.stopped() => {}
        }
    }

    /// The environment of one `exec` or `wait` of this session: the source's, with the host's
    /// policy, hooks and trajectory when there is a host, and the session's approvals unless the
    /// source set its own.
    pub(super) fn run_env(&self, session: &Session, mrtr: bool) -> Option<RunEnv> {
        let mut env = self.source.run_env(session.scope.clone())?;
        if let Some(host) = &self.host {
            env = env
                .with_policy(host.policy.clone())
                .with_hooks(host.hooks.clone())
                .with_trajectory(host.trajectory.clone());
        }
        if env.approvals.is_none() {
            let ttl = env.config.snapshot_ttl();
            let approvals = if mrtr {
                session.mrtr_approvals(ttl)
            } else {
                session.approvals(ttl)
            };
            env = env.with_approvals(approvals);
        }
        Some(env)
    }

    /// The code-mode session a request belongs to: for an HTTP request that carries no
    /// `Mcp-Session-Id` (a 2026-07-28 stateless request, or a legacy client that never
    /// initialized a session), the shared session of its principal (anonymous without
    /// `--auth`; `crate::shared_scope`), else this MCP session's own (noted as its principal's).
    pub(super) fn session_for(&self, context: &RequestContext<RoleServer>) -> Arc<Session> {
        let Some(stateless) = &self.stateless else {
            return self.session.clone();
        };
        let parts = context.extensions.get::<http::request::Parts>();
        let principal = self.principal_of(context);
        match parts {
            Some(parts) if !parts.headers.contains_key("mcp-session-id") => {
                stateless.session(principal)
            }
            _ => {
                if let (Some(principal), Some(key)) = (principal, &self.session.scope.session_key) {
                    self.session
                        .owner
                        .get_or_init(|| stateless.note_owner(key, principal));
                }
                self.session.clone()
            }
        }
    }

    /// The request's principal (`--auth`), if any.
    fn principal_of<'a>(&self, context: &'a RequestContext<RoleServer>) -> Option<&'a Principal> {
        self.auth.as_ref()?;
        context
            .extensions
            .get::<http::request::Parts>()?
            .extensions
            .get::<Principal>()
    }

    /// The refusal of an `exec` when the request's principal already holds its cap of parked
    /// runs in this process (`crate::shared_scope`); `None` otherwise.
    /// Live copies of runs another instance finished are dropped first
    /// ([`CodeMode::reclaim_stale`]).
    pub(super) async fn over_principal_cap(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<Value> {
        let principal = self.principal_of(context)?;
        let stateless = self.stateless.as_ref()?;
        if !stateless.over_cap(&self.code_mode, principal) {
            return None;
        }
        self.code_mode.reclaim_stale().await;
        stateless
            .over_cap(&self.code_mode, principal)
            .then(|| codemode_facade::too_many_suspended().to_json())
    }

    /// One `exec`: runs over the catalog of this moment, without waiting for MCP servers still
    /// connecting. Returns the result and the servers the run could not reach.
    pub(super) async fn exec(
        &self,
        session: &Session,
        input: Value,
        context: &RequestContext<RoleServer>,
        mrtr: bool,
    ) -> (Value, Vec<crate::hub::Unavailable>) {
        let Some(env) = self.run_env(session, mrtr) else {
            return (disabled_result(), Vec::new());
        };
        let unavailable = self.source.unavailable();
        let (env, progress) = with_progress(env, context, self.forward.clone());
        let code_mode = &self.code_mode;
        let value = abortable(self.cancelled(context), |abort| async move {
            code_mode.exec(&env, &input, &abort).await.to_json()
        })
        .await;
        if let Some(progress) = progress {
            progress.finish().await;
        }
        (value, unavailable)
    }

    pub(super) async fn wait(
        &self,
        session: &Session,
        input: Value,
        context: &RequestContext<RoleServer>,
        mrtr: bool,
    ) -> Value {
        let Some(env) = self.run_env(session, mrtr) else {
            return disabled_result();
        };
        let (env, progress) = with_progress(env, context, self.forward.clone());
        let code_mode = &self.code_mode;
        let value = abortable(self.cancelled(context), |abort| async move {
            code_mode.wait_with(&env, &input, &abort).await.to_json()
        })
        .await;
        if let Some(progress) = progress {
            progress.finish().await;
        }
        value
    }
}
