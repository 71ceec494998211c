//! A small in-process fuzzing engine for stable Rust (docs/threat-model.md, "Fuzzing"): seeds,
//! byte-level and JSON-structure mutations from a xorshift generator, and a time or iteration
//! budget. Each target's test file includes it with `#[path]`; `cargo xtask fuzz [--seconds N]`
//! runs every target for N seconds (`CODEMODE_FUZZ_SECONDS`), and without it each target runs a
//! fixed number of iterations as an ordinary test, so CI keeps them honest.
//!
//! A target is a closure over `&[u8]` that must not panic (a panic is the finding): the engine
//! catches it, writes the input to `target/fuzz-findings/<target>-<n>.bin` and fails the test
//! naming that file. Why not cargo-fuzz/libFuzzer: it needs a nightly toolchain
//! (`-Zsanitizer`); AFL needs its own compiler wrappers. This engine is coverage-blind, which the
//! structure-aware JSON generator makes up for in part; the choice and the run durations are
//! recorded in docs/threat-model.md.

#![allow(dead_code, missing_docs)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// Iterations per target when `CODEMODE_FUZZ_SECONDS` is unset (a regression run in CI).
pub(crate) const DEFAULT_ITERATIONS: u64 = 400;

/// A xorshift64* generator: deterministic per seed, so a run can be repeated.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub(crate) fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// Interesting bytes and tokens mutations insert.
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"null",
    b"true",
    b"-1",
    b"1e999",
    b"0.0",
    b"\\u0000",
    b"\\ud800",
    b"\xff",
    b"\xc3",
    b"\x00",
    b"9999999999999999999999",
    b"\"__proto__\"",
    b"\"constructor\"",
    b"bridge:call:1",
    b"bridge:callValue:0",
    b"$ref",
    b"\"$ref\":\"#\"",
    b"\"type\"",
    b"\"object\"",
    b"\"properties\"",
    b"\"enum\"",
    b"\"anyOf\"",
    b"*/",
    b"/*",
    b"`",
    b"${",
    b"\n",
    b"\r\n",
    "\u{2028}".as_bytes(),
];

/// A random JSON value of at most `depth` levels (hostile shapes: deep nesting, odd keys, big
/// numbers, lone escapes).
pub(crate) fn json_value(rng: &mut Rng, depth: u32) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let leaf = |rng: &mut Rng| -> Value {
        match rng.below(8) {
            0 => Value::Null,
            1 => Value::Bool(rng.chance(2)),
            2 => json!(rng.next() as i64),
            3 => json!((rng.next() % 1000) as f64 / 7.0),
            4 => Value::String(string(rng)),
            5 => json!(""),
            6 => json!(
                ["string", "number", "integer", "object", "array", "boolean", "null"][rng.below(7)]
            ),
            _ => json!(rng.below(3)),
        }
    };
    if depth == 0 || rng.chance(3) {
        return leaf(rng);
    }
    if rng.chance(2) {
        let n = rng.below(5);
        Value::Array((0..n).map(|_| json_value(rng, depth - 1)).collect())
    } else {
        let mut map = Map::new();
        for _ in 0..rng.below(6) {
            map.insert(key(rng), json_value(rng, depth - 1));
        }
        Value::Object(map)
    }
}

/// A random key: schema keywords, prototype names, or random text.
pub(crate) fn key(rng: &mut Rng) -> String {
    const KEYS: &[&str] = &[
        "type",
        "properties",
        "items",
        "required",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "default",
        "additionalProperties",
        "__proto__",
        "constructor",
        "toString",
        "id",
        "input",
        "query",
        "limit",
        "args",
        "path",
        "namespace",
        "status",
        "outstanding",
        "requests",
        "output",
        "value",
        "error",
        "method",
        "enabled",
        "timeoutMs",
        "memoryLimitBytes",
        "languages",
        "tools",
        "agents",
        "list",
        "codeMode",
        "title",
        "format",
        "pattern",
        "minimum",
        "maxItems",
        "nullable",
    ];
    if rng.chance(4) {
        string(rng)
    } else {
        KEYS[rng.below(KEYS.len())].to_string()
    }
}

/// A random short string with hostile characters.
pub(crate) fn string(rng: &mut Rng) -> String {
    const PARTS: &[&str] = &[
        "a",
        "Z",
        "0",
        " ",
        "*/",
        "/*",
        "\"",
        "\\",
        "`",
        "${x}",
        "\u{0}",
        "\u{2028}",
        "\u{feff}",
        "é",
        "😀",
        "\n",
        "<",
        ">",
        "&",
        "'",
        "-",
        "_",
        ".",
        "$",
        "__proto__",
        "constructor",
        "bridge:call:1",
        "mcp:s:t",
        "../",
        "declare",
        "function",
        "}",
        "{",
    ];
    let n = rng.below(8);
    (0..n).map(|_| PARTS[rng.below(PARTS.len())]).collect()
}

/// One mutation of `input`: flip, insert, delete, duplicate or splice tokens.
pub(crate) fn mutate(rng: &mut Rng, input: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        let len = input.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(len + 1);
                input.insert(i, rng.next() as u8);
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let n = rng.below((len - i).min(16) + 1);
                input.drain(i..i + n);
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = rng.below((len - i).min(64) + 1);
                let copy = input[i..i + n].to_vec();
                let at = rng.below(input.len() + 1);
                input.splice(at..at, copy);
            }
            4 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                let i = rng.below(len + 1);
                input.splice(i..i, t.iter().copied());
            }
            5 if len > 0 => {
                let i = rng.below(len);
                input.truncate(i);
            }
            _ => {
                let i = rng.below(len + 1);
                // Mostly shallow; one time in 64 far past any parser's depth limit (100,000
                // levels: a parser that recursed per level would overflow the stack).
                let depth = if rng.chance(64) {
                    100_000
                } else {
                    rng.below(300)
                };
                let nest: Vec<u8> = match rng.below(3) {
                    0 => b"[".repeat(depth),
                    1 => b"{\"a\":".repeat(depth),
                    _ => b"{a:".repeat(depth),
                };
                input.splice(i..i, nest);
            }
        }
    }
}

/// A structure-aware input generator.
pub(crate) type Generator = dyn Fn(&mut Rng) -> Vec<u8>;

/// Runs `target` on seeds, their mutations and (when `structured` is given) generated inputs,
/// for `CODEMODE_FUZZ_SECONDS` seconds or [`DEFAULT_ITERATIONS`] iterations. Panics naming the
/// saved input when the target panics; prints `fuzz <name>: <n> inputs in <s> s` at the end.
pub(crate) fn run(
    name: &str,
    seeds: &[Vec<u8>],
    structured: Option<&Generator>,
    target: &dyn Fn(&[u8]),
) {
    let seconds: Option<u64> = std::env::var("CODEMODE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok());
    let seed = std::env::var("CODEMODE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c0de_u64 ^ name.len() as u64);
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let budget = seconds.map(Duration::from_secs);
    let mut corpus: Vec<Vec<u8>> = seeds.to_vec();
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let mut n: u64 = 0;
    loop {
        match budget {
            Some(b) if started.elapsed() >= b => break,
            None if n >= DEFAULT_ITERATIONS => break,
            _ => {}
        }
        let input = if n < seeds.len() as u64 {
            seeds[n as usize].clone()
        } else if let Some(gen) = structured.filter(|_| rng.chance(3)) {
            gen(&mut rng)
        } else {
            let mut input = corpus[rng.below(corpus.len())].clone();
            mutate(&mut rng, &mut input);
            input.truncate(1 << 20);
            input
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| target(&input)));
        if outcome.is_err() {
            let dir =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-findings");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{name}-{n}.bin"));
            let _ = std::fs::write(&file, &input);
            panic!(
                "fuzz {name}: input {n} panicked; saved to {}",
                file.display()
            );
        }
        // Keep a bounded, changing corpus of recent inputs to mutate further.
        if corpus.len() < 256 {
            corpus.push(input);
        } else if rng.chance(8) {
            let i = rng.below(corpus.len());
            corpus[i] = input;
        }
        n += 1;
    }
    eprintln!(
        "fuzz {name}: {n} inputs in {:.1} s, no panic",
        started.elapsed().as_secs_f64()
    );
}
