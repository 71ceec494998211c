//! The bridge between the codemode guest (QuickJS in wasm) and its host.
//!
//! This crate owns the protocol both sides speak (`docs/guest-abi.md`):
//! - [`PRELUDE`], the JavaScript the guest evaluates once per VM image: it installs the guest
//!   globals (`ALL_TOOLS`, `tools`, `text`, `json`) and the JSON adapter (docs/contract/json.md#s6);
//! - [`abi`], the wire format of the guest ABI: the `cm_init`/`cm_start`/`cm_deliver` inputs and
//!   the report, serialised by one side and parsed by the other with the same types (the guest
//!   crate depends on this one), plus the code wrapper and the user script name;
//! - [`GuestReport`], the parsed and validated report the guest returns after every step;
//! - [`BridgeRequest`] and [`Delivery`], a guest call into the host and its settlement;
//! - [`OutputItem`], an entry of a result's `output` array (docs/contract/guest.md#output);
//! - [`ToolExecutor`], the trait a host implements to run catalog tools for nested calls.
//!
//! It depends only on serde, serde_json and thiserror, so hosts and tests can use it alone and it
//! builds for the wasm32-wasip1 guest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod abi;
pub use abi::{wrap_user_code, USER_SCRIPT_NAME, WRAPPER_PREFIX, WRAPPER_SUFFIX};

mod context;
pub use context::{ContextSection, RunContext};

mod executor;
pub use executor::{RunScope, ToolCall, ToolError, ToolErrorKind, ToolExecutor, ToolFuture};

pub mod js;

mod language;
pub use language::Language;

mod method;
pub use method::{BridgeMethod, TOOLS_MEMBERS, TOOLS_MEMBER_NAMES};

mod search_limits;
pub use search_limits::SearchLimits;

mod telemetry_vocab;
pub use telemetry_vocab::SourceCounts;

/// The guest prelude: a JavaScript function expression `(native) => internals`, evaluated once per
/// VM image before any user code (docs/guest-abi.md, "Prelude").
pub const PRELUDE: &str = include_str!("prelude.js");

/// One guest call into the host (docs/contract/guest.md#s4-3), validated from the guest's
/// [`abi::ReportRequest`]. The host keeps the ones the guest still waits for, in creation order,
/// and stores them in every snapshot (JSON `{id, method, args}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeRequest {
    /// `bridge:<method>:<n>`, one counter per method per run, starting at 1.
    pub id: String,
    /// What the guest asks for.
    pub method: BridgeMethod,
    /// The JSON-adapted arguments; `[]` when the guest's payload could not be parsed.
    pub args: Value,
}

/// An entry of a result's `output` array (docs/contract/guest.md#output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum OutputItem {
    /// From `text(value)`: the string itself, or the JSON text of the adapted value.
    Text {
        /// The text.
        text: String,
    },
    /// From `json(value)`: the JSON-adapted value.
    Json {
        /// The value.
        value: Value,
    },
}

/// The state of the guest's main promise after a step.
#[derive(Debug, Clone, PartialEq)]
pub enum GuestState {
    /// The program returned; `value` is JSON-adapted (`undefined` → `null`).
    Completed {
        /// The returned value.
        value: Value,
    },
    /// The program is still awaiting something.
    Pending,
    /// The program threw (or did not parse): `"<Name>: <message>"` plus backtrace frames.
    Failed {
        /// The error text; never starts with `at `.
        error: String,
    },
}

/// What the guest reports after `start` or `deliver` (docs/guest-abi.md, "Reports").
#[derive(Debug, Clone, PartialEq)]
pub struct GuestReport {
    /// The main promise's state.
    pub state: GuestState,
    /// Bridge requests the guest still waits for (created in any step, not yet delivered).
    pub outstanding: u32,
    /// Bridge requests created during this step, in creation order.
    pub requests: Vec<BridgeRequest>,
    /// Output items appended during this step, in guest order.
    pub output: Vec<OutputItem>,
    /// The step's output passed the run's `maxOutputBytes` inside the guest; its items were
    /// dropped there (the result fails with `output_limit_exceeded`).
    pub output_overflow: bool,
    /// The step created more requests than the run's `maxPendingToolCalls`; their arguments were
    /// dropped (the run fails with `too many pending code mode tool calls`).
    pub request_overflow: bool,
}

/// A report the guest sent that does not follow the protocol. The host turns it into an
/// `internal_error` result (docs/contract/decisions.md#d10); it never panics on one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The report is not JSON of the documented shape.
    #[error("malformed guest report: {0}")]
    Malformed(String),
    /// The guest reported that the host broke the protocol (its own words).
    #[error("guest rejected the call: {0}")]
    Rejected(String),
    /// A request id does not have the form `bridge:<method>:<n>` for its method.
    #[error("invalid code mode bridge id")]
    InvalidId,
    /// A request names a method outside [`BridgeMethod`]. Its `Display` is also what the guest
    /// throws for a method `cm_init` did not allow and what the host answers a method it does not
    /// serve (`nodes`).
    #[error("unsupported code mode bridge method")]
    UnsupportedMethod,
}

impl GuestReport {
    /// Parses and validates a report (UTF-8 JSON from guest memory).
    ///
    /// Errors: [`ProtocolError::Rejected`] when the guest reports a protocol error,
    /// [`ProtocolError::Malformed`] for anything that is not a valid report, and the id/method
    /// errors for requests that break docs/contract/guest.md#s4-3.
    pub fn parse(bytes: &[u8]) -> Result<GuestReport, ProtocolError> {
        let raw: abi::Report =
            serde_json::from_slice(bytes).map_err(|e| ProtocolError::Malformed(e.to_string()))?;
        GuestReport::from_wire(raw)
    }

    /// Validates a parsed [`abi::Report`] (see [`GuestReport::parse`] for the errors). A
    /// `ready` report (the answer to `cm_init`) is not a step report and is
    /// [`ProtocolError::Malformed`].
    pub fn from_wire(raw: abi::Report) -> Result<GuestReport, ProtocolError> {
        let malformed =
            |what: &str, e: serde_json::Error| ProtocolError::Malformed(format!("{what}: {e}"));
        let state = match raw.status {
            abi::ReportStatus::Completed => GuestState::Completed {
                value: match raw.value {
                    Some(json) => {
                        serde_json::from_str(json.get()).map_err(|e| malformed("value", e))?
                    }
                    None => Value::Null,
                },
            },
            abi::ReportStatus::Pending => GuestState::Pending,
            abi::ReportStatus::Failed => GuestState::Failed {
                error: raw.error.unwrap_or_default(),
            },
            abi::ReportStatus::ProtocolError => {
                return Err(ProtocolError::Rejected(raw.error.unwrap_or_default()));
            }
            abi::ReportStatus::Ready => {
                return Err(ProtocolError::Malformed(
                    "unexpected status \"ready\"".to_string(),
                ))
            }
        };
        let output = raw
            .output
            .iter()
            .map(|item| serde_json::from_str(item.get()).map_err(|e| malformed("output item", e)))
            .collect::<Result<Vec<OutputItem>, _>>()?;
        let mut requests = Vec::with_capacity(raw.requests.len());
        for r in raw.requests {
            let method = BridgeMethod::parse(&r.method).ok_or(ProtocolError::UnsupportedMethod)?;
            if !valid_bridge_id(&r.id, method) {
                return Err(ProtocolError::InvalidId);
            }
            // docs/contract/guest.md#s4-3: an argument payload the host cannot parse counts as [].
            let args = serde_json::from_str(&r.args).unwrap_or_else(|_| Value::Array(Vec::new()));
            requests.push(BridgeRequest {
                id: r.id,
                method,
                args,
            });
        }
        Ok(GuestReport {
            state,
            outstanding: raw.outstanding,
            requests,
            output,
            output_overflow: raw.output_overflow,
            request_overflow: raw.request_overflow,
        })
    }
}

/// True when `id` is `bridge:<method>:<n>` with `n` a positive integer without leading zeros
/// (docs/contract/guest.md#s4-3: `^bridge:[A-Za-z]+:[1-9]\d*$` with the prefix of its own method).
pub fn valid_bridge_id(id: &str, method: BridgeMethod) -> bool {
    let Some(rest) = id.strip_prefix("bridge:") else {
        return false;
    };
    let Some(n) = rest
        .strip_prefix(method.as_str())
        .and_then(|r| r.strip_prefix(':'))
    else {
        return false;
    };
    let mut chars = n.chars();
    matches!(chars.next(), Some('1'..='9')) && chars.all(|c| c.is_ascii_digit())
}

/// The settlement of one bridge request: what host work sends back when it finishes, and what
/// the host delivers into the guest ([`Delivery::to_guest_input`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The request's bridge id.
    pub id: String,
    /// `Ok(value)` resolves the guest promise with `value`; `Err(message)` rejects it with a
    /// guest-realm `new Error(message)` (docs/contract/guest.md#s4-3, "Settlement").
    pub outcome: Result<Value, String>,
}

impl Delivery {
    /// The wire form: [`abi::DeliverInput::Resolve`] with the value's JSON text, or
    /// [`abi::DeliverInput::Reject`] with the message. Values are copied as text, so later
    /// mutation on either side has no effect.
    pub fn to_wire(&self) -> abi::DeliverInput<'_> {
        let id = std::borrow::Cow::Borrowed(self.id.as_str());
        match &self.outcome {
            Ok(value) => abi::DeliverInput::Resolve {
                id,
                json: std::borrow::Cow::Owned(
                    serde_json::to_string(value).unwrap_or_else(|_| "null".into()),
                ),
            },
            Err(message) => abi::DeliverInput::Reject {
                id,
                error: std::borrow::Cow::Borrowed(message),
            },
        }
    }

    /// The guest's `cm_deliver` input: [`Delivery::to_wire`] as JSON bytes.
    pub fn to_guest_input(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_wire()).unwrap_or_default()
    }
}

/// Counts per method, handy for telemetry and tests.
pub fn count_by_method(requests: &[BridgeRequest]) -> BTreeMap<BridgeMethod, usize> {
    let mut counts = BTreeMap::new();
    for r in requests {
        *counts.entry(r.method).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_ids() {
        assert!(valid_bridge_id(
            "bridge:callValue:1",
            BridgeMethod::CallValue
        ));
        assert!(valid_bridge_id("bridge:call:120", BridgeMethod::Call));
        assert!(!valid_bridge_id("bridge:call:0", BridgeMethod::Call));
        assert!(!valid_bridge_id("bridge:call:01", BridgeMethod::Call));
        assert!(!valid_bridge_id("bridge:call:", BridgeMethod::Call));
        assert!(!valid_bridge_id("bridge:callValue:1", BridgeMethod::Call));
        assert!(!valid_bridge_id("bridge:call:1x", BridgeMethod::Call));
        assert!(!valid_bridge_id("x:call:1", BridgeMethod::Call));
    }

    #[test]
    fn report_parsing() {
        let r = GuestReport::parse(
            br#"{"status":"pending","outstanding":1,"requests":[{"id":"bridge:call:1","method":"call","args":"{\"id\":\"x\"}"}],"output":[{"type":"text","text":"hi"}]}"#,
        )
        .unwrap();
        assert_eq!(r.state, GuestState::Pending);
        assert_eq!(r.outstanding, 1);
        assert_eq!(r.requests[0].args, serde_json::json!({"id": "x"}));
        assert_eq!(
            r.output,
            vec![OutputItem::Text {
                text: "hi".to_string()
            }]
        );
        let bad_args = GuestReport::parse(
            br#"{"status":"pending","requests":[{"id":"bridge:call:1","method":"call","args":"{"}]}"#,
        )
        .unwrap();
        assert_eq!(bad_args.requests[0].args, serde_json::json!([]));
        assert_eq!(
            GuestReport::parse(br#"{"status":"pending","requests":[{"id":"bridge:call:1","method":"exec","args":"[]"}]}"#),
            Err(ProtocolError::UnsupportedMethod)
        );
        assert_eq!(
            GuestReport::parse(br#"{"status":"pending","requests":[{"id":"bridge:call:1","method":"callValue","args":"[]"}]}"#),
            Err(ProtocolError::InvalidId)
        );
        assert!(matches!(
            GuestReport::parse(b"not json"),
            Err(ProtocolError::Malformed(_))
        ));
        assert_eq!(
            GuestReport::parse(br#"{"status":"protocol_error","error":"boom"}"#),
            Err(ProtocolError::Rejected("boom".into()))
        );
    }

    #[test]
    fn delivery_input() {
        let d = Delivery {
            id: "bridge:call:1".into(),
            outcome: Ok(serde_json::json!({"b": 1, "a": [true]})),
        };
        assert_eq!(
            String::from_utf8(d.to_guest_input()).unwrap(),
            r#"{"outcome":"resolve","id":"bridge:call:1","json":"{\"b\":1,\"a\":[true]}"}"#
        );
        let e = Delivery {
            id: "bridge:call:2".into(),
            outcome: Err("fast failure".into()),
        };
        assert_eq!(
            String::from_utf8(e.to_guest_input()).unwrap(),
            r#"{"outcome":"reject","id":"bridge:call:2","error":"fast failure"}"#
        );
    }
}

/// The nested tool-call id `tool_search_code:<parent>:<tool name>:<seq>` (docs/contract/catalog.md#s3-5):
/// `parent` has every run of characters outside `[A-Za-z0-9_.:-]` replaced by `_` and is cut to
/// 120 characters.
pub fn nested_tool_call_id(parent: &str, tool_name: &str, seq: u64) -> String {
    let mut clean = String::with_capacity(parent.len().min(120));
    let mut in_bad_run = false;
    for c in parent.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-') {
            clean.push(c);
            in_bad_run = false;
        } else if !in_bad_run {
            clean.push('_');
            in_bad_run = true;
        }
    }
    let clean: String = clean.chars().take(120).collect();
    format!("tool_search_code:{clean}:{tool_name}:{seq}")
}

#[cfg(test)]
mod nested_id_tests {
    use super::nested_tool_call_id;

    #[test]
    fn sanitised_and_cut() {
        assert_eq!(
            nested_tool_call_id("call_1", "read", 3),
            "tool_search_code:call_1:read:3"
        );
        assert_eq!(
            nested_tool_call_id("a b\u{e9}/c", "x", 1),
            "tool_search_code:a_b_c:x:1"
        );
        assert_eq!(
            nested_tool_call_id("a  /b", "x", 1),
            "tool_search_code:a_b:x:1"
        );
        let long = "z".repeat(300);
        assert_eq!(
            nested_tool_call_id(&long, "t", 2),
            format!("tool_search_code:{}:t:2", "z".repeat(120))
        );
    }
}
