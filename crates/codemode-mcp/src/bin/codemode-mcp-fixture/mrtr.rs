//! The fixture's MRTR tools (`input-required-result-*` scenarios): their list, the input
//! requests they make, and their rounds with a sealed `requestState` (module documentation of
//! `main.rs`).

use super::*;

/// The MRTR tools: name, description.
pub(super) const TOOLS: [(&str, &str); 8] = [
    (
        "test_input_required_result_elicitation",
        "Asks the client's name by elicitation (MRTR), then greets it.",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model for the capital of France (MRTR sampling).",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks the client for its roots (MRTR roots/list).",
    ),
    (
        "test_input_required_result_request_state",
        "Asks a confirmation with a requestState that the retry must echo.",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks an elicitation, a sampling and the roots in one round.",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks two questions in two rounds, each with its own requestState.",
    ),
    (
        "test_input_required_result_tampered_state",
        "Asks a confirmation; a tampered requestState is refused.",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only for the input the client declared it can give.",
    ),
];

/// An input request from its JSON (`{method, params}`).
pub(super) fn input(value: Value) -> Result<InputRequest, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// An `elicitation/create` form asking `message`, with one required property `name` of `kind`.
pub(super) fn form(message: &str, name: &str, kind: &str) -> Result<InputRequest, McpError> {
    input(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {name: {"type": kind}},
                "required": [name]
            }
        }
    }))
}

/// A `sampling/createMessage` request with one user message `text`.
pub(super) fn sampling(text: &str, max_tokens: u32) -> Result<InputRequest, McpError> {
    input(json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens
        }
    }))
}

/// A `roots/list` request.
pub(super) fn roots() -> Result<InputRequest, McpError> {
    input(json!({"method": "roots/list", "params": {}}))
}

/// `field` of `response` when it is an accepted elicitation answer (`{action: "accept",
/// content}`); `None` for any other answer (declined, cancelled, not an object).
pub(super) fn accepted<'a>(response: Option<&'a Value>, field: &str) -> Option<&'a Value> {
    let response = response?;
    if response.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    response.get("content")?.get(field)
}

/// The text of a sampling answer (`{role, content: {type: "text", text}}`).
pub(super) fn sampled(response: Option<&Value>) -> Option<&str> {
    response?.get("content")?.get("text")?.as_str()
}

/// The root URIs of a `roots/list` answer (`{roots: [{uri}]}`).
pub(super) fn root_uris(response: Option<&Value>) -> Option<Vec<&str>> {
    let roots = response?.get("roots")?.as_array()?;
    roots
        .iter()
        .map(|root| root.get("uri").and_then(Value::as_str))
        .collect()
}

/// A complete result with one text block.
pub(super) fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text.into())]).into()
}

/// An `input_required` answer asking `requests` with `state`.
pub(super) fn ask(requests: Vec<(&str, InputRequest)>, state: Option<String>) -> CallToolResponse {
    let requests: InputRequests = requests
        .into_iter()
        .map(|(key, request)| (key.to_string(), request))
        .collect();
    CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), state))
}

impl Fixture {
    /// A state for `tool` saying the call is at `round`.
    pub(super) fn seal(&self, tool: &str, round: &str) -> String {
        let options = SealOptions::new().associated_data(tool.as_bytes());
        self.states
            .seal_json_with(&json!({ "round": round }), &options)
            .expect("a JSON object seals")
    }

    /// The round of the state `sealed` for `tool`: `None` without a state, the JSON-RPC error
    /// `-32602` when it fails the integrity check.
    pub(super) fn round(
        &self,
        tool: &str,
        sealed: Option<&str>,
    ) -> Result<Option<String>, McpError> {
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let state: Value = self
            .states
            .open_json_with(sealed, tool.as_bytes())
            .map_err(|e| {
                McpError::invalid_params(
                    "requestState failed its integrity check",
                    Some(json!({ "reason": e.to_string() })),
                )
            })?;
        Ok(state
            .get("round")
            .and_then(Value::as_str)
            .map(str::to_string))
    }

    pub(super) fn call(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = request.name.as_ref();
        let responses = request.input_responses.clone().unwrap_or_default();
        let state = request.request_state.as_deref();
        match tool {
            "test_input_required_result_elicitation" => {
                match accepted(responses.get("user_name"), "name").and_then(Value::as_str) {
                    Some(name) => Ok(text(format!("Hello, {name}!"))),
                    None => Ok(ask(
                        vec![("user_name", form("What is your name?", "name", "string")?)],
                        None,
                    )),
                }
            }
            "test_input_required_result_sampling" => {
                match sampled(responses.get("capital_question")) {
                    Some(answer) => Ok(text(format!("The model said: {answer}"))),
                    None => Ok(ask(
                        vec![(
                            "capital_question",
                            sampling("What is the capital of France?", 100)?,
                        )],
                        None,
                    )),
                }
            }
            "test_input_required_result_list_roots" => {
                match root_uris(responses.get("client_roots")) {
                    Some(uris) => Ok(text(format!("roots: {}", uris.join(", ")))),
                    None => Ok(ask(vec![("client_roots", roots()?)], None)),
                }
            }
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                let round = self.round(tool, state)?;
                let ok = accepted(responses.get("confirm"), "ok").and_then(Value::as_bool);
                match (round.as_deref(), ok) {
                    (Some("confirm"), Some(ok)) => Ok(text(format!("state-ok: ok={ok}"))),
                    _ => Ok(ask(
                        vec![("confirm", form("Please confirm", "ok", "boolean")?)],
                        Some(self.seal(tool, "confirm")),
                    )),
                }
            }
            "test_input_required_result_multiple_inputs" => {
                let round = self.round(tool, state)?;
                let name = accepted(responses.get("user_name"), "name").and_then(Value::as_str);
                let greeting = sampled(responses.get("greeting"));
                let uris = root_uris(responses.get("client_roots"));
                match (round.as_deref(), name, greeting, uris) {
                    (Some("all"), Some(name), Some(greeting), Some(uris)) => Ok(text(format!(
                        "{greeting} {name}; roots: {}",
                        uris.join(", ")
                    ))),
                    _ => Ok(ask(
                        vec![
                            ("user_name", form("What is your name?", "name", "string")?),
                            ("greeting", sampling("Generate a greeting", 50)?),
                            ("client_roots", roots()?),
                        ],
                        Some(self.seal(tool, "all")),
                    )),
                }
            }
            "test_input_required_result_multi_round" => self.multi_round(&responses, state),
            "test_input_required_result_capabilities" => {
                let declared = context.meta.client_capabilities();
                let mut requests = Vec::new();
                if declared.as_ref().is_some_and(|c| c.elicitation.is_some()) {
                    requests.push(("user_name", form("What is your name?", "name", "string")?));
                }
                if declared.as_ref().is_some_and(|c| c.sampling.is_some()) {
                    requests.push((
                        "capital_question",
                        sampling("What is the capital of France?", 100)?,
                    ));
                }
                if requests.is_empty() || !responses.is_empty() {
                    return Ok(text("no input requested"));
                }
                Ok(ask(requests, None))
            }
            name => Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            )),
        }
    }

    /// `test_input_required_result_multi_round`: `step1`, then `step2`, then the result.
    pub(super) fn multi_round(
        &self,
        responses: &std::collections::BTreeMap<String, Value>,
        state: Option<&str>,
    ) -> Result<CallToolResponse, McpError> {
        const TOOL: &str = "test_input_required_result_multi_round";
        let round = self.round(TOOL, state)?;
        let step1 = || -> Result<CallToolResponse, McpError> {
            Ok(ask(
                vec![(
                    "step1",
                    form("Step 1: What is your name?", "name", "string")?,
                )],
                Some(self.seal(TOOL, "step1")),
            ))
        };
        match round.as_deref() {
            Some("step1") => {
                match accepted(responses.get("step1"), "name").and_then(Value::as_str) {
                    Some(name) => Ok(ask(
                        vec![(
                            "step2",
                            form("Step 2: What is your favorite color?", "color", "string")?,
                        )],
                        Some(self.seal(TOOL, &format!("step2:{name}"))),
                    )),
                    None => step1(),
                }
            }
            Some(round) if round.starts_with("step2:") => {
                let name = &round["step2:".len()..];
                match accepted(responses.get("step2"), "color").and_then(Value::as_str) {
                    Some(color) => Ok(text(format!("{name} likes {color}"))),
                    None => step1(),
                }
            }
            _ => step1(),
        }
    }
}
