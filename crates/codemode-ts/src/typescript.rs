//! The TypeScript step (docs/contract/guest.md#s4-4 step 2, docs/contract/guest.md#s4-7): module check on the TypeScript tree,
//! type strip with swc, module check on the emitted JavaScript.

use std::sync::atomic::{AtomicU64, Ordering};

use swc_core::common::comments::SingleThreadedComments;
use swc_core::common::{Globals, Mark, Spanned, GLOBALS};
use swc_core::ecma::ast::{EsVersion, Pass, Program, Script};
use swc_core::ecma::codegen::{text_writer::JsWriter, Config as CodegenConfig, Emitter};
use swc_core::ecma::transforms::base::{fixer::fixer, hygiene::hygiene, resolver};
use swc_core::ecma::transforms::typescript::{typescript, Config as TsConfig};

use crate::checks::check_javascript;
use crate::depth::{self, Depth};
use crate::module_access::{masked_source_has_module_access, tree_has_module_access};
use crate::parse::{self, Grammar, Parsed};
use crate::rejection::Rejection;

/// How many times the TypeScript transform ran in this process.
static TRANSFORMS: AtomicU64 = AtomicU64::new(0);

/// How many times this process ran swc's TypeScript transform (the strip pass), counted when it
/// starts. JavaScript cells never run it (docs/contract/guest.md#s4-7, docs/contract/examples.md#e33), so the count does not change
/// while only JavaScript cells are prepared; tests and diagnostics use this to check that.
pub fn typescript_transform_count() -> u64 {
    TRANSFORMS.load(Ordering::Relaxed)
}

/// Strips the types from a TypeScript cell (docs/contract/guest.md#s4-7) and applies the module checks of
/// docs/contract/guest.md#s4-4 step 2 on the way. Returns the JavaScript body (without the wrapper) to run.
///
/// The code is parsed with swc's TypeScript grammar as the body of
/// `(async () => {\n<code>\n})()`, so top-level `await` and `return` work. `enum`, `namespace`
/// and parameter properties are compiled, class fields stay native (ES2022), and everything
/// type-only (`interface`, `type`, `declare`, annotations, `as`, `satisfies`, `!`, generics) is
/// removed. There is no type checking. Comments are kept.
///
/// Errors:
/// - [`Rejection::ModuleAccessDisabled`] when the TypeScript tree (or, for a source swc cannot
///   parse at all, the masked regex fallback of docs/contract/guest.md#s4-5) or the emitted JavaScript contains module
///   access;
/// - [`Rejection::TypeScriptTransformFailed`] for any parse diagnostic, each as
///   `<line>:<column>: <message>` in the user's code; also when the code closes the wrapper's
///   braces early (`}); …`), since the result could not be re-wrapped faithfully.
pub fn strip_typescript(source: &str) -> Result<String, Rejection> {
    strip(source, false)
}

/// [`strip_typescript`], followed by the shell check of docs/contract/guest.md#s4-6 when `shell_check`
/// (text steps on `source`, parsing steps on the emitted JavaScript).
pub(crate) fn strip(source: &str, shell_check: bool) -> Result<String, Rejection> {
    let depth = depth::measure(source);
    let javascript = parse::with_stack_for(&depth, || strip_types(source, &depth))?;
    check_javascript(source, &javascript, shell_check)?;
    Ok(javascript)
}

/// The TypeScript half of [`strip`]: module check on the TypeScript tree, strip, emit.
fn strip_types(source: &str, depth: &Depth) -> Result<String, Rejection> {
    let comments = SingleThreadedComments::default();
    let mut parsed = parse::parse_wrapped(source, Grammar::TypeScript, Some(&comments), depth);

    let has_module_access = match &parsed.script {
        Some(script) => tree_has_module_access(script),
        None => masked_source_has_module_access(source),
    };
    if has_module_access {
        return Err(Rejection::ModuleAccessDisabled);
    }
    if parsed.too_deep_at.is_some() || !parsed.errors.is_empty() {
        return Err(Rejection::TypeScriptTransformFailed {
            diagnostics: parsed.diagnostics(),
        });
    }
    let Some(mut script) = parsed.script.take() else {
        return Err(Rejection::TypeScriptTransformFailed {
            diagnostics: parsed.diagnostics(),
        });
    };
    if parse::wrapper_body_mut(&mut script).is_none() {
        let position = script.body.get(1).map_or((1, 1), |statement| {
            parsed.user_position(statement.span().lo)
        });
        return Err(Rejection::TypeScriptTransformFailed {
            diagnostics: vec![format!(
                "{}:{}: the code closes the braces of its async function wrapper; it must be a function body",
                position.0, position.1
            )],
        });
    }

    TRANSFORMS.fetch_add(1, Ordering::Relaxed);
    let body = GLOBALS.set(&Globals::new(), || {
        let unresolved_mark = Mark::new();
        let top_level_mark = Mark::new();
        let config = TsConfig {
            native_class_properties: true,
            ts_enum_is_mutable: true,
            no_empty_export: true,
            ..TsConfig::default()
        };
        let mut program = Program::Script(script);
        (
            resolver(unresolved_mark, top_level_mark, true),
            typescript(config, unresolved_mark, top_level_mark),
            hygiene(),
            fixer(Some(&comments)),
        )
            .process(&mut program);
        let Program::Script(mut script) = program else {
            return None;
        };
        parse::wrapper_body_mut(&mut script).map(std::mem::take)
    });
    let Some(body) = body else {
        return Err(Rejection::TypeScriptTransformFailed {
            diagnostics: vec!["1:1: the transform did not keep the async function wrapper".into()],
        });
    };

    let emitted = Script {
        span: Default::default(),
        body,
        shebang: None,
    };
    Ok(emit(&parsed, &emitted, &comments))
}

/// Prints the stripped statements as ES2022 source with the kept comments, without a trailing
/// newline.
fn emit(parsed: &Parsed, script: &Script, comments: &SingleThreadedComments) -> String {
    let mut buffer = Vec::new();
    {
        let mut emitter = Emitter {
            cfg: CodegenConfig::default().with_target(EsVersion::Es2022),
            cm: parsed.cm.clone(),
            comments: Some(comments),
            wr: JsWriter::new(parsed.cm.clone(), "\n", &mut buffer, None),
        };
        // Writing into a Vec cannot fail.
        let _ = emitter.emit_script(script);
    }
    let mut javascript = String::from_utf8_lossy(&buffer).into_owned();
    let trimmed = javascript.trim_end().len();
    javascript.truncate(trimmed);
    javascript
}
