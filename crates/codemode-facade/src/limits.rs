//! Limit errors (issue 16): [`LimitExceeded`] says the contract's message, what hit the limit,
//! the limit and the `tools.codeMode` setting to change, so the model (or a person) knows how to
//! fix it.

use std::fmt;

use codemode_runtime::VmError;

use crate::result::ErrorCode;

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

/// A `tools.codeMode` setting a run can exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitSetting {
    /// `maxOutputBytes` (docs/contract/lifecycle.md#s5-5).
    MaxOutputBytes,
    /// `maxSnapshotBytes` (docs/contract/lifecycle.md#s5-6).
    MaxSnapshotBytes,
    /// `maxPendingToolCalls` (docs/contract/decisions.md#d4).
    MaxPendingToolCalls,
    /// `timeoutMs`: the budget of one `exec` or `wait` call (docs/contract/lifecycle.md#s5-7).
    TimeoutMs,
}

impl LimitSetting {
    /// The setting's JSON name under `tools.codeMode` (`"maxOutputBytes"`, …).
    pub fn name(self) -> &'static str {
        match self {
            LimitSetting::MaxOutputBytes => "maxOutputBytes",
            LimitSetting::MaxSnapshotBytes => "maxSnapshotBytes",
            LimitSetting::MaxPendingToolCalls => "maxPendingToolCalls",
            LimitSetting::TimeoutMs => "timeoutMs",
        }
    }

    /// Writes the contract's message for exceeding it: [`OUTPUT_LIMIT_EXCEEDED`],
    /// [`SNAPSHOT_LIMIT_EXCEEDED`], [`TOO_MANY_PENDING`], or `code mode timeout exceeded` (the
    /// `Display` of [`VmError::Timeout`], its one copy).
    fn write_contract_message(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitSetting::MaxOutputBytes => f.write_str(OUTPUT_LIMIT_EXCEEDED),
            LimitSetting::MaxSnapshotBytes => f.write_str(SNAPSHOT_LIMIT_EXCEEDED),
            LimitSetting::MaxPendingToolCalls => f.write_str(TOO_MANY_PENDING),
            LimitSetting::TimeoutMs => write!(f, "{}", VmError::Timeout),
        }
    }

    /// The result's error code: `output_limit_exceeded`, `snapshot_limit_exceeded`,
    /// `invalid_input` (too many pending calls) or `timeout`.
    pub fn error_code(self) -> ErrorCode {
        match self {
            LimitSetting::MaxOutputBytes => ErrorCode::OutputLimitExceeded,
            LimitSetting::MaxSnapshotBytes => ErrorCode::SnapshotLimitExceeded,
            LimitSetting::MaxPendingToolCalls => ErrorCode::InvalidInput,
            LimitSetting::TimeoutMs => ErrorCode::Timeout,
        }
    }
}

/// A run exceeded the `tools.codeMode` setting `setting`, whose value is `limit`, with `size`.
///
/// `Display` is the limit error the model reads: the contract's message as its first sentence,
/// then what hit the limit, the limit and the setting to change, then advice:
///
/// `"<contract>. <measured>; <setting> is <limit> (tools.codeMode.<setting>).<advice>"`
///
/// ```
/// use codemode_facade::limits::LimitExceeded;
///
/// assert_eq!(
///     LimitExceeded::output(Some(66_412), 65_536).to_string(),
///     "code mode output limit exceeded. The result is 66,412 bytes; maxOutputBytes is 65,536 \
///      (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer \
///      needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`)."
/// );
/// ```
///
/// Every limit error of the facade is one of these; hosts that bound their own buffers by a
/// `tools.codeMode` setting should use it too, so all read alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub struct LimitExceeded {
    /// The setting's value: bytes (`maxOutputBytes`, `maxSnapshotBytes`), tool calls
    /// (`maxPendingToolCalls`) or milliseconds (`timeoutMs`).
    pub limit: u64,
    /// What was measured against it, in the same unit: the result's bytes (`JSON.stringify` of
    /// the output entries plus the value), the compressed snapshot's bytes, or the pending
    /// calls. `None` when the guest stopped counting once it passed the limit (the exact size is
    /// then unknown), and always for `timeoutMs`.
    pub size: Option<u64>,
    /// The setting exceeded.
    pub setting: LimitSetting,
}

impl LimitExceeded {
    /// The output-limit error for a result of `size` bytes against `limit` (`maxOutputBytes`).
    pub fn output(size: Option<u64>, limit: u64) -> Self {
        LimitExceeded {
            limit,
            size,
            setting: LimitSetting::MaxOutputBytes,
        }
    }

    /// The snapshot-limit error for a compressed snapshot of `size` bytes against `limit`
    /// (`maxSnapshotBytes`).
    pub fn snapshot(size: u64, limit: u64) -> Self {
        LimitExceeded {
            limit,
            size: Some(size),
            setting: LimitSetting::MaxSnapshotBytes,
        }
    }

    /// The pending-calls error for `count` pending bridge requests against `limit`
    /// (`maxPendingToolCalls`).
    pub fn pending(count: Option<u64>, limit: u64) -> Self {
        LimitExceeded {
            limit,
            size: count,
            setting: LimitSetting::MaxPendingToolCalls,
        }
    }

    /// The timeout error for a call whose budget was `timeout_ms` (`timeoutMs`).
    pub fn timeout(timeout_ms: u64) -> Self {
        LimitExceeded {
            limit: timeout_ms,
            size: None,
            setting: LimitSetting::TimeoutMs,
        }
    }

    /// The result's error code ([`LimitSetting::error_code`]).
    pub fn error_code(&self) -> ErrorCode {
        self.setting.error_code()
    }
}

/// What to do instead of returning too much (the model reads this).
const OUTPUT_ADVICE: &str = " Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).";

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (measured, advice) = match (self.setting, self.size) {
            (LimitSetting::MaxOutputBytes, Some(size)) => (
                format!("The result is {} bytes", format_count(size)),
                OUTPUT_ADVICE,
            ),
            (LimitSetting::MaxOutputBytes, None) => {
                ("The output grew past the limit".to_string(), OUTPUT_ADVICE)
            }
            (LimitSetting::MaxSnapshotBytes, size) => (
                match size {
                    Some(size) => format!(
                        "The run's snapshot is {} bytes compressed",
                        format_count(size)
                    ),
                    None => "The run's snapshot grew past the limit".to_string(),
                },
                " Keep less data alive while tool calls are pending.",
            ),
            (LimitSetting::MaxPendingToolCalls, Some(count)) => (
                format!(
                    "The program had {} tool calls pending at once",
                    format_count(count)
                ),
                " Start them in batches and await each batch before the next.",
            ),
            (LimitSetting::MaxPendingToolCalls, None) => (
                "The program started more tool calls at once than the limit".to_string(),
                " Start them in batches and await each batch before the next.",
            ),
            (LimitSetting::TimeoutMs, _) => (
                "The program computed without waiting on a tool until the call's budget ran out"
                    .to_string(),
                "",
            ),
        };
        let setting = self.setting.name();
        self.setting.write_contract_message(f)?;
        write!(
            f,
            ". {measured}; {setting} is {} (tools.codeMode.{setting}).{advice}",
            format_count(self.limit)
        )
    }
}
