//! The source language of a cell, shared by the config (`tools.codeMode.languages`), source
//! preparation (`exec`'s `language`) and every host in between.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A guest source language: an entry of `tools.codeMode.languages` (docs/contract/config.md#s1) and the
/// `exec` input field `language` (docs/contract/surface.md#s2-2).
///
/// Serialises as the spec's lowercase names `"javascript"` / `"typescript"`; deserialising
/// accepts exactly those two strings (case-sensitive). Ordered JavaScript first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Language {
    /// `"javascript"`, the default of `exec`'s `language`.
    #[serde(rename = "javascript")]
    JavaScript,
    /// `"typescript"`: types are stripped before the module and shell checks (docs/contract/guest.md#s4-7).
    #[serde(rename = "typescript")]
    TypeScript,
}

impl Language {
    /// Both languages, in the spec's order (`["javascript", "typescript"]`).
    pub const ALL: [Language; 2] = [Language::JavaScript, Language::TypeScript];

    /// The names of [`Language::ALL`], `["javascript", "typescript"]`: the values `exec`'s
    /// `language` and `tools.codeMode.languages` accept.
    pub const NAMES: [&str; 2] = [Language::ALL[0].as_str(), Language::ALL[1].as_str()];

    /// The spec's name: `"javascript"` or `"typescript"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
        }
    }

    /// Parses the spec's name: exactly `"javascript"` or `"typescript"`; `None` for anything else
    /// (case-sensitive and untrimmed, as the reference: `"JavaScript"` is `None`).
    pub fn from_name(name: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

impl fmt::Display for Language {
    /// Writes [`Language::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Language;

    #[test]
    fn names_round_trip_exactly() {
        for language in Language::ALL {
            assert_eq!(Language::from_name(language.as_str()), Some(language));
            assert_eq!(language.to_string(), language.as_str());
            let json = serde_json::to_string(&language).unwrap();
            assert_eq!(json, format!("\"{}\"", language.as_str()));
            assert_eq!(serde_json::from_str::<Language>(&json).unwrap(), language);
        }
        assert_eq!(Language::from_name("JavaScript"), None);
        assert_eq!(Language::from_name(" javascript"), None);
        assert_eq!(Language::from_name("js"), None);
        assert!(serde_json::from_str::<Language>("\"TypeScript\"").is_err());
        assert!(Language::JavaScript < Language::TypeScript);
    }
}
