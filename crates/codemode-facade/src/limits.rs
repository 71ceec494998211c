//! Limit errors (issue 16): the contract's message, what hit the limit, the limit and the
//! `tools.codeMode` setting to change, so the model (or a person) knows how to fix it.

use codemode_runtime::VmError;

/// `too many pending code mode tool calls` (docs/contract/decisions.md#d4).
pub const TOO_MANY_PENDING: &str = "too many pending code mode tool calls";
/// `code mode output limit exceeded` (docs/contract/lifecycle.md#s5-5).
pub const OUTPUT_LIMIT_EXCEEDED: &str = "code mode output limit exceeded";
/// `code mode snapshot limit exceeded` (docs/contract/lifecycle.md#s5-6).
pub const SNAPSHOT_LIMIT_EXCEEDED: &str = "code mode snapshot limit exceeded";

/// `n` in decimal with a comma every three digits, as limit errors print sizes: `65536` →
/// `"65,536"`, `999` → `"999"`.
///
/// ```
/// assert_eq!(codemode_facade::limits::format_count(65_536), "65,536");
/// assert_eq!(codemode_facade::limits::format_count(999), "999");
/// assert_eq!(codemode_facade::limits::format_count(1_000_000), "1,000,000");
/// ```
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A limit error that says how to fix it (issue 16): the contract's message as its first
/// sentence, then what hit the limit, the limit and the setting to change, then optional advice:
///
/// `"<contract>. <measured>; <setting> is <limit> (tools.codeMode.<setting>).<advice>"`
///
/// e.g. `limit_message(OUTPUT_LIMIT_EXCEEDED, "The result is 66,412 bytes", "maxOutputBytes",
/// 65_536, "")` is `"code mode output limit exceeded. The result is 66,412 bytes;
/// maxOutputBytes is 65,536 (tools.codeMode.maxOutputBytes)."`. `advice` is appended as is
/// (start it with a space). Every limit error of the facade is built here; hosts that bound
/// their own buffers by a `tools.codeMode` setting should use it too, so all read alike.
pub fn limit_message(
    contract: &str,
    measured: &str,
    setting: &str,
    limit: u64,
    advice: &str,
) -> String {
    format!(
        "{contract}. {measured}; {setting} is {} (tools.codeMode.{setting}).{advice}",
        format_count(limit)
    )
}

/// What to do instead of returning too much (the model reads this).
const OUTPUT_ADVICE: &str = " Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).";

/// The output-limit error (docs/contract/lifecycle.md#s5-5) for a result of `size` bytes
/// (`JSON.stringify` of the output entries plus the value), or `None` when the guest stopped
/// buffering output once it passed `limit` (the exact size is then unknown).
pub fn output_limit_message(size: Option<u64>, limit: u64) -> String {
    let measured = match size {
        Some(size) => format!("The result is {} bytes", format_count(size)),
        None => "The output grew past the limit".to_string(),
    };
    limit_message(
        OUTPUT_LIMIT_EXCEEDED,
        &measured,
        "maxOutputBytes",
        limit,
        OUTPUT_ADVICE,
    )
}

/// The snapshot-limit error (docs/contract/lifecycle.md#s5-6) for a compressed snapshot of
/// `size` bytes against `limit`.
pub fn snapshot_limit_message(size: u64, limit: u64) -> String {
    limit_message(
        SNAPSHOT_LIMIT_EXCEEDED,
        &format!(
            "The run's snapshot is {} bytes compressed",
            format_count(size)
        ),
        "maxSnapshotBytes",
        limit,
        " Keep less data alive while tool calls are pending.",
    )
}

/// The pending-calls error (docs/contract/decisions.md#d4) for `count` pending bridge requests,
/// or `None` when the guest stopped queueing once it passed `limit`.
pub fn pending_limit_message(count: Option<u64>, limit: u64) -> String {
    let measured = match count {
        Some(count) => format!(
            "The program had {} tool calls pending at once",
            format_count(count)
        ),
        None => "The program started more tool calls at once than the limit".to_string(),
    };
    limit_message(
        TOO_MANY_PENDING,
        &measured,
        "maxPendingToolCalls",
        limit,
        " Start them in batches and await each batch before the next.",
    )
}

/// The timeout error (docs/contract/lifecycle.md#s5-7): `code mode timeout exceeded`, then the
/// budget `timeout_ms` of one `exec` or `wait` call and its setting.
pub fn timeout_message(timeout_ms: u64) -> String {
    limit_message(
        &VmError::Timeout.to_string(),
        "The program computed without waiting on a tool until the call's budget ran out",
        "timeoutMs",
        timeout_ms,
        "",
    )
}
