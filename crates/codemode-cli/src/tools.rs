//! Built-in tools of the `codemode` binary: read-only file access under one workspace root.
//!
//! Every path is relative to the root and must stay inside it after resolving `..` and symbolic
//! links; errors never name host paths outside the root. Results follow the tool-result shape
//! `{content: [{type: "text", text}], details}` and each tool declares a closed `outputSchema`, so
//! the quick index shows its output (docs/contract/catalog.md#output-contracts).

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use codemode_bridge::{ToolCall, ToolError, ToolExecutor, ToolFuture};
use codemode_catalog::ToolSpec;
use serde_json::{json, Value};

/// Largest file `read` returns in full, in bytes (longer files are cut and marked `truncated`).
pub(crate) const READ_MAX_BYTES: u64 = 1024 * 1024;
/// Largest file `grep` searches, in bytes.
const GREP_MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most files `grep` visits in one call.
const GREP_MAX_FILES: usize = 20_000;
/// Most entries `list` returns.
const LIST_MAX_ENTRIES: usize = 1000;

/// The tool specs (core tools `read`, `list`, `grep`) for the catalog.
pub(crate) fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::core("read", "Read a UTF-8 text file under the workspace root.")
            .with_parameters(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."}
                },
                "required": ["path"],
                "additionalProperties": false
            }))
            .with_output_schema(json!({
                "type": "object",
                "properties": {
                    "kind": {"const": "text"},
                    "path": {"type": "string"},
                    "content": {"type": "string"},
                    "bytes": {"type": "integer"},
                    "truncated": {"type": "boolean"}
                },
                "required": ["kind", "path", "content", "bytes", "truncated"],
                "additionalProperties": false
            })),
        ToolSpec::core("list", "List a directory under the workspace root.")
            .with_parameters(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the workspace root; default the root."}
                },
                "additionalProperties": false
            }))
            .with_output_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "entries": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "kind": {"enum": ["file", "dir", "symlink", "other"]},
                            "bytes": {"type": "integer"}
                        },
                        "required": ["name", "kind", "bytes"],
                        "additionalProperties": false
                    }},
                    "truncated": {"type": "boolean"}
                },
                "required": ["path", "entries", "truncated"],
                "additionalProperties": false
            })),
        ToolSpec::core(
            "grep",
            "Search text files under the workspace root for a literal string (case-sensitive).",
        )
        .with_parameters(json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Literal text to find."},
                "path": {"type": "string", "description": "File or directory to search; default the root."},
                "maxResults": {"type": "integer", "description": "At most this many matches (1-500, default 50)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }))
        .with_output_schema(json!({
            "type": "object",
            "properties": {
                "matches": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "line": {"type": "integer"},
                        "text": {"type": "string"}
                    },
                    "required": ["path", "line", "text"],
                    "additionalProperties": false
                }},
                "truncated": {"type": "boolean"}
            },
            "required": ["matches", "truncated"],
            "additionalProperties": false
        })),
    ]
}

/// Runs the built-in tools under one root directory.
pub(crate) struct WorkspaceTools {
    root: Arc<PathBuf>,
}

impl WorkspaceTools {
    /// Tools confined to `root` (canonicalised; it must exist).
    pub(crate) fn new(root: &Path) -> std::io::Result<Self> {
        Ok(WorkspaceTools {
            root: Arc::new(fs::canonicalize(root)?),
        })
    }
}

impl ToolExecutor for WorkspaceTools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        let root = self.root.clone();
        Box::pin(async move {
            let name = call.tool_name.clone();
            let input = call.input;
            let details = tokio::task::spawn_blocking(move || match name.as_str() {
                "read" => read(&root, &input).map_err(ToolError::failed),
                "list" => list(&root, &input).map_err(ToolError::failed),
                "grep" => grep(&root, &input).map_err(ToolError::failed),
                other => Err(ToolError::unknown_tool(format!(
                    "unknown built-in tool {other}"
                ))),
            })
            .await
            .map_err(|e| ToolError::failed(format!("tool task failed: {e}")))??;
            Ok(tool_result(details))
        })
    }
}

/// The executor of a host or agent turn without any tools: every call fails with
/// `no tool executor for <id>` (the catalog is empty, so only a hand-made bridge request could
/// reach it).
pub(crate) struct NoTools;

impl ToolExecutor for NoTools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        let id = call.tool_id;
        Box::pin(async move {
            Err(ToolError::unknown_tool(format!(
                "no tool executor for {id}"
            )))
        })
    }
}

/// The tool-result shape every CLI tool returns: `{content: [{type: "text", text: <JSON of
/// details>}], details}`.
pub(crate) fn tool_result(details: Value) -> Value {
    let text = serde_json::to_string(&details).unwrap_or_default();
    json!({"content": [{"type": "text", "text": text}], "details": details})
}

fn string_arg<'a>(input: &'a Value, key: &str) -> Result<Option<&'a str>, String> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("{key} must be a string.")),
    }
}

/// Most symbolic links one path may follow inside the root (as Linux's `ELOOP` limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// Resolves `rel` under `root` without touching anything outside it: absolute paths are refused,
/// and the path is walked one component at a time from the root, `..` popping a component and
/// symbolic links (inside the root) expanded in place. A `..` above the root, or a link whose
/// target is absolute outside the root, is refused with `path is outside the workspace root:
/// <rel>` before any file system call names a path outside the root, so an existing and a missing
/// path outside the root get the same answer (no file-existence oracle). Only a path that stays
/// inside the root can answer `no such file or directory: <rel>`.
fn resolve(root: &Path, rel: &str) -> Result<(PathBuf, String), String> {
    let rel_path = Path::new(rel);
    if rel_path.is_absolute()
        || rel_path
            .components()
            .any(|c| matches!(c, Component::Prefix(_)))
    {
        return Err(format!(
            "path must be relative to the workspace root: {rel}"
        ));
    }
    let outside = || format!("path is outside the workspace root: {rel}");
    // Components still to walk, front first, and the resolved components below the root.
    let mut todo: std::collections::VecDeque<std::ffi::OsString> = rel_path
        .components()
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    let mut done: Vec<std::ffi::OsString> = Vec::new();
    let mut hops = 0usize;
    while let Some(part) = todo.pop_front() {
        if part == "." || part.is_empty() {
            continue;
        }
        if part == ".." {
            if done.pop().is_none() {
                return Err(outside());
            }
            continue;
        }
        let mut candidate = root.to_path_buf();
        candidate.extend(&done);
        candidate.push(&part);
        // `candidate` is inside the root: its parent components are resolved, real directories.
        let meta = fs::symlink_metadata(&candidate)
            .map_err(|_| format!("no such file or directory: {rel}"))?;
        if !meta.file_type().is_symlink() {
            done.push(part);
            continue;
        }
        hops += 1;
        if hops > MAX_SYMLINK_HOPS {
            return Err(format!("too many symbolic links: {rel}"));
        }
        let target =
            fs::read_link(&candidate).map_err(|_| format!("no such file or directory: {rel}"))?;
        let mut expanded: Vec<std::ffi::OsString> = if target.is_absolute() {
            // Only a target spelled under the root stays inside; anything else is refused
            // without looking at it.
            let below = target.strip_prefix(root).map_err(|_| outside())?;
            done.clear();
            below
                .components()
                .map(|c| c.as_os_str().to_os_string())
                .collect()
        } else {
            target
                .components()
                .map(|c| c.as_os_str().to_os_string())
                .collect()
        };
        expanded.extend(todo.drain(..));
        todo = expanded.into();
    }
    let mut resolved = root.to_path_buf();
    resolved.extend(&done);
    let shown = done
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    Ok((
        resolved,
        if shown.is_empty() {
            ".".to_string()
        } else {
            shown
        },
    ))
}

fn read(root: &Path, input: &Value) -> Result<Value, String> {
    let rel = string_arg(input, "path")?.ok_or("path must be a string.")?;
    let (path, shown) = resolve(root, rel)?;
    let meta = fs::metadata(&path).map_err(|_| format!("cannot read {rel}"))?;
    if !meta.is_file() {
        return Err(format!("not a file: {rel}"));
    }
    let mut bytes = Vec::new();
    use std::io::Read;
    fs::File::open(&path)
        .and_then(|f| f.take(READ_MAX_BYTES).read_to_end(&mut bytes))
        .map_err(|_| format!("cannot read {rel}"))?;
    let truncated = meta.len() > READ_MAX_BYTES;
    let content = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) if truncated && e.utf8_error().error_len().is_none() => {
            // Cut in the middle of a character at the size limit: keep the valid prefix.
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
        Err(_) => return Err(format!("not a UTF-8 text file: {rel}")),
    };
    Ok(
        json!({"kind": "text", "path": shown, "content": content, "bytes": meta.len(), "truncated": truncated}),
    )
}

fn kind_of(ft: fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "symlink"
    } else if ft.is_dir() {
        "dir"
    } else if ft.is_file() {
        "file"
    } else {
        "other"
    }
}

fn list(root: &Path, input: &Value) -> Result<Value, String> {
    let rel = string_arg(input, "path")?.unwrap_or(".");
    let (path, shown) = resolve(root, rel)?;
    let read_dir = fs::read_dir(&path).map_err(|_| format!("not a directory: {rel}"))?;
    let mut entries: Vec<Value> = Vec::new();
    let mut names: Vec<(String, &'static str, u64)> = read_dir
        .filter_map(Result::ok)
        .filter_map(|e| {
            let ft = e.file_type().ok()?;
            let bytes = if ft.is_file() {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            } else {
                0
            };
            Some((
                e.file_name().to_string_lossy().into_owned(),
                kind_of(ft),
                bytes,
            ))
        })
        .collect();
    names.sort();
    let truncated = names.len() > LIST_MAX_ENTRIES;
    for (name, kind, bytes) in names.into_iter().take(LIST_MAX_ENTRIES) {
        entries.push(json!({"name": name, "kind": kind, "bytes": bytes}));
    }
    Ok(json!({"path": shown, "entries": entries, "truncated": truncated}))
}

fn grep(root: &Path, input: &Value) -> Result<Value, String> {
    let pattern = string_arg(input, "pattern")?.ok_or("pattern must be a string.")?;
    if pattern.is_empty() {
        return Err("pattern must be a non-empty string.".into());
    }
    let max_results = match input.get("maxResults") {
        None | Some(Value::Null) => 50,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=500).contains(&n) => n as usize,
            _ => return Err("maxResults must be an integer from 1 to 500.".into()),
        },
    };
    let rel = string_arg(input, "path")?.unwrap_or(".");
    let (start, _) = resolve(root, rel)?;
    let mut matches = Vec::new();
    let mut truncated = false;
    let mut visited = 0usize;
    let mut stack = vec![start];
    while let Some(path) = stack.pop() {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let Ok(rd) = fs::read_dir(&path) else {
                continue;
            };
            let mut children: Vec<PathBuf> = rd
                .filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    !(name.starts_with('.') || name == "target" || name == "node_modules")
                })
                .map(|e| e.path())
                .collect();
            children.sort();
            children.reverse();
            stack.extend(children);
            continue;
        }
        if !meta.is_file() || meta.len() > GREP_MAX_FILE_BYTES {
            continue;
        }
        visited += 1;
        if visited > GREP_MAX_FILES {
            truncated = true;
            break;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let shown = path
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.contains(pattern) {
                if matches.len() == max_results {
                    truncated = true;
                    break;
                }
                let text: String = line.chars().take(400).collect();
                matches.push(json!({"path": shown, "line": i + 1, "text": text}));
            }
        }
        if truncated {
            break;
        }
    }
    Ok(json!({"matches": matches, "truncated": truncated}))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/threat-model.md, "File-existence oracle": a path outside the root gets one answer
    /// whether or not it exists, and the answer comes before any file system call outside the
    /// root (a missing outside directory answers the same as an existing one).
    #[test]
    fn outside_paths_answer_alike_existing_or_missing() {
        let base = tempfile::tempdir().unwrap();
        let base_path = fs::canonicalize(base.path()).unwrap();
        fs::create_dir(base_path.join("root")).unwrap();
        fs::create_dir(base_path.join("x")).unwrap();
        fs::write(base_path.join("x/secret.txt"), "secret").unwrap();
        let root = base_path.join("root");
        fs::create_dir(root.join("sub")).unwrap();
        fs::write(root.join("sub/in.txt"), "in").unwrap();
        std::os::unix::fs::symlink(base_path.join("x"), root.join("abs_out")).unwrap();
        std::os::unix::fs::symlink("../x", root.join("rel_out")).unwrap();
        std::os::unix::fs::symlink("sub", root.join("rel_in")).unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("abs_in")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        for (path, message) in [
            (
                "../x/secret.txt",
                "path is outside the workspace root: ../x/secret.txt",
            ),
            (
                "../x/missing.txt",
                "path is outside the workspace root: ../x/missing.txt",
            ),
            (
                "../nope/missing.txt",
                "path is outside the workspace root: ../nope/missing.txt",
            ),
            (
                "sub/../../x/secret.txt",
                "path is outside the workspace root: sub/../../x/secret.txt",
            ),
            (
                "missing/../../x/secret.txt",
                "no such file or directory: missing/../../x/secret.txt",
            ),
            (
                "abs_out/secret.txt",
                "path is outside the workspace root: abs_out/secret.txt",
            ),
            (
                "abs_out/missing.txt",
                "path is outside the workspace root: abs_out/missing.txt",
            ),
            (
                "rel_out/secret.txt",
                "path is outside the workspace root: rel_out/secret.txt",
            ),
            (
                "rel_out/missing.txt",
                "path is outside the workspace root: rel_out/missing.txt",
            ),
            (
                "sub/missing.txt",
                "no such file or directory: sub/missing.txt",
            ),
            ("loop/a", "too many symbolic links: loop/a"),
        ] {
            assert_eq!(
                read(&root, &json!({"path": path})).unwrap_err(),
                message,
                "{path}"
            );
        }
        for path in [
            "rel_in/in.txt",
            "abs_in/in.txt",
            "sub/./in.txt",
            "rel_in/../sub/in.txt",
        ] {
            assert_eq!(
                read(&root, &json!({"path": path})).unwrap(),
                json!({"kind": "text", "path": "sub/in.txt", "content": "in", "bytes": 2, "truncated": false}),
                "{path}"
            );
        }
        assert_eq!(
            list(&root, &json!({"path": "../x"})).unwrap_err(),
            "path is outside the workspace root: ../x"
        );
        assert_eq!(
            grep(&root, &json!({"pattern": "secret", "path": "rel_out"})).unwrap_err(),
            "path is outside the workspace root: rel_out"
        );
    }

    #[test]
    fn confinement() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "hello\nworld hello\n").unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            read(&root, &json!({"path": "a.txt"})).unwrap(),
            json!({"kind": "text", "path": "a.txt", "content": "hello\nworld hello\n", "bytes": 18, "truncated": false})
        );
        assert_eq!(
            read(&root, &json!({"path": "../etc/passwd"})).unwrap_err(),
            "path is outside the workspace root: ../etc/passwd".to_string()
        );
        assert_eq!(
            read(&root, &json!({"path": "/etc/passwd"})).unwrap_err(),
            "path must be relative to the workspace root: /etc/passwd"
        );
        std::os::unix::fs::symlink("/etc", root.join("escape")).unwrap();
        assert_eq!(
            read(&root, &json!({"path": "escape/passwd"})).unwrap_err(),
            "path is outside the workspace root: escape/passwd"
        );
        assert_eq!(
            read(&root, &json!({"path": 3})).unwrap_err(),
            "path must be a string."
        );
        assert_eq!(
            list(&root, &json!({})).unwrap(),
            json!({"path": ".", "entries": [
                {"name": "a.txt", "kind": "file", "bytes": 18},
                {"name": "escape", "kind": "symlink", "bytes": 0},
                {"name": "sub", "kind": "dir", "bytes": 0}
            ], "truncated": false})
        );
        assert_eq!(
            grep(&root, &json!({"pattern": "hello"})).unwrap(),
            json!({"matches": [
                {"path": "a.txt", "line": 1, "text": "hello"},
                {"path": "a.txt", "line": 2, "text": "world hello"}
            ], "truncated": false})
        );
        assert_eq!(
            grep(&root, &json!({"pattern": "hello", "maxResults": 1})).unwrap()["truncated"],
            json!(true)
        );
    }
}
