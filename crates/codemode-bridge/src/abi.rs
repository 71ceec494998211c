//! The guest ABI's wire format (docs/guest-abi.md, "Inputs" and "Status codes and reports").
//!
//! The host (`codemode-runtime`) and the guest (`codemode-guest`, compiled to wasm32-wasip1)
//! serialise and parse these same types with `serde_json`, so every input and the report are
//! written once, here:
//! - [`InitInput`] for `cm_init`, [`StartInput`] for `cm_start`, [`DeliverInput`] for
//!   `cm_deliver` (the host writes them, the guest reads them);
//! - [`Report`], the JSON every call leaves behind (the guest writes it, the host reads it and
//!   validates it into a [`crate::GuestReport`]);
//! - [`wrap_user_code`] and [`USER_SCRIPT_NAME`], how the guest evaluates the user's code.
//!
//! Text fields are [`Cow`]s so the host can serialise borrowed data without copying; parsing
//! always yields owned strings. JSON values that only pass through a side stay JSON text
//! ([`RawValue`] or a `String` holding JSON), so neither side builds a value tree it does not
//! need.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::method::BridgeMethod;

/// Script name under which the guest evaluates the wrapped user code; backtraces name it
/// (docs/contract/guest.md#s4-1).
pub const USER_SCRIPT_NAME: &str = "openclaw-code-mode:user.js";

/// Script name of the prelude; the guest drops its frames from error texts.
pub const PRELUDE_SCRIPT_NAME: &str = "codemode:prelude.js";

/// The text the guest puts before the user's code (docs/contract/guest.md#s4-1 "Wrapping"): `(async () => {`
/// and a newline. The code is a function body, so top-level `await` and `return` work; backtrace
/// line numbers are one higher than the user's.
pub const WRAPPER_PREFIX: &str = "(async () => {\n";

/// The text the guest puts after the user's code (docs/contract/guest.md#s4-1): a newline and `})()`.
pub const WRAPPER_SUFFIX: &str = "\n})()";

/// The user's code exactly as the guest evaluates it: `(async () => {\n<code>\n})()`, a new
/// string of `code.len() + 20` bytes. Evaluating it yields the main promise.
pub fn wrap_user_code(code: &str) -> String {
    let mut wrapped =
        String::with_capacity(WRAPPER_PREFIX.len() + code.len() + WRAPPER_SUFFIX.len());
    wrapped.push_str(WRAPPER_PREFIX);
    wrapped.push_str(code);
    wrapped.push_str(WRAPPER_SUFFIX);
    wrapped
}

/// Input of `cm_init`: JSON `{prelude, methods, memoryLimitBytes, maxStackBytes}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitInput<'a> {
    /// The prelude source ([`crate::PRELUDE`]), evaluated once under [`PRELUDE_SCRIPT_NAME`].
    pub prelude: Cow<'a, str>,
    /// The bridge methods the guest may issue; a request for any other method throws in the
    /// guest (`unsupported code mode bridge method`).
    pub methods: Vec<BridgeMethod>,
    /// The QuickJS heap limit in bytes, enforced by the guest's allocator.
    pub memory_limit_bytes: u64,
    /// QuickJS's stack limit in bytes (`JS_SetMaxStackSize`), below the shadow stack's size.
    pub max_stack_bytes: u64,
}

/// Input of `cm_start`: JSON `{code, context, memoryLimitBytes, maxOutputBytes, maxRequests}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartInput<'a> {
    /// The prepared JavaScript: a function body, wrapped with [`wrap_user_code`] and evaluated
    /// under [`USER_SCRIPT_NAME`].
    pub code: Cow<'a, str>,
    /// The run context as JSON text, handed to the prelude's `setup`: `{tools: [compact
    /// entries], apiFiles: [{path, description, bytes, content}], mcp: {paths: [[segment, …]],
    /// serverNames: [[identifier, serverName]]}}`.
    pub context: Cow<'a, str>,
    /// The run's QuickJS heap limit in bytes (`memoryLimitBytes`).
    pub memory_limit_bytes: u64,
    /// Output bytes one step may buffer (`maxOutputBytes`); past it the step reports
    /// [`Report::output_overflow`] and drops the items.
    pub max_output_bytes: u64,
    /// Bridge requests one step may create (`maxPendingToolCalls`); past it the step reports
    /// [`Report::request_overflow`] and drops their arguments.
    pub max_requests: u64,
}

/// Input of `cm_deliver`: the settlement of one bridge request, JSON
/// `{"outcome":"resolve","id","json"}` or `{"outcome":"reject","id","error"}`.
/// Built by the host from a [`crate::Delivery`] ([`crate::Delivery::to_guest_input`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum DeliverInput<'a> {
    /// Resolves the request's promise with `JSON.parse(json)`.
    Resolve {
        /// The request's bridge id, `bridge:<method>:<n>`.
        id: Cow<'a, str>,
        /// The value's JSON text (copied as text: later mutation on either side has no effect).
        json: Cow<'a, str>,
    },
    /// Rejects the request's promise with a guest-realm `new Error(error)`.
    Reject {
        /// The request's bridge id, `bridge:<method>:<n>`.
        id: Cow<'a, str>,
        /// The error message.
        error: Cow<'a, str>,
    },
}

impl DeliverInput<'_> {
    /// The bridge id of the settled request.
    pub fn id(&self) -> &str {
        match self {
            DeliverInput::Resolve { id, .. } | DeliverInput::Reject { id, .. } => id,
        }
    }
}

/// What a report says about the call that left it; also the call's return value
/// ([`ReportStatus::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// `cm_init` succeeded (status code 0).
    Ready,
    /// The main promise fulfilled; the report carries `value` (status code 0).
    Completed,
    /// The main promise is still pending (status code 1).
    Pending,
    /// The main promise rejected or evaluation threw; the report carries `error` (status code 2).
    Failed,
    /// The host broke the protocol (bad input, call out of order); the report carries `error`
    /// in the guest's words (status code -1).
    ProtocolError,
}

impl ReportStatus {
    /// The status code the `cm_*` export returns with this report: 0 ready/completed,
    /// 1 pending, 2 failed, -1 protocol error.
    pub const fn code(self) -> i32 {
        match self {
            ReportStatus::Ready | ReportStatus::Completed => 0,
            ReportStatus::Pending => 1,
            ReportStatus::Failed => 2,
            ReportStatus::ProtocolError => -1,
        }
    }
}

/// A bridge request as the guest records it in a [`Report`]: `{id, method, args}` with the
/// arguments as JSON text. The host validates it into a [`crate::BridgeRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportRequest {
    /// `bridge:<method>:<n>`; ids count per method from 1.
    pub id: String,
    /// The method's wire name ([`BridgeMethod::as_str`]). Kept as text so the host can tell an
    /// unknown method ([`crate::ProtocolError::UnsupportedMethod`]) from a malformed report.
    pub method: String,
    /// The JSON-adapted arguments as JSON text; the host treats text it cannot parse as `[]`
    /// (docs/contract/guest.md#s4-3).
    pub args: String,
}

/// The JSON report every `cm_*` call leaves (`cm_report_ptr`/`cm_report_len`):
/// `{status, value?, error?, outstanding, requests, output, outputOverflow, requestOverflow}`.
///
/// The guest serialises it, the host parses it with [`crate::GuestReport::parse`], which also
/// checks request ids and methods. Fields other than `status` default when absent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// What happened.
    pub status: ReportStatus,
    /// With [`ReportStatus::Completed`]: the JSON adapter's result (docs/contract/json.md#s6), JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Box<RawValue>>,
    /// With [`ReportStatus::Failed`]: `"<Name>: <message>"` plus backtrace frames, never
    /// starting with `at `. With [`ReportStatus::ProtocolError`]: what the host did wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Requests created in any call and not yet delivered.
    #[serde(default)]
    pub outstanding: u32,
    /// Requests created during this call, in creation order.
    #[serde(default)]
    pub requests: Vec<ReportRequest>,
    /// `text`/`json` output items appended during this call, each the JSON text of an
    /// [`crate::OutputItem`].
    #[serde(default)]
    pub output: Vec<Box<RawValue>>,
    /// The call's output passed `maxOutputBytes`; its items were dropped.
    #[serde(default)]
    pub output_overflow: bool,
    /// The call created more than `maxRequests` requests; their arguments were dropped.
    #[serde(default)]
    pub request_overflow: bool,
}

impl Report {
    /// A report with `status` and every other field empty.
    pub fn new(status: ReportStatus) -> Report {
        Report {
            status,
            value: None,
            error: None,
            outstanding: 0,
            requests: Vec::new(),
            output: Vec::new(),
            output_overflow: false,
            request_overflow: false,
        }
    }

    /// `{"status":"protocol_error","error":<message>}` (and empty fields).
    pub fn protocol_error(message: impl Into<String>) -> Report {
        Report {
            error: Some(message.into()),
            ..Report::new(ReportStatus::ProtocolError)
        }
    }
}

#[cfg(test)]
mod tests {
    //! Host and guest agree on the wire format: every type survives serde_json both ways, and
    //! the bytes the guest writes are what the host's [`crate::GuestReport::parse`] accepts.
    use super::*;
    use crate::{Delivery, GuestReport, GuestState, OutputItem};

    fn round_trip<T>(value: &T) -> T
    where
        T: Serialize + for<'de> Deserialize<'de>,
    {
        let bytes = serde_json::to_vec(value).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn init_input_round_trip() {
        let input = InitInput {
            prelude: Cow::Borrowed(crate::PRELUDE),
            methods: BridgeMethod::ALL.to_vec(),
            memory_limit_bytes: 64 << 20,
            max_stack_bytes: 7 << 20,
        };
        assert_eq!(round_trip(&input), input);
        let json: serde_json::Value = serde_json::to_value(&input).unwrap();
        assert_eq!(
            json["methods"],
            serde_json::json!([
                "search",
                "describe",
                "call",
                "callValue",
                "namespace",
                "nodes",
                "yield"
            ])
        );
        assert_eq!(json["memoryLimitBytes"], 64 << 20);
        assert_eq!(json["maxStackBytes"], 7 << 20);
    }

    #[test]
    fn start_input_round_trip() {
        let input = StartInput {
            code: Cow::Borrowed("return \"\u{e9}\\n\";"),
            context: Cow::Borrowed(r#"{"tools":[],"apiFiles":[],"mcp":{"paths":[]}}"#),
            memory_limit_bytes: 1,
            max_output_bytes: 2,
            max_requests: 3,
        };
        assert_eq!(round_trip(&input), input);
        let keys: Vec<String> = match serde_json::to_value(&input).unwrap() {
            serde_json::Value::Object(map) => map.keys().cloned().collect(),
            other => panic!("not an object: {other}"),
        };
        assert_eq!(
            keys,
            [
                "code",
                "context",
                "memoryLimitBytes",
                "maxOutputBytes",
                "maxRequests"
            ]
        );
    }

    #[test]
    fn deliver_input_round_trip() {
        let ok = Delivery {
            id: "bridge:call:1".into(),
            outcome: Ok(serde_json::json!({"a": [1, "\u{fffd}"]})),
        };
        let parsed: DeliverInput<'static> = serde_json::from_slice(&ok.to_guest_input()).unwrap();
        assert_eq!(parsed, ok.to_wire());
        assert_eq!(parsed.id(), "bridge:call:1");
        match parsed {
            DeliverInput::Resolve { json, .. } => assert_eq!(
                serde_json::from_str::<serde_json::Value>(&json).unwrap(),
                serde_json::json!({"a": [1, "\u{fffd}"]})
            ),
            other => panic!("expected resolve: {other:?}"),
        }
        let err = Delivery {
            id: "bridge:search:2".into(),
            outcome: Err("no \"such\" tool".into()),
        };
        let parsed: DeliverInput<'static> = serde_json::from_slice(&err.to_guest_input()).unwrap();
        assert_eq!(
            parsed,
            DeliverInput::Reject {
                id: "bridge:search:2".into(),
                error: "no \"such\" tool".into(),
            }
        );
    }

    #[test]
    fn report_round_trip_and_host_parse() {
        let raw = |s: &str| RawValue::from_string(s.to_string()).unwrap();
        let report = Report {
            status: ReportStatus::Completed,
            value: Some(raw(r#"{"x":[1,2]}"#)),
            error: None,
            outstanding: 1,
            requests: vec![ReportRequest {
                id: "bridge:callValue:1".into(),
                method: BridgeMethod::CallValue.as_str().into(),
                args: r#"{"id":"t","input":{}}"#.into(),
            }],
            output: vec![
                raw(r#"{"type":"text","text":"hi"}"#),
                raw(r#"{"type":"json","value":{"k":null}}"#),
            ],
            output_overflow: false,
            request_overflow: true,
        };
        let bytes = serde_json::to_vec(&report).unwrap();
        let again: Report = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(serde_json::to_vec(&again).unwrap(), bytes);

        let parsed = GuestReport::parse(&bytes).unwrap();
        assert_eq!(
            parsed.state,
            GuestState::Completed {
                value: serde_json::json!({"x": [1, 2]})
            }
        );
        assert_eq!(parsed.outstanding, 1);
        assert_eq!(parsed.requests.len(), 1);
        assert_eq!(parsed.requests[0].method, BridgeMethod::CallValue);
        assert_eq!(
            parsed.requests[0].args,
            serde_json::json!({"id": "t", "input": {}})
        );
        assert_eq!(
            parsed.output,
            vec![
                OutputItem::Text { text: "hi".into() },
                OutputItem::Json {
                    value: serde_json::json!({"k": null})
                }
            ]
        );
        assert!(!parsed.output_overflow);
        assert!(parsed.request_overflow);

        // A bridge request survives the snapshot host table's JSON unchanged.
        let request = round_trip(&parsed.requests[0]);
        assert_eq!(request, parsed.requests[0]);
    }

    #[test]
    fn status_reports() {
        let failed = Report {
            error: Some("Error: boom\n    at <anonymous> (openclaw-code-mode:user.js:2)".into()),
            ..Report::new(ReportStatus::Failed)
        };
        let parsed = GuestReport::parse(&serde_json::to_vec(&failed).unwrap()).unwrap();
        assert_eq!(
            parsed.state,
            GuestState::Failed {
                error: "Error: boom\n    at <anonymous> (openclaw-code-mode:user.js:2)".into()
            }
        );
        let rejected = serde_json::to_vec(&Report::protocol_error("not started")).unwrap();
        assert_eq!(
            String::from_utf8(rejected.clone()).unwrap(),
            r#"{"status":"protocol_error","error":"not started","outstanding":0,"requests":[],"output":[],"outputOverflow":false,"requestOverflow":false}"#
        );
        assert_eq!(
            GuestReport::parse(&rejected),
            Err(crate::ProtocolError::Rejected("not started".into()))
        );
        let ready = serde_json::to_vec(&Report::new(ReportStatus::Ready)).unwrap();
        assert!(matches!(
            GuestReport::parse(&ready),
            Err(crate::ProtocolError::Malformed(_))
        ));
        assert_eq!(
            [
                ReportStatus::Ready,
                ReportStatus::Completed,
                ReportStatus::Pending,
                ReportStatus::Failed,
                ReportStatus::ProtocolError
            ]
            .map(ReportStatus::code),
            [0, 0, 1, 2, -1]
        );
    }

    #[test]
    fn wrapper() {
        assert_eq!(
            wrap_user_code("return 1;"),
            "(async () => {\nreturn 1;\n})()"
        );
        assert_eq!(
            wrap_user_code("x").len(),
            "x".len() + WRAPPER_PREFIX.len() + WRAPPER_SUFFIX.len()
        );
    }
}
