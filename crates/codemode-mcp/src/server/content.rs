//! Prompts and resources of `serve` (docs/mcp.md, "Prompts and resources").
//!
//! - **Code mode on**: `prompts/list`, `resources/list` and `resources/templates/list` answer
//!   empty lists with the caching hints of `tools/list` (2026-07-28 `ttlMs`/`cacheScope`); the
//!   model reaches the MCP servers' prompts and resources through the catalog
//!   (`MCP.<server>.prompts.get`, `MCP.<server>.resources.read`). `prompts/get` of any name is
//!   `-32602` `Unknown prompt`, `resources/read` of any URI `-32002` `Resource not found`.
//! - **Code mode off**: the lists aggregate the downstream servers' own (servers in name order,
//!   each listed live, every page). A prompt is served as `<server>__<prompt>` (the safe server
//!   name, as tools are; its own name with `--bare-names`); a resource or template keeps its
//!   URI, and `resources/read` goes to the server that lists the URI (the first in name order
//!   when two do), else to the first whose template's literal prefix matches it, else to the
//!   only server with resources. `prompts/get` and `resources/read` run through the host
//!   pipeline as the catalog entries `<server>__prompts_get` / `<server>__resources_read`
//!   (policy, hooks, approval, trajectory); a server the policy denies that entry is left out
//!   of the list too. A downstream `input_required` is passed to a 2026-07-28 client with the
//!   server's `requestState` sealed, as for tools (`direct.rs`).
//! - **`completion/complete`** (code mode off; `completions` is declared then): a `ref/prompt`
//!   goes to the prompt's server under its own name, a `ref/resource` to the server that owns
//!   the URI or template, and the server's answer comes back as it is. Not through the host
//!   pipeline: completing an argument runs no prompt and reads no resource; the policy still
//!   decides which servers are asked (as for the lists).

use std::sync::Arc;

use codemode_bridge::ToolCall;
use codemode_facade::ToolPipeline;
use codemode_telemetry::Trajectory;
use rmcp::model::{
    CompleteRequestMethod, CompleteRequestParams, CompleteResult, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult, Prompt,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, Resource,
    ResourceTemplate, ResultType,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{json, Map, Value};

use super::calls::is_current_revision;
use super::direct::DirectTools;
use super::results::input_required_of;
use super::CodeModeServer;
use crate::client::passthrough::{passing_through, PassThrough};
use crate::hub::DirectServer;

/// The `bridge_id` of a `prompts/get` or `resources/read` made with code mode off.
const CONTENT_BRIDGE_ID: &str = "mcp:content";

/// Most URI → server routes [`DirectTools`] remembers between `resources/list` answers.
const MAX_URI_ROUTES: usize = 10_000;

/// `-32602` `Unknown prompt: <name>`.
fn unknown_prompt(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown prompt: {name}"), None)
}

/// `-32002` `Resource not found` with the URI in `data` (the MCP spec's error).
pub(super) fn resource_not_found(uri: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        "Resource not found",
        Some(json!({ "uri": uri })),
    )
}

/// Items of `key` in a list answer, each an object.
fn items(answer: &Value, key: &str) -> Vec<Map<String, Value>> {
    answer
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_object().cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// The literal part of a URI template before its first expression.
fn template_prefix(template: &str) -> &str {
    template.split('{').next().unwrap_or_default()
}

/// What one downstream `prompts/get` or `resources/read` answered.
enum Answer {
    /// A complete result (without `resultType`).
    Complete(Value),
    /// The server asks the client for input (2026-07-28, passed through).
    InputRequired(InputRequiredResult),
}

impl CodeModeServer {
    /// The servers whose prompts or resources the host's policy lets the client reach.
    fn content_servers(&self, direct: &DirectTools) -> Vec<DirectServer> {
        match &self.host {
            Some(host) => direct
                .hub()
                .direct_servers(|name, id| host.policy.allows(name, id)),
            None => direct.hub().direct_servers(|_, _| true),
        }
    }

    /// `prompts/list`: with code mode off every allowed server's prompts, each under its served
    /// name (first of a name wins); with code mode on none.
    pub(super) async fn prompts(&self) -> Vec<Prompt> {
        let Some(direct) = &self.direct else {
            return Vec::new();
        };
        let servers: Vec<_> = self
            .content_servers(direct)
            .into_iter()
            .filter(|server| server.prompts_get.is_some())
            .collect();
        let lists = futures::future::join_all(
            servers
                .iter()
                .map(|server| server.client.list_prompts(None)),
        )
        .await;
        let mut seen = std::collections::HashSet::new();
        let mut prompts = Vec::new();
        for (server, list) in servers.iter().zip(lists) {
            let list = match list {
                Ok(list) => list,
                Err(e) => {
                    tracing::debug!("prompts/list left out: {e}");
                    continue;
                }
            };
            for mut prompt in items(&list, "prompts") {
                let Some(own) = prompt.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let served = direct.served_prompt(&server.safe_name, own);
                if !seen.insert(served.clone()) {
                    continue;
                }
                prompt.insert("name".into(), Value::String(served));
                match serde_json::from_value::<Prompt>(Value::Object(prompt)) {
                    Ok(prompt) => prompts.push(prompt),
                    Err(e) => tracing::debug!("a prompt rmcp cannot read is left out: {e}"),
                }
            }
        }
        prompts
    }

    /// `resources/list` (`templates: false`) or `resources/templates/list` (`true`): every
    /// allowed server's items as it listed them, as JSON objects with their server.
    async fn resource_items(
        &self,
        direct: &DirectTools,
        templates: bool,
    ) -> Vec<(DirectServer, Map<String, Value>)> {
        let servers: Vec<_> = self
            .content_servers(direct)
            .into_iter()
            .filter(|server| server.resources_read.is_some())
            .collect();
        let lists = futures::future::join_all(servers.iter().map(|server| async {
            if templates {
                server.client.list_resource_templates(None).await
            } else {
                server.client.list_resources(None).await
            }
        }))
        .await;
        let key = if templates {
            "resourceTemplates"
        } else {
            "resources"
        };
        let mut all = Vec::new();
        for (server, list) in servers.into_iter().zip(lists) {
            match list {
                Ok(list) => all.extend(items(&list, key).into_iter().map(|i| (server.clone(), i))),
                Err(e) => tracing::debug!("{key} left out: {e}"),
            }
        }
        all
    }

    /// `resources/list`: with code mode off every allowed server's resources, URIs unchanged
    /// (the first server listing a URI owns it); with code mode on none.
    pub(super) async fn resources(&self) -> Vec<Resource> {
        let Some(direct) = &self.direct else {
            return Vec::new();
        };
        let mut seen = std::collections::HashSet::new();
        let mut resources = Vec::new();
        for (server, item) in self.resource_items(direct, false).await {
            let Some(uri) = item.get("uri").and_then(Value::as_str) else {
                continue;
            };
            if !seen.insert(uri.to_string()) {
                continue;
            }
            direct.remember_uri(uri, &server.safe_name);
            match serde_json::from_value::<Resource>(Value::Object(item)) {
                Ok(resource) => resources.push(resource),
                Err(e) => tracing::debug!("a resource rmcp cannot read is left out: {e}"),
            }
        }
        resources
    }

    /// `resources/templates/list`: with code mode off every allowed server's templates, as
    /// listed; with code mode on none.
    pub(super) async fn resource_templates(&self) -> Vec<ResourceTemplate> {
        let Some(direct) = &self.direct else {
            return Vec::new();
        };
        self.resource_items(direct, true)
            .await
            .into_iter()
            .filter_map(|(_, item)| serde_json::from_value(Value::Object(item)).ok())
            .collect()
    }

    /// The server that owns `uri` (see the module documentation), if any.
    pub(super) async fn resource_owner(
        &self,
        direct: &DirectTools,
        uri: &str,
    ) -> Option<DirectServer> {
        let servers: Vec<_> = self
            .content_servers(direct)
            .into_iter()
            .filter(|server| server.resources_read.is_some())
            .collect();
        if servers.len() <= 1 {
            return servers.into_iter().next();
        }
        if let Some(safe) = direct.route_of(uri) {
            if let Some(server) = servers.iter().find(|s| s.safe_name == safe) {
                return Some(server.clone());
            }
        }
        if let Some((server, _)) = self
            .resource_items(direct, false)
            .await
            .into_iter()
            .find(|(_, item)| item.get("uri").and_then(Value::as_str) == Some(uri))
        {
            direct.remember_uri(uri, &server.safe_name);
            return Some(server);
        }
        self.resource_items(direct, true)
            .await
            .into_iter()
            .filter_map(|(server, item)| {
                let template = item.get("uriTemplate").and_then(Value::as_str)?;
                let prefix = template_prefix(template);
                (!prefix.is_empty() && uri.starts_with(prefix)).then_some((prefix.len(), server))
            })
            // The longest literal prefix is the most specific template; the first on a tie.
            .fold(
                None::<(usize, DirectServer)>,
                |best, (len, server)| match best {
                    Some((best_len, _)) if best_len >= len => best,
                    _ => Some((len, server)),
                },
            )
            .map(|(_, server)| server)
    }

    /// One `prompts/get` or `resources/read` (`method`; `key`: the prompt name or URI the client
    /// sent; `entry`: the catalog entry's name and id, `input`: its arguments) through the host
    /// pipeline, as a round of the client's MRTR exchange for a 2026-07-28 client (the server's
    /// `requestState` is sealed to the session, the method and `key`).
    #[allow(clippy::too_many_arguments)]
    async fn content_call(
        &self,
        direct: &DirectTools,
        (method, key): (&str, &str),
        entry: &(String, String),
        input: Value,
        input_responses: Option<rmcp::model::InputResponses>,
        request_state: Option<String>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Answer, ErrorData> {
        let session = &self.session_for(context);
        let binding = &format!(
            "{}|{method}|{key}",
            session.scope.session_key.as_deref().unwrap_or_default()
        );
        let round = if is_current_revision(context) {
            let request_state = match request_state.as_deref() {
                Some(sealed) => Some(self.states.open_downstream(binding, sealed)?),
                None => None,
            };
            Some(PassThrough {
                input_responses: input_responses.map(|r| r.into_iter().collect()),
                request_state,
                client_capabilities: context.client_capabilities(),
                // A prompt or resource never makes a task; no refusal is answered as such.
                ..PassThrough::default()
            })
        } else {
            None
        };
        let host = self.host.as_deref().cloned().unwrap_or_default();
        let (name, id) = entry.clone();
        let call = ToolCall {
            tool_id: id,
            tool_call_id: format!("mcp:{name}:{}", uuid::Uuid::new_v4()),
            tool_name: name,
            input,
            scope: session.scope.clone(),
            bridge_id: CONTENT_BRIDGE_ID.to_string(),
            parent_tool_call_id: None,
            code_mode_run_id: None,
        };
        let pipeline = ToolPipeline::new(Arc::new(direct.hub().executor(None)))
            .with_policy(host.policy.clone())
            .with_hooks(host.hooks.clone())
            .with_trajectory(Trajectory::clone(&host.trajectory))
            .with_approver(session.approvals(direct.approval_ttl()));
        let called = async {
            match round.clone() {
                Some(round) => passing_through(round, pipeline.call(call)).await,
                None => pipeline.call(call).await,
            }
        };
        let outcome = tokio::select! {
            outcome = called => outcome,
            () = self.cancelled(context) => {
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        let value = outcome.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if value.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(Answer::Complete(value));
        }
        if round.is_none() {
            return Err(ErrorData::internal_error(
                format!(
                    "{}: the MCP server asked for input (input_required), which only a \
                     2026-07-28 client can give",
                    entry.0
                ),
                None,
            ));
        }
        let ttl = direct.approval_ttl();
        input_required_of(&value, |state| {
            self.states.seal_downstream(binding, state, ttl)
        })
        .map(Answer::InputRequired)
        .map_err(|e| ErrorData::internal_error(format!("{}: {e}", entry.0), None))
    }

    /// `prompts/get`: with code mode off the prompt's server gets it (module documentation);
    /// with code mode on, or for a name no allowed server serves, `-32602` `Unknown prompt`.
    pub(super) async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let Some(direct) = &self.direct else {
            return Err(unknown_prompt(&request.name));
        };
        let servers: Vec<_> = self
            .content_servers(direct)
            .into_iter()
            .filter(|server| server.prompts_get.is_some())
            .collect();
        let Some((server, own)) = direct.prompt_owner(&servers, &request.name) else {
            return Err(unknown_prompt(&request.name));
        };
        let Some(entry) = &server.prompts_get else {
            return Err(unknown_prompt(&request.name));
        };
        let mut input = json!({ "name": own });
        if let Some(arguments) = request.arguments {
            input["arguments"] = Value::Object(arguments);
        }
        let current = is_current_revision(&context);
        let answer = self
            .content_call(
                direct,
                ("prompts/get", &request.name),
                entry,
                input,
                request.input_responses,
                request.request_state,
                &context,
            )
            .await?;
        match answer {
            Answer::InputRequired(asked) => Ok(GetPromptResponse::InputRequired(asked)),
            Answer::Complete(value) => {
                let mut result = serde_json::from_value::<GetPromptResult>(value).map_err(|e| {
                    ErrorData::internal_error(
                        format!("{}: the prompt is not an MCP prompt: {e}", entry.0),
                        None,
                    )
                })?;
                result.result_type = current.then_some(ResultType::COMPLETE);
                Ok(GetPromptResponse::Complete(result))
            }
        }
    }

    /// `resources/read`: with code mode off the URI's server reads it (module documentation);
    /// with code mode on, or a URI no allowed server owns, `-32002` `Resource not found`.
    pub(super) async fn read(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(direct) = &self.direct else {
            return Err(resource_not_found(&request.uri));
        };
        let Some(server) = self.resource_owner(direct, &request.uri).await else {
            return Err(resource_not_found(&request.uri));
        };
        let Some(entry) = &server.resources_read else {
            return Err(resource_not_found(&request.uri));
        };
        let current = is_current_revision(&context);
        let answer = self
            .content_call(
                direct,
                ("resources/read", &request.uri),
                entry,
                json!({ "uri": &request.uri }),
                request.input_responses,
                request.request_state,
                &context,
            )
            .await?;
        match answer {
            Answer::InputRequired(asked) => Ok(ReadResourceResponse::InputRequired(asked)),
            Answer::Complete(value) => {
                let mut result =
                    serde_json::from_value::<ReadResourceResult>(value).map_err(|e| {
                        ErrorData::internal_error(
                            format!(
                                "{}: the contents are not MCP resource contents: {e}",
                                entry.0
                            ),
                            None,
                        )
                    })?;
                result.result_type = current.then_some(ResultType::COMPLETE);
                Ok(ReadResourceResponse::Complete(result))
            }
        }
    }

    /// `completion/complete` with code mode off (docs/mcp.md, "The everything-server scenarios through `serve` with code mode off"): a
    /// `ref/prompt` goes to the server of the served prompt name, under the prompt's own name;
    /// a `ref/resource` to the server that owns the URI or template (as `resources/read` is
    /// routed). Only servers whose prompts (resources) the policy lets the client reach are
    /// asked; an unknown prompt is `-32602` `Unknown prompt`, an unowned URI `-32002`. Not a
    /// call through the host pipeline: completing an argument runs nothing and reads nothing
    /// but the server's suggestions. With code mode on, `-32601` (nothing is offered).
    pub(super) async fn completion(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let Some(direct) = &self.direct else {
            return Err(ErrorData::method_not_found::<CompleteRequestMethod>());
        };
        let mut params = json!({ "argument": &request.argument });
        if let Some(completion_context) = &request.context {
            params["context"] = json!(completion_context);
        }
        let (server, subject) = match &request.r#ref {
            Reference::Prompt(prompt) => {
                let servers: Vec<_> = self
                    .content_servers(direct)
                    .into_iter()
                    .filter(|server| server.prompts_get.is_some())
                    .collect();
                let Some((server, own)) = direct.prompt_owner(&servers, &prompt.name) else {
                    return Err(unknown_prompt(&prompt.name));
                };
                params["ref"] = json!({"type": "ref/prompt", "name": own});
                (server, prompt.name.clone())
            }
            Reference::Resource(resource) => {
                let Some(server) = self.resource_owner(direct, &resource.uri).await else {
                    return Err(resource_not_found(&resource.uri));
                };
                params["ref"] = json!({"type": "ref/resource", "uri": &resource.uri});
                (server, resource.uri.clone())
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "completion/complete: unknown reference type",
                    None,
                ))
            }
        };
        let answer = tokio::select! {
            answer = server.client.complete(&subject, params) => answer,
            () = self.cancelled(&context) => {
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        let answer = answer.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut result = serde_json::from_value::<CompleteResult>(answer).map_err(|e| {
            ErrorData::internal_error(
                format!("{subject}: the answer is not an MCP completion: {e}"),
                None,
            )
        })?;
        result.result_type = is_current_revision(&context).then_some(ResultType::COMPLETE);
        Ok(result)
    }
}

impl DirectTools {
    /// The name the client sees for the prompt `own` of the server `safe_name`.
    pub(super) fn served_prompt(&self, safe_name: &str, own: &str) -> String {
        if self.is_bare() {
            own.to_string()
        } else {
            format!("{safe_name}__{own}")
        }
    }

    /// The server of the served prompt name `served` among `servers` and the prompt's own
    /// name there: with bare names the first server; else the server whose safe name prefixes
    /// `served` with `__` (the longest such, should one safe name extend another).
    fn prompt_owner(
        &self,
        servers: &[DirectServer],
        served: &str,
    ) -> Option<(DirectServer, String)> {
        if self.is_bare() {
            return servers
                .first()
                .map(|server| (server.clone(), served.to_string()));
        }
        servers
            .iter()
            .filter_map(|server| {
                let own = served.strip_prefix(&format!("{}__", server.safe_name))?;
                (!own.is_empty()).then(|| (server.clone(), own.to_string()))
            })
            .max_by_key(|(server, _)| server.safe_name.len())
    }

    /// Notes that the server `safe_name` lists `uri` (bounded: forgotten all at once past
    /// [`MAX_URI_ROUTES`]).
    fn remember_uri(&self, uri: &str, safe_name: &str) {
        let mut routes = self.uri_routes().lock().unwrap_or_else(|e| e.into_inner());
        if routes.len() >= MAX_URI_ROUTES && !routes.contains_key(uri) {
            routes.clear();
        }
        routes.insert(uri.to_string(), safe_name.to_string());
    }

    /// The server last seen listing `uri`.
    fn route_of(&self, uri: &str) -> Option<String> {
        self.uri_routes()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(uri)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_prefix_is_its_literal_head() {
        assert_eq!(
            template_prefix("test://template/{id}/data"),
            "test://template/"
        );
        assert_eq!(template_prefix("file:///{+path}"), "file:///");
        assert_eq!(template_prefix("{scheme}://x"), "");
        assert_eq!(template_prefix("plain://uri"), "plain://uri");
    }

    #[test]
    fn input_required_keeps_the_requests_and_seals_the_state() {
        let asked = json!({
            "resultType": "input_required",
            "inputRequests": {"user_context": {"method": "elicitation/create", "params": {
                "message": "What context?",
                "requestedSchema": {"type": "object", "properties": {"context": {"type": "string"}}}
            }}},
            "requestState": "server-state"
        });
        let result = input_required_of(&asked, |state| format!("sealed({state})")).unwrap();
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["resultType"], "input_required");
        assert_eq!(json["requestState"], "sealed(server-state)");
        assert_eq!(
            json["inputRequests"]["user_context"]["params"]["message"],
            "What context?"
        );
        let bad = json!({"resultType": "input_required", "inputRequests": 5});
        assert!(input_required_of(&bad, |s| s.to_string())
            .unwrap_err()
            .starts_with("asked for input that is not an MCP input request"));
    }
}
