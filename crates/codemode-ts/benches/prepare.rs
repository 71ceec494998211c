//! Source preparation of a 10-line JavaScript cell and a 10-line TypeScript cell
//! (docs/contract/guest.md#s4-4). The JavaScript path must not touch swc's TypeScript transform;
//! the benchmark checks that with `typescript_transform_count`.
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use codemode_ts::{prepare_source, typescript_transform_count, Language};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

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

criterion_group!(benches, prepare);
criterion_main!(benches);
