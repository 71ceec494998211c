//! E33: `return 42;` completes and the TypeScript transformer is never loaded. This test binary
//! prepares only JavaScript, so the process-wide transform counter must stay at zero.

use codemode_ts::{prepare_exec, typescript_transform_count, Language, Rejection};
use serde_json::json;

#[test]
fn e33_javascript_cells_never_run_the_typescript_transform() {
    let both = [Language::JavaScript, Language::TypeScript];
    assert_eq!(
        prepare_exec(&json!({"code": "return 42;"}), &both).map(|prepared| prepared.javascript),
        Ok("return 42;".to_owned())
    );
    // Every JavaScript outcome: accepted, unparsable, module access, shell, gate.
    assert_eq!(
        prepare_exec(&json!({"code": "const x = ;"}), &both).map(|prepared| prepared.javascript),
        Ok("const x = ;".to_owned())
    );
    assert_eq!(
        prepare_exec(&json!({"code": "return require('fs');"}), &both),
        Err(Rejection::ModuleAccessDisabled)
    );
    assert_eq!(
        prepare_exec(&json!({"code": "ls -la"}), &both),
        Err(Rejection::ShellSource)
    );
    assert_eq!(
        prepare_exec(&json!({"code": "return 1;"}), &[Language::TypeScript]),
        Err(Rejection::LanguageDisabled(Language::JavaScript))
    );
    assert_eq!(typescript_transform_count(), 0);
}
