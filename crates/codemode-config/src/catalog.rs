//! Provider catalog tiers: `compat.codeMode` on model entries, shared-model grouping and its
//! validation, and the bundled catalog data (docs/contract/config.md#compat-flag,
//! docs/contract/config.md#preferred-models, docs/contract/config.md#shared-models).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::OnceLock;

/// A model's code-mode tier, `compat.codeMode` in its provider catalog entry. Serialised as
/// `"preferred"` / `"capable"`; an absent flag is `None` wherever a tier is optional, and behaves
/// like `"capable"`. There is no "unsupported" tier: a model without tool support can never use
/// code mode ([`ModelSupport::supports_tools`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeModeTier {
    /// Reliably writes short orchestration programs: `enabled: "auto"` engages code mode.
    Preferred,
    /// Can run code mode when forced with `enabled: true`; `"auto"` keeps direct tools.
    Capable,
}

impl CodeModeTier {
    /// `"preferred"` or `"capable"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CodeModeTier::Preferred => "preferred",
            CodeModeTier::Capable => "capable",
        }
    }
}

impl fmt::Display for CodeModeTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `compat` object of a catalog model entry. Only the two flags code mode reads are typed;
/// every other compat flag is kept in `other`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCompat {
    /// `compat.supportsTools`; absent means the model supports tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_tools: Option<bool>,
    /// `compat.codeMode`: `"preferred"`, `"capable"` or absent. Any other value is a parse error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mode: Option<CodeModeTier>,
    /// Other compat flags, untouched.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One model entry of a provider catalog:
/// `{"id": "moonshotai/kimi-k3", "upstreamModel": "moonshot/kimi-k3", "compat": {"codeMode": "capable"}}`.
/// Keys other than these are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogModel {
    /// The model id inside its provider's catalog (the part after `provider/` in a model ref),
    /// possibly namespaced (`moonshotai/kimi-k3`). Matched exactly by lookups.
    pub id: String,
    /// The vendor's own name for the weights, when the id is a genuinely different name (the
    /// `kimi` catalog's `k3` says `moonshot/kimi-k3`). Only needed when stripping namespaces and
    /// case from `id` would not find the vendor's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_model: Option<String>,
    /// Capability flags.
    #[serde(default)]
    pub compat: ModelCompat,
}

impl CatalogModel {
    /// The key rows of different catalogs are grouped by: see [`weights_name`].
    pub fn weights_name(&self) -> String {
        weights_name(self.upstream_model.as_deref().unwrap_or(&self.id))
    }

    /// What activation needs to know about this model.
    pub fn support(&self) -> ModelSupport {
        ModelSupport {
            supports_tools: self.compat.supports_tools.unwrap_or(true),
            tier: self.compat.code_mode,
        }
    }
}

/// The vendor's own name for a model's weights, the shared-model grouping key: everything after
/// the last `/` (namespaces stripped), lower-cased. `novita/moonshotai/kimi-k3`,
/// `moonshotai/Kimi-K3` and `kimi-k3` all give `kimi-k3`.
pub fn weights_name(model: &str) -> String {
    model.rsplit('/').next().unwrap_or(model).to_lowercase()
}

/// One provider's catalog: `{"provider": "novita", "models": [ … ]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderCatalog {
    /// The provider id (`anthropic`, `novita`, …), the part before the first `/` in a model ref.
    pub provider: String,
    /// Its model entries.
    #[serde(default)]
    pub models: Vec<CatalogModel>,
}

/// A set of provider catalogs: `{"catalogs": [ … ]}` (other top-level keys are ignored).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProviderCatalogs {
    /// The catalogs, in file order.
    pub catalogs: Vec<ProviderCatalog>,
}

/// The bundled catalog data (`data/provider-catalogs.json` in this crate): the spec's table of
/// first-party models flagged `"preferred"` and the reseller/aggregator catalogs that declare
/// `"capable"` for the same weights.
pub const BUNDLED_CATALOGS_JSON: &str = include_str!("../data/provider-catalogs.json");

/// What [`crate::decide`] needs to know about the run's model, from the catalog that served the
/// run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSupport {
    /// `compat.supportsTools` (absent → `true`). Without tool support code mode never engages.
    pub supports_tools: bool,
    /// `compat.codeMode`; `None` when absent.
    pub tier: Option<CodeModeTier>,
}

impl ModelSupport {
    /// A model the serving catalog does not list: tools assumed supported, no tier, so `"auto"`
    /// keeps direct tools and `true` engages.
    pub const UNLISTED: ModelSupport = ModelSupport {
        supports_tools: true,
        tier: None,
    };
}

impl Default for ModelSupport {
    /// [`ModelSupport::UNLISTED`].
    fn default() -> Self {
        ModelSupport::UNLISTED
    }
}

/// One catalog row, named for reports.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RowRef {
    /// The catalog's provider id.
    pub provider: String,
    /// The model id in that catalog.
    pub id: String,
    /// Its stated tier, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<CodeModeTier>,
}

impl fmt::Display for RowRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.id)?;
        if let Some(tier) = self.tier {
            write!(f, " ({tier})")?;
        }
        Ok(())
    }
}

/// Rows of one or more catalogs that serve the same weights.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SharedModelGroup {
    /// The grouping key ([`weights_name`]).
    pub weights: String,
    /// The rows, in catalog order.
    pub rows: Vec<RowRef>,
}

/// A problem [`ProviderCatalogs::validate`] reports. Serialised with a `"problem"` tag in
/// snake_case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum CatalogProblem {
    /// Rows of the same weights where some state a tier and others do not (rows of models
    /// without tool support are left out: they can never use code mode).
    MixedTierStatement {
        /// The grouping key.
        weights: String,
        /// Rows stating a tier.
        stated: Vec<RowRef>,
        /// Tool-capable rows stating none.
        unstated: Vec<RowRef>,
    },
    /// A row states a tier for a model whose `compat.supportsTools` is `false`.
    TierWithoutToolSupport {
        /// The row.
        row: RowRef,
    },
    /// The same provider and id appear more than once (lookups would only see the first).
    DuplicateModel {
        /// The repeated row.
        row: RowRef,
    },
}

impl fmt::Display for CatalogProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |rows: &[RowRef]| {
            rows.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            CatalogProblem::MixedTierStatement {
                weights,
                stated,
                unstated,
            } => write!(
                f,
                "shared model {weights}: {} state compat.codeMode but {} do not; every row of a shared model must state its tier once any sibling does",
                join(stated),
                join(unstated)
            ),
            CatalogProblem::TierWithoutToolSupport { row } => write!(
                f,
                "{row} states compat.codeMode but compat.supportsTools is false; models without tool support cannot use code mode"
            ),
            CatalogProblem::DuplicateModel { row } => {
                write!(f, "{}/{} appears more than once", row.provider, row.id)
            }
        }
    }
}

impl ProviderCatalogs {
    /// Parses catalogs from JSON in the `{"catalogs": [{"provider", "models": [...]}]}` shape.
    /// Errors: malformed JSON, a missing `provider`/`id`, or a `compat.codeMode` other than
    /// `"preferred"`/`"capable"`.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The bundled catalogs ([`BUNDLED_CATALOGS_JSON`]), parsed once.
    pub fn bundled() -> &'static ProviderCatalogs {
        static BUNDLED: OnceLock<ProviderCatalogs> = OnceLock::new();
        BUNDLED.get_or_init(|| {
            ProviderCatalogs::from_json(BUNDLED_CATALOGS_JSON)
                .expect("the bundled provider catalogs parse (checked by tests)")
        })
    }

    /// The catalog of `provider`, if any (the first one when repeated).
    pub fn catalog(&self, provider: &str) -> Option<&ProviderCatalog> {
        self.catalogs.iter().find(|c| c.provider == provider)
    }

    /// The entry for `model` (exact id) in `provider`'s catalog. Tiers are read from the catalog
    /// that served the run, never from a sibling: a reseller's `"capable"` row stays capable even
    /// when the first-party row is preferred.
    pub fn model(&self, provider: &str, model: &str) -> Option<&CatalogModel> {
        self.catalog(provider)?
            .models
            .iter()
            .find(|m| m.id == model)
    }

    /// The entry for a model ref `provider/model` (split at the first `/`, so
    /// `novita/moonshotai/kimi-k3` is provider `novita`, model `moonshotai/kimi-k3`).
    pub fn model_ref(&self, model_ref: &str) -> Option<&CatalogModel> {
        let (provider, model) = model_ref.split_once('/')?;
        self.model(provider, model)
    }

    /// What activation needs about `provider`'s `model`; [`ModelSupport::UNLISTED`] when the
    /// catalog does not list it.
    pub fn support(&self, provider: &str, model: &str) -> ModelSupport {
        self.model(provider, model)
            .map(CatalogModel::support)
            .unwrap_or(ModelSupport::UNLISTED)
    }

    /// Every row flagged `"preferred"`, as `(provider, model id)`, in catalog order.
    pub fn preferred(&self) -> Vec<(&str, &str)> {
        self.rows()
            .filter(|(_, m)| m.compat.code_mode == Some(CodeModeTier::Preferred))
            .map(|(p, m)| (p, m.id.as_str()))
            .collect()
    }

    /// Rows grouped by [`weights_name`], groups sorted by key, rows in catalog order. Includes
    /// groups of a single row.
    pub fn groups(&self) -> Vec<SharedModelGroup> {
        let mut groups: BTreeMap<String, Vec<RowRef>> = BTreeMap::new();
        for (provider, model) in self.rows() {
            groups
                .entry(model.weights_name())
                .or_default()
                .push(row_ref(provider, model));
        }
        groups
            .into_iter()
            .map(|(weights, rows)| SharedModelGroup { weights, rows })
            .collect()
    }

    /// Every problem in these catalogs: each shared-model group where some tool-capable rows
    /// state a tier and others do not, each tier stated for a model without tool support, and
    /// each repeated `provider/id`. Empty means valid. Order: duplicates, then tool-support
    /// problems, in catalog order, then mixed groups by key.
    pub fn validate(&self) -> Vec<CatalogProblem> {
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        for (provider, model) in self.rows() {
            if !seen.insert((provider, model.id.as_str())) {
                problems.push(CatalogProblem::DuplicateModel {
                    row: row_ref(provider, model),
                });
            }
        }
        for (provider, model) in self.rows() {
            if model.compat.supports_tools == Some(false) && model.compat.code_mode.is_some() {
                problems.push(CatalogProblem::TierWithoutToolSupport {
                    row: row_ref(provider, model),
                });
            }
        }
        let mut groups: BTreeMap<String, (Vec<RowRef>, Vec<RowRef>)> = BTreeMap::new();
        for (provider, model) in self.rows() {
            if model.compat.supports_tools == Some(false) {
                continue;
            }
            let (stated, unstated) = groups.entry(model.weights_name()).or_default();
            if model.compat.code_mode.is_some() {
                stated.push(row_ref(provider, model));
            } else {
                unstated.push(row_ref(provider, model));
            }
        }
        for (weights, (stated, unstated)) in groups {
            if !stated.is_empty() && !unstated.is_empty() {
                problems.push(CatalogProblem::MixedTierStatement {
                    weights,
                    stated,
                    unstated,
                });
            }
        }
        problems
    }

    fn rows(&self) -> impl Iterator<Item = (&str, &CatalogModel)> {
        self.catalogs
            .iter()
            .flat_map(|c| c.models.iter().map(move |m| (c.provider.as_str(), m)))
    }
}

fn row_ref(provider: &str, model: &CatalogModel) -> RowRef {
    RowRef {
        provider: provider.to_string(),
        id: model.id.clone(),
        tier: model.compat.code_mode,
    }
}
