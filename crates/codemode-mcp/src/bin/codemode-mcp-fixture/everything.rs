//! The "everything server" half of `codemode-mcp-fixture` (see `main.rs`'s module documentation
//! and docs/mcp.md, "The everything-server scenarios through `serve` with code mode off"): the
//! test tools, prompts, resources, logging and completions the conformance suite's other server
//! scenarios call, as the suite's requirement texts describe them.

use super::*;

/// A 1x1 red PNG (`tools-call-image`, `resources-read-binary`, `prompts-get-with-image`).
pub(super) const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// A WAV of 8 silent 16-bit samples at 8 kHz (`tools-call-audio`).
pub(super) const SILENT_WAV: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// The tools of the everything server: name, description, input schema.
pub(super) const EVERYTHING_TOOLS: [(&str, &str, &str); 13] = [
    (
        "test_simple_text",
        "Returns a simple text response.",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_image_content",
        "Returns a 1x1 red PNG.",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_audio_content",
        "Returns a short silent WAV.",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_embedded_resource",
        "Returns an embedded text resource.",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_multiple_content_types",
        "Returns text, an image and an embedded resource.",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_tool_with_logging",
        "Sends three info log messages 50 ms apart.",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_error_handling",
        "Always answers a tool error.",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_tool_with_progress",
        "Reports progress 0, 50 and 100 of 100, 50 ms apart.",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_sampling",
        "Asks the client's model to answer `prompt` (sampling/createMessage).",
        r#"{"type": "object", "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}}, "required": ["prompt"]}"#,
    ),
    (
        "test_elicitation",
        "Asks the user for a username and an email (elicitation/create).",
        r#"{"type": "object", "properties": {"message": {"type": "string", "description": "The message to show the user"}}, "required": ["message"]}"#,
    ),
    (
        "test_elicitation_sep1034_defaults",
        "Elicits a form whose every primitive field has a default (SEP-1034).",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "test_elicitation_sep1330_enums",
        "Elicits a form with the five enum shapes (SEP-1330).",
        r#"{"type": "object", "properties": {}}"#,
    ),
    (
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        r##"{
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }"##,
    ),
];

/// A prompt's required arguments: name, description.
pub(super) type PromptArguments = &'static [(&'static str, &'static str)];

/// The prompts of the everything server: name, description, arguments.
pub(super) const EVERYTHING_PROMPTS: [(&str, &str, PromptArguments); 4] = [
    (
        "test_simple_prompt",
        "A simple prompt without arguments.",
        &[],
    ),
    (
        "test_prompt_with_arguments",
        "A prompt that names its two arguments.",
        &[
            ("arg1", "First test argument"),
            ("arg2", "Second test argument"),
        ],
    ),
    (
        "test_prompt_with_embedded_resource",
        "A prompt embedding the resource `resourceUri`.",
        &[("resourceUri", "URI of the resource to embed")],
    ),
    ("test_prompt_with_image", "A prompt with an image.", &[]),
];

/// The values `completion/complete` offers for `arg1` of `test_prompt_with_arguments`.
pub(super) const COMPLETIONS: [&str; 3] = ["paris", "park", "party"];

/// The template of the everything server's templated resource.
pub(super) const TEMPLATE: &str = "test://template/{id}/data";

/// A value of rmcp's model from its JSON (the suite's requirement texts are JSON).
pub(super) fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// A tool result from its JSON.
pub(super) fn result_json(value: Value) -> Result<CallToolResponse, McpError> {
    Ok(from_json::<CallToolResult>(value)?.into())
}

/// True when the request is on protocol 2026-07-28 or later, which sends no requests to the
/// client: sampling and elicitation are asked by MRTR (`input_required`) instead.
pub(super) fn current_revision(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The rank of a log level, `debug` lowest.
pub(super) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The `id` of a URI of the template `test://template/{id}/data`.
pub(super) fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// A prompt argument of `arguments` that must be a string.
pub(super) fn prompt_argument<'a>(
    arguments: &'a JsonObject,
    name: &str,
) -> Result<&'a str, McpError> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::invalid_params(format!("Missing required argument: {name}"), None))
}

impl Fixture {
    /// Sends `message` at `level` to the client unless `logging/setLevel` asked for less.
    pub(super) async fn log(
        &self,
        context: &RequestContext<RoleServer>,
        level: LoggingLevel,
        message: &str,
    ) {
        let threshold = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
        if threshold.is_some_and(|threshold| severity(level) < severity(threshold)) {
            return;
        }
        let mut param = LoggingMessageNotificationParam::new(level, json!(message));
        param.logger = Some("codemode-mcp-fixture".to_string());
        let _ = context.peer.notify_logging_message(param).await;
    }

    /// A call of one of the everything server's tools.
    pub(super) async fn everything_call(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.clone().unwrap_or_default();
        let declared = context.client_capabilities();
        let responses = request.input_responses.clone().unwrap_or_default();
        match request.name.as_ref() {
            "test_simple_text" => Ok(text("This is a simple text response for testing.")),
            "test_image_content" => result_json(json!({
                "content": [{"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}]
            })),
            "test_audio_content" => result_json(json!({
                "content": [{"type": "audio", "data": SILENT_WAV, "mimeType": "audio/wav"}]
            })),
            "test_embedded_resource" => result_json(json!({
                "content": [{"type": "resource", "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content."
                }}]
            })),
            "test_multiple_content_types" => result_json(json!({
                "content": [
                    {"type": "text", "text": "Multiple content types test:"},
                    {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"},
                    {"type": "resource", "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": json!({"test": "data", "value": 123}).to_string()
                    }}
                ]
            })),
            "test_tool_with_logging" => {
                self.log(context, LoggingLevel::Info, "Tool execution started")
                    .await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                self.log(context, LoggingLevel::Info, "Tool processing data")
                    .await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                self.log(context, LoggingLevel::Info, "Tool execution completed")
                    .await;
                Ok(text("Tool with logging executed: 3 log messages sent"))
            }
            "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )])
            .into()),
            "test_tool_with_progress" => {
                let token = context.meta.get_progress_token();
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    if let Some(token) = &token {
                        let param = ProgressNotificationParam::new(token.clone(), progress)
                            .with_total(100.0);
                        let _ = context.peer.notify_progress(param).await;
                    }
                }
                Ok(text("Tool with progress executed: 0, 50 and 100 of 100"))
            }
            "test_sampling" => {
                if declared.as_ref().is_none_or(|c| c.sampling.is_none()) {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(
                        "test_sampling needs a client that declares the sampling capability",
                    )])
                    .into());
                }
                let prompt = arguments
                    .get("prompt")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let params = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100
                });
                let answer = if current_revision(context) {
                    // No requests to a 2026-07-28 client: asked by MRTR.
                    match responses.get("sampling") {
                        Some(answer) => answer.clone(),
                        None => {
                            let asked =
                                json!({"method": "sampling/createMessage", "params": params});
                            return Ok(ask(vec![("sampling", input(asked)?)], None));
                        }
                    }
                } else {
                    let params: CreateMessageRequestParams = from_json(params)?;
                    let answer = context.peer.create_message(params).await.map_err(|e| {
                        McpError::internal_error(format!("sampling failed: {e}"), None)
                    })?;
                    serde_json::to_value(&answer).unwrap_or_default()
                };
                let said = answer["content"]["text"].as_str().unwrap_or_default();
                Ok(text(format!("LLM response: {said}")))
            }
            "test_elicitation" => {
                let message = arguments
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("Please provide your information");
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                self.elicit(context, &responses, message, schema, "User response")
                    .await
            }
            "test_elicitation_sep1034_defaults" => {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {
                            "type": "string",
                            "enum": ["active", "inactive", "pending"],
                            "default": "active"
                        },
                        "verified": {"type": "boolean", "default": true}
                    }
                });
                let message = "Please review the defaults (SEP-1034)";
                self.elicit(
                    context,
                    &responses,
                    message,
                    schema,
                    "Elicitation completed",
                )
                .await
            }
            "test_elicitation_sep1330_enums" => {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]},
                        "legacyEnum": {
                            "type": "string",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {
                            "type": "array",
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                        },
                        "titledMulti": {"type": "array", "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}}
                    }
                });
                let message = "Please choose (SEP-1330 enums)";
                self.elicit(
                    context,
                    &responses,
                    message,
                    schema,
                    "Elicitation completed",
                )
                .await
            }
            "json_schema_2020_12_tool" => Ok(text(format!(
                "json_schema_2020_12_tool called with {}",
                Value::Object(arguments)
            ))),
            name => Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            )),
        }
    }

    /// Elicits the form `schema` with `message` from the client and answers `<said>:
    /// action=<action>, content=<content JSON>`; `isError: true` when the client did not
    /// declare elicitation. A 2026-07-28 client (which cannot be sent requests) is asked by
    /// MRTR, under the key `elicitation` of `responses`.
    pub(super) async fn elicit(
        &self,
        context: &RequestContext<RoleServer>,
        responses: &std::collections::BTreeMap<String, Value>,
        message: &str,
        schema: Value,
        said: &str,
    ) -> Result<CallToolResponse, McpError> {
        let declared = context.client_capabilities();
        if declared.is_none_or(|c| c.elicitation.is_none()) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "this tool needs a client that declares the elicitation capability",
            )])
            .into());
        }
        let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
        let answer = if current_revision(context) {
            match responses.get("elicitation") {
                Some(answer) => answer.clone(),
                None => {
                    let asked = json!({"method": "elicitation/create", "params": params});
                    return Ok(ask(vec![("elicitation", input(asked)?)], None));
                }
            }
        } else {
            let params: ElicitRequestParams = from_json(params)?;
            let answer =
                context.peer.create_elicitation(params).await.map_err(|e| {
                    McpError::internal_error(format!("elicitation failed: {e}"), None)
                })?;
            serde_json::to_value(&answer).unwrap_or_default()
        };
        let action = answer["action"].as_str().unwrap_or_default();
        let content = answer.get("content").cloned().unwrap_or(Value::Null);
        Ok(text(format!("{said}: action={action}, content={content}")))
    }

    /// The everything server's prompt `name` with `arguments`; `None` for another name.
    pub(super) fn everything_prompt(
        &self,
        name: &str,
        arguments: &JsonObject,
    ) -> Option<Result<GetPromptResult, McpError>> {
        let messages = match name {
            "test_simple_prompt" => json!([{"role": "user", "content": {
                "type": "text", "text": "This is a simple prompt for testing."
            }}]),
            "test_prompt_with_arguments" => {
                let (arg1, arg2) = match (
                    prompt_argument(arguments, "arg1"),
                    prompt_argument(arguments, "arg2"),
                ) {
                    (Ok(arg1), Ok(arg2)) => (arg1, arg2),
                    (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
                };
                json!([{"role": "user", "content": {
                    "type": "text",
                    "text": format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
                }}])
            }
            "test_prompt_with_embedded_resource" => {
                let uri = match prompt_argument(arguments, "resourceUri") {
                    Ok(uri) => uri,
                    Err(e) => return Some(Err(e)),
                };
                json!([
                    {"role": "user", "content": {"type": "resource", "resource": {
                        "uri": uri,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing."
                    }}},
                    {"role": "user", "content": {
                        "type": "text", "text": "Please process the embedded resource above."
                    }}
                ])
            }
            "test_prompt_with_image" => json!([
                {"role": "user", "content": {
                    "type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"
                }},
                {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}
            ]),
            _ => return None,
        };
        Some(from_json(json!({ "messages": messages })))
    }

    /// The contents of the everything server's resource `uri`; `-32002` for another URI.
    pub(super) fn everything_resource(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        let contents = match uri {
            "test://static-text" => json!({
                "uri": uri,
                "mimeType": "text/plain",
                "text": "This is the content of the static text resource."
            }),
            "test://static-binary" => json!({
                "uri": uri, "mimeType": "image/png", "blob": RED_PIXEL_PNG
            }),
            "test://watched-resource" => json!({
                "uri": uri,
                "mimeType": "text/plain",
                "text": "This is the content of the watched resource."
            }),
            _ => match template_id(uri) {
                Some(id) => json!({
                    "uri": uri,
                    "mimeType": "application/json",
                    "text": json!({
                        "id": id, "templateTest": true, "data": format!("Data for ID: {id}")
                    })
                    .to_string()
                }),
                None => {
                    return Err(McpError::new(
                        ErrorCode::RESOURCE_NOT_FOUND,
                        "Resource not found",
                        Some(json!({ "uri": uri })),
                    ))
                }
            },
        };
        from_json(json!({ "contents": [contents] }))
    }
}
