//! The facade's fixed messages that are not limits (docs/contract/lifecycle.md#s5-2,
//! docs/contract/guest.md#s4-1).

/// `runId must be a non-empty string.`
pub const RUN_ID_REQUIRED: &str = "runId must be a non-empty string.";
/// `code mode promise is pending without host work` (docs/contract/guest.md#s4-1).
pub const PENDING_WITHOUT_HOST_WORK: &str = "code mode promise is pending without host work";
/// `restart-safe code mode cannot call namespace tools.` (docs/contract/lifecycle.md#s5-2).
pub const RESTART_SAFE_NAMESPACE: &str = "restart-safe code mode cannot call namespace tools.";
/// `restart-safe code mode cannot call side-effecting tools.` (docs/contract/lifecycle.md#s5-2).
pub const RESTART_SAFE_SIDE_EFFECTS: &str =
    "restart-safe code mode cannot call side-effecting tools.";
