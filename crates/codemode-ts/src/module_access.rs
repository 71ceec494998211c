//! Module-access rejection: `code mode module access is disabled.` (docs/contract/guest.md#s4-5).

use std::sync::LazyLock;

use regex::Regex;
use swc_core::ecma::ast::{
    CallExpr, Callee, Expr, ImportDecl, MetaPropExpr, MetaPropKind, ModuleDecl, OptCall,
    TsImportEqualsDecl, TsModuleRef,
};
use swc_core::ecma::visit::{Visit, VisitWith};

use crate::scan;

/// The regex of docs/contract/guest.md#s4-5-unparsable "Unparsable programs", applied to the masked source:
/// `/\bimport\b\s*(?:\.|\(|["'`{*]|\w)|\brequire\b\s*\(/` (word boundaries and `\w` are ASCII,
/// as in JavaScript).
static FALLBACK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?-u:\b)import(?-u:\b)\s*(?:\.|\(|["'`{*]|(?-u:\w))|(?-u:\b)require(?-u:\b)\s*\("#,
    )
    .expect("the §4.5 fallback regex is valid")
});

/// Whether a parsed syntax tree contains module access (docs/contract/guest.md#s4-5-static "Static check"):
/// an import declaration (also `import x = require(…)` and `export … from` in TypeScript trees),
/// `import(…)`, `import.meta`, or a call whose callee is the identifier `require` — through
/// parentheses, optional calls, comma sequences and TypeScript wrappers (`as`, `!`,
/// `satisfies`, `<T>x`, `require<T>`). Identifiers are compared after unicode-escape decoding,
/// so `r\u0065quire(…)` counts. Member names (`api.import(…)`, `api["require"](…)`,
/// `api.import.meta`), strings, template text, regex literals and comments never count.
pub(crate) fn tree_has_module_access<N: VisitWith<Finder>>(node: &N) -> bool {
    let mut finder = Finder { found: false };
    node.visit_with(&mut finder);
    finder.found
}

/// Whether an unparsable JavaScript program matches the regex fallback of docs/contract/guest.md#s4-5 once
/// its comments, string contents, template text and recognisable regex literals are masked.
pub(crate) fn masked_source_has_module_access(source: &str) -> bool {
    FALLBACK.is_match(&scan::mask(source, &scan::scan(source)))
}

/// The syntax-tree visitor behind [`tree_has_module_access`].
pub(crate) struct Finder {
    found: bool,
}

/// The callee with parentheses, comma sequences (last expression) and TypeScript-only wrappers
/// removed.
fn unwrap_callee(mut expr: &Expr) -> &Expr {
    loop {
        expr = match expr {
            Expr::Paren(inner) => &inner.expr,
            Expr::Seq(seq) => match seq.exprs.last() {
                Some(last) => last,
                None => return expr,
            },
            Expr::TsAs(inner) => &inner.expr,
            Expr::TsNonNull(inner) => &inner.expr,
            Expr::TsSatisfies(inner) => &inner.expr,
            Expr::TsTypeAssertion(inner) => &inner.expr,
            Expr::TsConstAssertion(inner) => &inner.expr,
            Expr::TsInstantiation(inner) => &inner.expr,
            _ => return expr,
        };
    }
}

fn is_require(expr: &Expr) -> bool {
    matches!(unwrap_callee(expr), Expr::Ident(ident) if ident.sym == *"require")
}

impl Visit for Finder {
    fn visit_call_expr(&mut self, call: &CallExpr) {
        match &call.callee {
            Callee::Import(_) => self.found = true,
            Callee::Expr(callee) if is_require(callee) => self.found = true,
            _ => {}
        }
        if !self.found {
            call.visit_children_with(self);
        }
    }

    fn visit_opt_call(&mut self, call: &OptCall) {
        if is_require(&call.callee) {
            self.found = true;
            return;
        }
        call.visit_children_with(self);
    }

    fn visit_meta_prop_expr(&mut self, meta: &MetaPropExpr) {
        if meta.kind == MetaPropKind::ImportMeta {
            self.found = true;
        }
    }

    fn visit_import_decl(&mut self, _: &ImportDecl) {
        self.found = true;
    }

    fn visit_module_decl(&mut self, decl: &ModuleDecl) {
        match decl {
            ModuleDecl::ExportAll(_) => self.found = true,
            ModuleDecl::ExportNamed(named) if named.src.is_some() => self.found = true,
            _ => decl.visit_children_with(self),
        }
    }

    fn visit_ts_import_equals_decl(&mut self, decl: &TsImportEqualsDecl) {
        if matches!(decl.module_ref, TsModuleRef::TsExternalModuleRef(_)) {
            self.found = true;
        }
    }

    fn visit_expr(&mut self, expr: &Expr) {
        if !self.found {
            expr.visit_children_with(self);
        }
    }
}

/// Whether an uncaught guest error maps to `code mode module access is disabled.`
/// (docs/contract/guest.md#s4-5-runtime "At run time"; the runtime applies this rule, this crate only decides it).
///
/// `error_text` is the uncaught error as the runtime renders it: its first line must be a
/// `ReferenceError` whose message is `require is not defined`, `module is not defined` or
/// `process is not defined` — `ReferenceError: require is not defined`, optionally prefixed with
/// `Uncaught `, with the name optionally in single quotes as QuickJS writes it
/// (`ReferenceError: 'require' is not defined`). Later lines (a backtrace) are ignored; anything
/// else returns `false`. This is how aliases such as `const load = require`,
/// `module.require(…)` and `process.getBuiltinModule(…)` are caught (docs/contract/examples.md#e40 inputs 6–8).
pub fn is_module_access_reference_error(error_text: &str) -> bool {
    let first_line = error_text.lines().next().unwrap_or("").trim();
    let first_line = first_line.strip_prefix("Uncaught ").unwrap_or(first_line);
    let Some(message) = first_line.strip_prefix("ReferenceError: ") else {
        return false;
    };
    let Some(name) = message.strip_suffix(" is not defined") else {
        return false;
    };
    let name = name
        .strip_prefix('\'')
        .and_then(|quoted| quoted.strip_suffix('\''))
        .unwrap_or(name);
    matches!(name, "require" | "module" | "process")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_error_rule() {
        for text in [
            "ReferenceError: require is not defined",
            "ReferenceError: module is not defined",
            "ReferenceError: process is not defined",
            "ReferenceError: 'require' is not defined\n    at <anonymous> (openclaw-code-mode:user.js:2)",
            "Uncaught ReferenceError: process is not defined",
        ] {
            assert!(is_module_access_reference_error(text), "{text}");
        }
        for text in [
            "ReferenceError: missingFn is not defined",
            "TypeError: require is not defined",
            "Error: require is not defined",
            "ReferenceError: requires is not defined",
            "ReferenceError: require is not a function",
            "",
            "require is not defined",
        ] {
            assert!(!is_module_access_reference_error(text), "{text}");
        }
    }

    #[test]
    fn fallback_regex_on_masked_text() {
        for hit in [
            "import x from 'y'; const = ;",
            "import 'fs' +",
            "import {a} from 'b' (",
            "import * as x from 'y' )",
            "import.meta +",
            "import ('x') )",
            "require ('x') )",
            "x = 1 / 2; require('a') )",
            // `$` is not a word character, so JavaScript's `\b` sees a boundary before `require`.
            "$require('x') )",
        ] {
            assert!(masked_source_has_module_access(hit), "{hit}");
        }
        for miss in [
            "'import x' )",
            "// require('x')\n )",
            "`import ${1}` )",
            "x = /require(x)/ )",
            "x = a / b; y = /import(/; )",
            "reimport(x) )",
            "require.resolve )",
        ] {
            assert!(!masked_source_has_module_access(miss), "{miss}");
        }
    }
}
