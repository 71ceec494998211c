//! TypeScript cells (docs/contract/guest.md#s4-7): the emitted JavaScript of a corpus of realistic cells
//! (insta snapshots until the runtime can run them), diagnostics with positions in the user's
//! code, and the transform counter.

use codemode_ts::{
    prepare_exec, prepare_source, strip_typescript, typescript_transform_count, Language, Rejection,
};
use serde_json::json;

const BOTH: &[Language] = &[Language::JavaScript, Language::TypeScript];

/// Realistic cells: `(snapshot name, source)`.
const CORPUS: &[(&str, &str)] = &[
    (
        "interfaces_and_types",
        r#"interface Ticket {
  id: string;
  title: string;
  priority?: "low" | "high";
}
type TicketList = Ticket[];
const tickets: TicketList = await tools.callValue("openclaw:fake-code-mode:list_tickets", {});
return tickets.filter((t: Ticket) => t.priority === "high").map((t) => t.id);"#,
    ),
    (
        "enums",
        r#"enum Priority { Low, High = 5, Urgent }
enum Status { Open = "open", Closed = "closed" }
const enum Flag { A = 1, B = A << 1 }
const pick: Priority = Priority.High;
return [pick, Priority[Priority.Urgent], Status.Closed, Flag.B];"#,
    ),
    (
        "generics",
        r#"function first<T>(items: readonly T[]): T | undefined {
  return items[0];
}
class Box<T extends object = {}> {
  constructor(readonly value: T) {}
  map<U extends object>(f: (value: T) => U): Box<U> { return new Box<U>(f(this.value)); }
}
const hits = await tools.search<{ id: string }>("ticket");
return first<string>(hits.map((hit) => hit.id)) ?? new Box({ a: 1 }).map((v) => ({ b: v.a })).value;"#,
    ),
    (
        "as_const_and_satisfies",
        r#"const ids = ["a", "b"] as const;
type Id = (typeof ids)[number];
const config = { retries: 3, mode: "fast" } satisfies Record<string, number | string>;
const chosen = ids[1] as Id;
return { chosen, retries: config.retries, again: <number>config.retries };"#,
    ),
    (
        "optional_chaining_and_non_null",
        r#"type Hit = { id: string; meta?: { owner?: { name: string } } };
const hits: Hit[] = await tools.search("owner");
const owner = hits[0]?.meta?.owner?.name ?? "nobody";
const sure = hits.find((h) => h.id === "x")!.id;
let maybe: string | undefined;
maybe ??= owner;
return [owner, sure, maybe!.length, hits.at(-1)?.meta?.["owner"]?.name];"#,
    ),
    (
        "parameter_properties",
        r#"abstract class Shape {
  abstract area(): number;
  describe(): string { return `${this.constructor.name}: ${this.area()}`; }
}
class Rect extends Shape {
  static count = 0;
  private label = "rect";
  constructor(private readonly w: number, protected h: number, public name?: string) {
    super();
    Rect.count++;
  }
  override area(): number { return this.w * this.h; }
}
return [new Rect(2, 3).area(), new Rect(1, 1, "unit").describe(), Rect.count];"#,
    ),
    (
        "top_level_await_and_return",
        r#"const [a, b] = await Promise.all([
  tools.callValue("openclaw:core:read", { value: "a" }),
  tools.callValue("openclaw:core:read", { value: "b" }),
]) as [string, string];
if (!a) return null;
for await (const chunk of [Promise.resolve(1)]) { text(String(chunk)); }
return { a, b };"#,
    ),
    (
        "namespaces_and_declare",
        r#"declare const ALL_TOOLS: ReadonlyArray<{ id: string; name: string }>;
declare function text(value: unknown): void;
namespace Util {
  export const prefix = "openclaw:";
  export function isCore(id: string): boolean { return id.startsWith(prefix + "core:"); }
}
text(ALL_TOOLS.length);
return ALL_TOOLS.filter((tool) => Util.isCore(tool.id)).map((tool) => tool.name);"#,
    ),
    (
        "overloads_guards_and_tuples",
        r#"function size(value: string): number;
function size(value: unknown[]): number;
function size(value: string | unknown[]): number { return value.length; }
function isText(value: unknown): value is string { return typeof value === "string"; }
const pair: [name: string, count?: number] = ["x"];
const keys = Object.keys({ a: 1 }) as Array<keyof { a: number }>;
return [size("abc"), size([1, 2]), isText(pair[0]), keys];"#,
    ),
    (
        "comments_and_arrows",
        r#"// Find the open tickets.
const open = (await tools.search("open ticket")) /* hits */ as Array<{ id: string }>;
/** The ids. */
const ids = open.map(({ id }): string => id);
return ids; // done"#,
    ),
];

#[test]
fn corpus_snapshots() {
    for (name, source) in CORPUS {
        let javascript = prepare_source(source, Language::TypeScript, BOTH)
            .unwrap_or_else(|rejection| panic!("{name}: {rejection}"));
        // The output is JavaScript that passes the JavaScript checks unchanged.
        assert_eq!(
            prepare_source(&javascript, Language::JavaScript, BOTH),
            Ok(javascript.clone()),
            "{name}"
        );
        insta::assert_snapshot!(*name, javascript);
    }
}

#[test]
fn strip_typescript_matches_prepare_source() {
    for (name, source) in CORPUS {
        assert_eq!(
            strip_typescript(source),
            prepare_source(source, Language::TypeScript, BOTH),
            "{name}"
        );
    }
}

#[test]
fn diagnostics_carry_user_positions() {
    let cases = [
        ("const x: number = ;", "typescript transform failed: 1:19: Expression expected"),
        (
            "const a = 1;\nconst b = 2;\nconst c: = 3;",
            "typescript transform failed: 3:10: Unexpected token `=`. Expected an identifier, void, yield, null, await, break, a string literal, a numeric literal, true, false, `, -, import, this, typeof, {, [, (",
        ),
        ("if (x) {\n  return 1;", "typescript transform failed: 2:12: Expression expected"),
        ("let é = 1;\nlet s = 'ü' + ;", "typescript transform failed: 2:15: Expression expected"),
        ("enum { A }", "typescript transform failed: 1:1: Expression expected"),
    ];
    for (source, message) in cases {
        let rejection = prepare_source(source, Language::TypeScript, BOTH).unwrap_err();
        assert_eq!(rejection.code(), "invalid_input");
        assert_eq!(rejection.message(), message, "{source}");
    }
}

#[test]
fn several_diagnostics_are_joined_with_newlines() {
    let rejection = prepare_source("a?.b = 1;\nc?.d = 2;", Language::TypeScript, BOTH).unwrap_err();
    assert_eq!(
        rejection,
        Rejection::TypeScriptTransformFailed {
            diagnostics: vec![
                "1:1: The left-hand side of an assignment expression must be a variable or a property access.".into(),
                "2:1: The left-hand side of an assignment expression must be a variable or a property access.".into(),
            ]
        }
    );
    assert_eq!(
        rejection.message(),
        "typescript transform failed: 1:1: The left-hand side of an assignment expression must be a variable or a property access.\n2:1: The left-hand side of an assignment expression must be a variable or a property access."
    );
}

#[test]
fn exec_input_with_typescript() {
    let prepared = prepare_exec(
        &json!({"code": "const n: number = 7;\nreturn n;", "language": "typescript", "restartSafe": true}),
        BOTH,
    )
    .unwrap();
    // Tokens keep the user's lines and columns (docs/contract/decisions.md#d13).
    assert_eq!(prepared.javascript, "const n =         7;\nreturn n;");
    assert_eq!(prepared.language, Language::TypeScript);
    assert!(prepared.restart_safe);
}

#[test]
fn typescript_cells_run_the_transform() {
    let before = typescript_transform_count();
    prepare_source("return 1 as number;", Language::TypeScript, BOTH).unwrap();
    assert!(typescript_transform_count() > before);
}
