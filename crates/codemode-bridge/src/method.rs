//! The bridge methods (the kinds of guest call into the host) and the members of the guest's
//! `tools` object they back: one list, which the prelude's `tools` object, the catalog's
//! conveniences and the host's missing-convenience answers all read.

use serde::{Deserialize, Serialize};

/// A bridge method: the kind of a guest call into the host (docs/contract/README.md#terms and docs/contract/guest.md#s4-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BridgeMethod {
    /// `tools.search(query, options?)`.
    Search,
    /// `tools.describe(id)`.
    Describe,
    /// `tools.call(id, input)`, resolving to `{tool, result}`.
    Call,
    /// `tools.callValue(id, input)` and convenience functions, resolving to `result.details`.
    CallValue,
    /// An `MCP.<server>.<tool>(input)` namespace call.
    Namespace,
    /// A `nodes` dispatch.
    Nodes,
    /// `yield_control(reason?)`.
    Yield,
}

impl BridgeMethod {
    /// Every method, in the order of the contract's list.
    pub const ALL: [BridgeMethod; 7] = [
        BridgeMethod::Search,
        BridgeMethod::Describe,
        BridgeMethod::Call,
        BridgeMethod::CallValue,
        BridgeMethod::Namespace,
        BridgeMethod::Nodes,
        BridgeMethod::Yield,
    ];

    /// The wire name (`"callValue"`, …), as used in bridge ids `bridge:<method>:<n>`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BridgeMethod::Search => "search",
            BridgeMethod::Describe => "describe",
            BridgeMethod::Call => "call",
            BridgeMethod::CallValue => "callValue",
            BridgeMethod::Namespace => "namespace",
            BridgeMethod::Nodes => "nodes",
            BridgeMethod::Yield => "yield",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(name: &str) -> Option<BridgeMethod> {
        BridgeMethod::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

/// The methods that are members of the guest's `tools` object (`tools.search`, `tools.describe`,
/// `tools.call`, `tools.callValue`), in that order (docs/contract/catalog.md#s3-4).
pub const TOOLS_MEMBERS: [BridgeMethod; 4] = [
    BridgeMethod::Search,
    BridgeMethod::Describe,
    BridgeMethod::Call,
    BridgeMethod::CallValue,
];

/// The names of [`TOOLS_MEMBERS`] (`["search", "describe", "call", "callValue"]`): no catalog
/// tool with one of these names gets a `tools.<name>` convenience (docs/contract/catalog.md#s3-4).
pub const TOOLS_MEMBER_NAMES: [&str; 4] = [
    TOOLS_MEMBERS[0].as_str(),
    TOOLS_MEMBERS[1].as_str(),
    TOOLS_MEMBERS[2].as_str(),
    TOOLS_MEMBERS[3].as_str(),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_members_are_the_first_four_methods_by_wire_name() {
        assert_eq!(
            TOOLS_MEMBER_NAMES,
            ["search", "describe", "call", "callValue"]
        );
        assert_eq!(TOOLS_MEMBERS, BridgeMethod::ALL[..4]);
        for name in TOOLS_MEMBER_NAMES {
            assert_eq!(
                BridgeMethod::parse(name).map(BridgeMethod::as_str),
                Some(name)
            );
        }
    }
}
