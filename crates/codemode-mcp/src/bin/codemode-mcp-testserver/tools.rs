//! The test server's tools: what `tools/list` gives (with the flags' pagination, rotation and
//! added tools) and what each `tools/call` does (the list is in the crate documentation).

use super::*;

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("schemas are objects"),
    }
}

pub(super) fn echo_tool(name: String, description: &'static str) -> Tool {
    Tool::new(
        name,
        description,
        schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        })),
    )
}

fn no_args() -> Arc<JsonObject> {
    schema(json!({"type": "object", "properties": {}}))
}

pub(super) fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

impl TestServer {
    pub(super) fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            echo_tool("echo".into(), "Returns its text."),
            Tool::new("fail", "Returns a tool error (isError: true).", no_args()),
            Tool::new(
                "protocol_error",
                "Answers with a JSON-RPC error.",
                no_args(),
            ),
            Tool::new("hang", "Never answers.", no_args()),
            Tool::new(
                "slow",
                "Sleeps ms milliseconds, then answers.",
                schema(json!({
                    "type": "object",
                    "properties": {"ms": {"type": "integer"}},
                    "required": ["ms"]
                })),
            ),
            Tool::new("crash", "Exits the server with status 3.", no_args()),
            Tool::new(
                "add_tool",
                "Adds a tool added_<n> and sends notifications/tools/list_changed.",
                no_args(),
            ),
            Tool::new(
                "env",
                "Returns the server's environment as JSON.",
                no_args(),
            ),
            Tool::new(
                "client_info",
                "Returns the client's initialize params (or per-request _meta) as JSON.",
                no_args(),
            ),
            Tool::new(
                "big",
                "Returns a text of bytes x characters.",
                schema(json!({
                    "type": "object",
                    "properties": {"bytes": {"type": "integer"}},
                    "required": ["bytes"]
                })),
            ),
            Tool::new(
                "ask",
                "Asks the client to confirm (MRTR input_required), then answers.",
                no_args(),
            ),
            Tool::new(
                "task_slow",
                "Runs ms milliseconds as a task (Tasks extension), then answers.",
                schema(json!({
                    "type": "object",
                    "properties": {"ms": {"type": "integer"}},
                    "required": ["ms"]
                })),
            ),
            Tool::new(
                "task_polls",
                "Returns how many tasks/get requests this server answered.",
                no_args(),
            ),
        ];
        if self.flags.content_list_changed {
            tools.push(Tool::new(
                "touch_content",
                "Sends notifications/prompts/list_changed and notifications/resources/list_changed.",
                no_args(),
            ));
        }
        let added = self.added.lock().expect("added tools lock");
        tools.extend(
            added
                .iter()
                .map(|name| echo_tool(name.clone(), "An added tool; returns its text.")),
        );
        tools
    }

    fn is_added(&self, name: &str) -> bool {
        let added = self.added.lock().expect("added tools lock");
        added.iter().any(|a| a == name)
    }

    pub(super) fn page(
        &self,
        tools: Vec<Tool>,
        cursor: Option<&str>,
    ) -> Result<(Vec<Tool>, Option<String>), McpError> {
        if self.flags.repeat_cursor {
            return Ok((tools, Some("same".into())));
        }
        if self.flags.endless_cursor {
            let n = self.lists.fetch_add(1, Ordering::Relaxed) + 1;
            return Ok((tools, Some(format!("p{n}"))));
        }
        let Some(pages) = self.flags.pages else {
            return Ok((tools, None));
        };
        let size = tools.len().div_ceil(pages).max(1);
        let index = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|&i| i > 0 && i * size < tools.len())
                .ok_or_else(|| McpError::invalid_params(format!("unknown cursor {c:?}"), None))?,
        };
        let start = index * size;
        let end = (start + size).min(tools.len());
        let next = (end < tools.len()).then(|| (index + 1).to_string());
        Ok((tools[start..end].to_vec(), next))
    }
}

pub(super) fn text_arg(args: &Option<JsonObject>, key: &str) -> Result<String, McpError> {
    args.as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| McpError::invalid_params(format!("missing string argument {key:?}"), None))
}

impl TestServer {
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let result = match request.name.as_ref() {
            name if name == "echo" || self.is_added(name) => {
                let text = text_arg(&request.arguments, "text")?;
                let mut result = text_result(text.clone());
                result.structured_content = Some(json!({"echo": text}));
                result
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("it failed")]),
            "protocol_error" => {
                return Err(McpError::invalid_params("bad params from testserver", None))
            }
            "hang" => std::future::pending().await,
            "ask" => return ask(&request),
            "task_slow" if client_has_tasks(&context) => {
                let ms = u64_arg(&request.arguments, "ms")?;
                return Ok(CallToolResponse::Task(tasks::start(ms)));
            }
            "task_polls" => text_result(tasks::polls().to_string()),
            "slow" | "task_slow" => {
                let ms = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("ms"))
                    .and_then(Value::as_u64)
                    .ok_or_else(|| {
                        McpError::invalid_params("missing integer argument \"ms\"", None)
                    })?;
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                text_result(format!("slept {ms}"))
            }
            "crash" => std::process::exit(3),
            "env" => {
                let env: std::collections::BTreeMap<String, String> = std::env::vars_os()
                    .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                    .collect();
                text_result(serde_json::to_string(&env).expect("env is JSON"))
            }
            "client_info" => {
                // On 2026-07-28 there is no initialize: the same three facts come in every
                // request's `_meta`.
                let info = match (context.meta.protocol_version(), context.peer.peer_info()) {
                    (Some(version), _) => json!({
                        "protocolVersion": version,
                        "capabilities": context.meta.client_capabilities(),
                        "clientInfo": context.meta.client_info(),
                    }),
                    (None, info) => serde_json::to_value(info).expect("params are JSON"),
                };
                text_result(info.to_string())
            }
            "big" => {
                let bytes = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("bytes"))
                    .and_then(Value::as_u64)
                    .ok_or_else(|| {
                        McpError::invalid_params("missing integer argument \"bytes\"", None)
                    })?;
                text_result("x".repeat(usize::try_from(bytes).unwrap_or(usize::MAX)))
            }
            "touch_content" if self.flags.content_list_changed => {
                let _ = context.peer.notify_prompt_list_changed().await;
                let _ = context.peer.notify_resource_list_changed().await;
                text_result("touched".to_string())
            }
            "add_tool" => {
                let name = {
                    let mut added = self.added.lock().expect("added tools lock");
                    let name = format!("added_{}", added.len() + 1);
                    added.push(name.clone());
                    name
                };
                let _ = context.peer.notify_tool_list_changed().await;
                text_result(format!("added {name}"))
            }
            name => {
                return Err(McpError::invalid_params(
                    format!("unknown tool {name}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}
