//! The rmcp [`ServerHandler`] of [`CodeModeServer`]: `tools/list`, `tools/call` (`exec` and
//! `wait`), the prompt and resource methods (`content.rs`), list changes
//! (`notifications/*/list_changed`, `subscriptions/listen`) and the Tasks methods (parked runs,
//! or with code mode off the downstream tasks passed through).

use std::future::Future;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ResultType, ServerCapabilities, ServerConfig,
    SubscriptionFilter,
};
use rmcp::service::SubscriptionSendError;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};

use super::calls::uses_tasks;
use super::calls::{is_current_revision, uses_mrtr};
use super::direct::DIRECT_INSTRUCTIONS;
use super::env::disabled_result;
use super::results::{call_result, TOOLS_LIST_TTL_MS};
use super::session::{session_owner, Session};
use super::{CodeModeServer, SERVER_INSTRUCTIONS, SERVER_NAME};
use crate::drain::SHUTTING_DOWN;

/// How often a session's `notifications/tools/list_changed` task checks that its transport is
/// still open while the catalog does not change.
const LIST_CHANGED_POLL: std::time::Duration = std::time::Duration::from_secs(5);

impl ServerHandler for CodeModeServer {
    fn get_info(&self) -> ServerConfig {
        // Prompts and resources: the downstream servers' with code mode off, none with code
        // mode on (the model reaches them through the catalog); `content.rs`.
        let capabilities = ServerCapabilities::builder()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks();
        let capabilities = match self.direct {
            Some(_) => capabilities
                .enable_prompts_list_changed()
                .enable_resources_list_changed(),
            None => capabilities,
        };
        let mut capabilities = capabilities.build();
        if let (Some(_), Some(_)) = (&self.direct, &self.forward) {
            // Code mode off: log levels and resource subscriptions are passed on
            // (`notices.rs`).
            capabilities.logging = Some(Default::default());
            if let Some(resources) = capabilities.resources.as_mut() {
                resources.subscribe = Some(true);
            }
        }
        if self.direct.is_some() {
            // Code mode off: the servers' argument completions are passed on (`content.rs`).
            capabilities.completions = Some(Default::default());
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(match self.direct {
                Some(_) => DIRECT_INSTRUCTIONS,
                None => SERVER_INSTRUCTIONS,
            })
    }

    /// After the handshake of a stateful session: while the session's transport is open, every
    /// change of the catalog ([`EnvSource::catalog_changes`](super::EnvSource::catalog_changes)) is announced with
    /// `notifications/tools/list_changed`, so a client that listed `exec` before a late MCP
    /// server connected lists it again and sees that server in the description.
    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        if let Some(mut changes) = self.source.catalog_changes() {
            let peer = context.peer.clone();
            let direct = self.direct.is_some();
            tokio::spawn(async move {
                changes.mark_unchanged();
                loop {
                    // Woken at least every few seconds, so a session that closed while the
                    // catalog stayed the same does not keep this task.
                    let changed = tokio::time::timeout(LIST_CHANGED_POLL, changes.changed()).await;
                    if peer.is_transport_closed() {
                        return;
                    }
                    match changed {
                        Err(_) => continue,
                        Ok(Err(_)) => return,
                        Ok(Ok(())) => {
                            if peer.notify_tool_list_changed().await.is_err() {
                                return;
                            }
                            // With code mode off a server that joined or changed brings its
                            // prompts and resources too.
                            if direct
                                && (peer.notify_prompt_list_changed().await.is_err()
                                    || peer.notify_resource_list_changed().await.is_err())
                            {
                                return;
                            }
                        }
                    }
                }
            });
        }
        std::future::ready(())
    }

    /// `subscriptions/listen` (2026-07-28 clients, which have no session to receive
    /// `notifications/tools/list_changed` on): `toolsListChanged` is accepted; with code mode
    /// off `promptsListChanged` and `resourcesListChanged` too when asked for (the aggregated
    /// lists change with the servers). Resource subscriptions are not offered.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::builder().tools_list_changed();
        if self.direct.is_some() {
            if requested.prompts_list_changed == Some(true) {
                accepted = accepted.prompts_list_changed();
            }
            if requested.resources_list_changed == Some(true) {
                accepted = accepted.resources_list_changed();
            }
        }
        Some(accepted.build())
    }

    /// One `subscriptions/listen` stream: every change of the catalog
    /// ([`EnvSource::catalog_changes`](super::EnvSource::catalog_changes)) is sent as `notifications/tools/list_changed` on it,
    /// until the client cancels it (or drops the HTTP response) or the server stops, which ends
    /// it gracefully with the final `SubscriptionsListenResult`.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(mut changes) = self.source.catalog_changes() else {
            tokio::select! {
                () = context.cancelled() => {}
                () = self.drain.stopped() => {}
            }
            return Ok(());
        };
        changes.mark_unchanged();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = self.drain.stopped() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The catalog can no longer change: keep the stream until it ends.
                        tokio::select! {
                            () = context.cancelled() => {}
                            () = self.drain.stopped() => {}
                        }
                        return Ok(());
                    }
                    if let Err(e) = context.sink().notify_tool_list_changed().await {
                        tracing::debug!("subscriptions/listen stream closed: {e}");
                        return Ok(());
                    }
                    if self.direct.is_some() {
                        // Sent when the client asked for them; the others are not accepted.
                        for sent in [
                            context.sink().notify_prompt_list_changed().await,
                            context.sink().notify_resource_list_changed().await,
                        ] {
                            match sent {
                                Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {}
                                Err(e) => {
                                    tracing::debug!("subscriptions/listen stream closed: {e}");
                                    return Ok(());
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let session = self.session_for(&context);
        if let Some(direct) = &self.direct {
            // Code mode off: a downstream task passed through (`direct_tasks.rs`).
            let capabilities = context.client_capabilities();
            return direct
                .relayed()
                .get(
                    direct.hub(),
                    &request.task_id,
                    &session_owner(&session),
                    capabilities,
                )
                .await;
        }
        self.tasks
            .get(&request.task_id, self.task_caller(&session))
            .await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let session = self.session_for(&context);
        if let Some(direct) = &self.direct {
            let capabilities = context.client_capabilities();
            return direct
                .relayed()
                .update(
                    direct.hub(),
                    &request.task_id,
                    &session_owner(&session),
                    capabilities,
                    &request.input_responses,
                )
                .await;
        }
        self.tasks
            .update(
                &request.task_id,
                self.task_caller(&session),
                &request.input_responses,
            )
            .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let session = self.session_for(&context);
        if let Some(direct) = &self.direct {
            let capabilities = context.client_capabilities();
            return direct
                .relayed()
                .cancel(
                    direct.hub(),
                    &request.task_id,
                    &session_owner(&session),
                    capabilities,
                )
                .await;
        }
        self.tasks
            .cancel(&request.task_id, self.task_caller(&session))
            .await
    }

    /// `logging/setLevel` (code mode off; `notices.rs`).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.set_log_level(request, context).await
    }

    /// `resources/subscribe` (code mode off; `notices.rs`).
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_resource(request, context).await
    }

    /// `resources/unsubscribe` (code mode off; `notices.rs`).
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.unsubscribe_resource(request, context).await
    }

    /// `prompts/list`: cacheable like `tools/list` (`content.rs` for what it holds).
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.prompts().await)
            .with_ttl_ms(self.content_ttl())
            .with_cache_scope(CacheScope::Private))
    }

    /// `prompts/get` (`content.rs`).
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let _in_flight = self.drain.enter();
        if self.drain.is_stopping() {
            return Err(ErrorData::internal_error(SHUTTING_DOWN, None));
        }
        self.attach_upstream(&self.session_for(&context), &context);
        self.prompt(request, context).await
    }

    /// `completion/complete`: with code mode off the prompt's or resource's server answers
    /// (`content.rs`); with code mode on `-32601`.
    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let _in_flight = self.drain.enter();
        if self.drain.is_stopping() {
            return Err(ErrorData::internal_error(SHUTTING_DOWN, None));
        }
        self.completion(request, context).await
    }

    /// `resources/list`: cacheable like `tools/list` (`content.rs`).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(self.resources().await)
            .with_ttl_ms(self.content_ttl())
            .with_cache_scope(CacheScope::Private))
    }

    /// `resources/templates/list`: cacheable like `tools/list` (`content.rs`).
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(
            ListResourceTemplatesResult::with_all_items(self.resource_templates().await)
                .with_ttl_ms(self.content_ttl())
                .with_cache_scope(CacheScope::Private),
        )
    }

    /// `resources/read` (`content.rs`).
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let _in_flight = self.drain.enter();
        if self.drain.is_stopping() {
            return Err(ErrorData::internal_error(SHUTTING_DOWN, None));
        }
        self.attach_upstream(&self.session_for(&context), &context);
        self.read(request, context).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Cacheable (2026-07-28 `ttlMs`/`cacheScope`) while every configured source is
        // reachable: the list changes only with the catalog, which is announced. While a
        // server is still connecting or failed, it is about to change: `ttlMs: 0`.
        let ttl = self.list_ttl();
        let tools = match &self.direct {
            Some(direct) => self.direct_list(direct),
            None => self.tools(),
        };
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(ttl)
            .with_cache_scope(CacheScope::Private))
    }

    /// A 2026-07-28 client's complete result says so (`resultType: "complete"`, required by
    /// the revision's schema for `CallToolResult`).
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let current = is_current_revision(&context);
        let mut response = self.answer_call(request, context).await?;
        if let CallToolResponse::Complete(result) = &mut response {
            if current && result.result_type.is_none() {
                result.result_type = Some(ResultType::COMPLETE);
            }
        }
        Ok(response)
    }
}

impl CodeModeServer {
    /// The `ttlMs` of `tools/list`: [`TOOLS_LIST_TTL_MS`] while every configured source is
    /// reachable, else 0 (the list is about to change).
    fn list_ttl(&self) -> u64 {
        if self.source.unavailable().is_empty() {
            TOOLS_LIST_TTL_MS
        } else {
            0
        }
    }

    /// The `ttlMs` of the prompt and resource lists: with code mode on they are always empty,
    /// so [`TOOLS_LIST_TTL_MS`]; with code mode off as `tools/list` ([`Self::list_ttl`]).
    fn content_ttl(&self) -> u64 {
        match self.direct {
            Some(_) => self.list_ttl(),
            None => TOOLS_LIST_TTL_MS,
        }
    }

    /// Makes the client that sent `context`'s request the one asked for this session's
    /// approvals (by elicitation) and for what the downstream servers ask of their client
    /// (elicitation, sampling, roots: `crate::forward`), before a `tools/call`, `prompts/get`
    /// or `resources/read` that may need them.
    pub(super) fn attach_upstream(&self, session: &Session, context: &RequestContext<RoleServer>) {
        session.peer.set(context.peer.clone());
        if let Some(forward) = &self.forward {
            let id = session.scope.session_id.as_deref().unwrap_or_default();
            forward.set_upstream(id, context.peer.clone());
        }
    }

    /// `tools/call`: `exec` or `wait`, or with code mode off a downstream tool (`direct.rs`).
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = self.session_for(&context);
        self.attach_upstream(&session, &context);
        let name = request.name.as_ref();
        tracing::debug!(tool = name, session = ?session.scope.session_id, "codemode MCP call");
        let _in_flight = self.drain.enter();
        if self.drain.is_stopping() || self.code_mode.is_parking_in_flight() {
            return Err(ErrorData::internal_error(SHUTTING_DOWN, None));
        }
        if let Some(direct) = &self.direct {
            // Code mode off: the downstream tool itself (`direct.rs`).
            return self.direct_call(direct, &session, request, &context).await;
        }
        // Absent arguments go through as `null`, so the facade's own argument checks answer.
        let input = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        // A 2026-07-28 request: approvals go out as `input_required` (MRTR), not elicitation.
        let mrtr = uses_mrtr(&context);
        let binding = format!(
            "{}|{name}",
            session.scope.session_key.as_deref().unwrap_or_default()
        );
        if !matches!(name, "exec" | "wait") {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        }
        if name == "exec" && request.request_state.is_none() {
            if let Some(refused) = self.over_principal_cap(&context).await {
                return Ok(call_result(refused, &[]).into());
            }
        }
        let (result, unavailable) = match request.request_state.as_deref() {
            // A retry: answer the approvals it carries, then resume the run as `wait` does.
            Some(sealed) => {
                let state = self.states.open(&binding, sealed)?;
                let Some(broker) = self.run_env(&session, true).and_then(|env| env.approvals)
                else {
                    return Ok(call_result(disabled_result(), &[]).into());
                };
                let responses = request.input_responses.unwrap_or_default();
                let mut missing = false;
                for id in &state.approvals {
                    match responses.get(id) {
                        Some(response) => {
                            let decision = crate::mrtr::decision_of_response(response);
                            if broker.answer(id, decision.clone()).is_err() {
                                // Not outstanding here: held by another process sharing the
                                // run store (the balancer sent the retry here), or decided,
                                // expired or ended meanwhile, when relaying changes nothing.
                                let ttl = broker.ttl();
                                let code_mode = &self.code_mode;
                                code_mode.relay_approval(id, &decision, ttl).await;
                            }
                        }
                        None => missing = true,
                    }
                }
                if missing {
                    // Ask again at once for what is still pending, without resuming.
                    let pending: Vec<_> = broker
                        .pending()
                        .into_iter()
                        .filter(|r| {
                            state.approvals.contains(&r.approval_id)
                                || r.scope.run_id.as_deref() == Some(state.run.as_str())
                        })
                        .collect();
                    if !pending.is_empty() {
                        let output = state.output.clone();
                        let ttl = broker.ttl();
                        return Ok(self
                            .input_required(&binding, &state.run, &pending, output, ttl)
                            .into());
                    }
                }
                let input = json!({"runId": state.run});
                let mut result = self.wait(&session, input, &context, true).await;
                // The output the `input_required` answers stood in for comes first.
                if let Some(output) = result.get_mut("output").and_then(Value::as_array_mut) {
                    output.splice(0..0, state.output);
                }
                (result, Vec::new())
            }
            None if name == "exec" && uses_tasks(&context) => {
                // Approvals of a task are answered by `tasks/update`: the MRTR broker.
                let (result, unavailable) = self.exec(&session, input, &context, true).await;
                if let Some(created) = self.park_as_task(&session, &result).await {
                    return Ok(created.into());
                }
                (result, unavailable)
            }
            None if name == "exec" => self.exec(&session, input, &context, mrtr).await,
            None => (self.wait(&session, input, &context, mrtr).await, Vec::new()),
        };
        if mrtr && !self.drain.is_stopping() {
            if let Some(asked) = self.ask_approvals(&session, &binding, &result) {
                return Ok(asked.into());
            }
        }
        if self.drain.is_stopping() {
            // The run was aborted by the shutdown: the client gets an answer it cannot mistake
            // for the program's own failure.
            return Err(ErrorData::internal_error(SHUTTING_DOWN, None));
        }
        Ok(call_result(result, &unavailable).into())
    }
}
