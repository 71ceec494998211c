//! Source preparation (docs/contract/guest.md#s4-4): a 10-line JavaScript cell and a 10-line
//! TypeScript cell; and the lean JavaScript path against the full swc path, side by side in one
//! run (`lean_vs_full/<program>/{lean,full}`), on `return 1+2`, a 10-call program, a 5 KB
//! program, and the 10-call program with a `require` in a comment (the lean path's fallback
//! cost: its text checks, then the full parse). The JavaScript path must not touch swc's
//! TypeScript transform; the benchmark checks that with `typescript_transform_count`.
//!
//! `scale/<cell>/<size>`: everything a cell costs before its first leg (issue 27 item 5;
//! docs/threat-model.md, "Deadlines"), `prepare_source` plus the `tools.<name>(` scan
//! (`tools_calls`), on cells of 10 KB, 100 KB and 1 MB, each of three shapes: `one_line_calls`
//! (`tools.nope(1);` repeated on one line, the quadratic case of the old scan), `string_literal`
//! (one string literal holding `tools.a(` repeated) and `parsed_program` (the 5 KB program's
//! blocks with a `require` in a comment, so swc parses the whole cell). Linear means each
//! size costs ~10× the one before.
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use codemode_ts::{
    javascript_needs_parse, prepare_source, prepare_source_with, tools_calls,
    typescript_transform_count, CheckPath, Language,
};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

const LANGUAGES: &[Language] = &[Language::JavaScript, Language::TypeScript];

const JAVASCRIPT_CELL: &str = r#"const hits = await tools.search("ticket", { limit: 5 });
const ids = hits.map((hit) => hit.id).filter((id) => id.includes("ticket"));
text(`found ${ids.length} tools`);
const results = [];
for (const id of ids) {
  const value = await tools.callValue(id, { value: "open" });
  if (value && typeof value === "object") results.push(value);
}
const pattern = /open|closed/i;
return results.filter((result) => pattern.test(JSON.stringify(result)));"#;

const TYPESCRIPT_CELL: &str = r#"interface Hit { id: string; name: string; score?: number }
enum State { Open = "open", Closed = "closed" }
const hits: Hit[] = await tools.search("ticket", { limit: 5 });
const ids = hits.map((hit: Hit) => hit.id).filter((id): id is string => id.includes("ticket"));
text(`found ${ids.length} tools`);
const results: unknown[] = [];
for (const id of ids) {
  const value = await tools.callValue(id, { value: State.Open }) as Record<string, unknown> | null;
  if (value !== null) results.push(value satisfies object);
}
return results;"#;

/// Ten sequential tool calls, as the facade's `exec_10_sequential_calls` runs them.
const TEN_CALLS: &str = r#"const out = [];
out.push(await tools.callValue("ping", { n: 0 }));
out.push(await tools.callValue("ping", { n: 1 }));
out.push(await tools.callValue("ping", { n: 2 }));
out.push(await tools.callValue("ping", { n: 3 }));
out.push(await tools.callValue("ping", { n: 4 }));
out.push(await tools.callValue("ping", { n: 5 }));
out.push(await tools.callValue("ping", { n: 6 }));
out.push(await tools.callValue("ping", { n: 7 }));
out.push(await tools.callValue("ping", { n: 8 }));
out.push(await tools.callValue("ping", { n: 9 }));
return out;"#;

/// One block of the 5 KB program: searches, calls, templates, regexes, closures.
const BLOCK: &str = r#"
{
  const hits = await tools.search("issue tracker", { limit: 10 });
  const wanted = hits.filter((hit) => /issue|ticket/i.test(hit.name)).map((hit) => hit.id);
  for (const id of wanted) {
    const details = await tools.describe(id);
    const value = await tools.callValue(id, { query: `state:open label:${details.name}`, page: 1 });
    if (Array.isArray(value)) {
      summary.push({ id, count: value.length, first: value[0] ?? null });
    } else if (value && typeof value === "object") {
      summary.push({ id, keys: Object.keys(value).sort().join(",") });
    }
  }
  text(`checked ${wanted.length} tools, ${summary.length} answered`);
}
"#;

fn five_kb_program() -> String {
    let mut program = String::from("const summary = [];\n");
    while program.len() < 5 * 1024 {
        program.push_str(BLOCK);
    }
    program.push_str("return summary;");
    program
}

fn prepare(c: &mut Criterion) {
    let before = typescript_transform_count();
    c.bench_function("prepare_javascript_10_lines", |b| {
        b.iter(|| {
            prepare_source(black_box(JAVASCRIPT_CELL), Language::JavaScript, LANGUAGES).unwrap()
        })
    });
    assert_eq!(
        typescript_transform_count(),
        before,
        "the JavaScript path ran the TypeScript transform"
    );
    c.bench_function("prepare_typescript_10_lines", |b| {
        b.iter(|| {
            prepare_source(black_box(TYPESCRIPT_CELL), Language::TypeScript, LANGUAGES).unwrap()
        })
    });
}

fn lean_vs_full(c: &mut Criterion) {
    let five_kb = five_kb_program();
    let ten_calls_with_comment = format!("// no require here\n{TEN_CALLS}");
    let programs: [(&str, &str, bool); 4] = [
        ("return_1_plus_2", "return 1+2", false),
        ("ten_calls", TEN_CALLS, false),
        ("five_kb", &five_kb, false),
        ("ten_calls_needing_the_parse", &ten_calls_with_comment, true),
    ];
    let mut group = c.benchmark_group("lean_vs_full");
    for (name, program, needs_parse) in programs {
        assert_eq!(javascript_needs_parse(program), needs_parse, "{name}");
        for (label, path) in [("lean", CheckPath::Lean), ("full", CheckPath::Full)] {
            group.bench_function(format!("{name}/{label}"), |b| {
                b.iter(|| {
                    prepare_source_with(black_box(program), Language::JavaScript, LANGUAGES, path)
                        .unwrap()
                })
            });
        }
    }
    group.finish();
}

/// `unit` repeated to `bytes` bytes (at least one), between `head` and `tail`.
fn cell(head: &str, unit: &str, tail: &str, bytes: usize) -> String {
    let mut cell = String::with_capacity(bytes + unit.len() + head.len() + tail.len());
    cell.push_str(head);
    while cell.len() + unit.len() + tail.len() <= bytes || cell.len() == head.len() {
        cell.push_str(unit);
    }
    cell.push_str(tail);
    cell
}

fn scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    for (label, bytes) in [("10KB", 10_000), ("100KB", 100_000), ("1MB", 1_000_000)] {
        let cells = [
            (
                "one_line_calls",
                cell("", "tools.nope(1);", "", bytes),
                false,
            ),
            (
                "string_literal",
                cell("const s = \"", "tools.a(", "\";\nreturn s.length;", bytes),
                false,
            ),
            (
                "parsed_program",
                cell(
                    "// require\nconst summary = [];\n",
                    BLOCK,
                    "return summary;",
                    bytes,
                ),
                true,
            ),
        ];
        for (name, program, needs_parse) in cells {
            assert_eq!(javascript_needs_parse(&program), needs_parse, "{name}");
            group.throughput(Throughput::Bytes(program.len() as u64));
            group.bench_function(format!("{name}/{label}"), |b| {
                b.iter(|| {
                    let prepared =
                        prepare_source(black_box(&program), Language::JavaScript, LANGUAGES)
                            .unwrap();
                    tools_calls(&prepared).count()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, prepare, lean_vs_full, scale);
criterion_main!(benches);
