//! The clamping setters of `CodeModeConfig`: every numeric field at its extremes, the
//! `searchDefaultLimit <= maxSearchLimit` invariant, and languages.

use codemode_config::{
    CodeModeConfig, Enabled, Language, NumericField, DEFAULT_LANGUAGES, MAX_OUTPUT_BYTES,
    MAX_PENDING_TOOL_CALLS, MAX_SEARCH_LIMIT, MAX_SNAPSHOT_BYTES, MEMORY_LIMIT_BYTES,
    NUMERIC_FIELDS, SEARCH_DEFAULT_LIMIT, SNAPSHOT_TTL_SECONDS, TIMEOUT_MS,
};

/// Sets one field through its typed setter (not by name), then reads it back by its getter.
/// `(asked, got)` of both search limits: clamped to 1..=50.
const SEARCH_LIMIT_CASES: [(u64, u64); 7] = [
    (0, 1),
    (1, 1),
    (0, 1),
    (1, 1),
    (50, 50),
    (51, 50),
    (u64::MAX, 50),
];

fn set_typed(field: &str, value: u64) -> u64 {
    let mut c = CodeModeConfig::default();
    match field {
        "timeoutMs" => c.set_timeout_ms(value).timeout_ms(),
        "memoryLimitBytes" => c.set_memory_limit_bytes(value).memory_limit_bytes(),
        "maxOutputBytes" => c.set_max_output_bytes(value).max_output_bytes(),
        "maxSnapshotBytes" => c.set_max_snapshot_bytes(value).max_snapshot_bytes(),
        "maxPendingToolCalls" => c.set_max_pending_tool_calls(value).max_pending_tool_calls(),
        "snapshotTtlSeconds" => c.set_snapshot_ttl_seconds(value).snapshot_ttl_seconds(),
        "searchDefaultLimit" => c.set_search_default_limit(value).search_default_limit(),
        "maxSearchLimit" => c.set_max_search_limit(value).max_search_limit(),
        other => panic!("no field {other}"),
    }
}

/// `(given, kept)` for every extreme of one field, written out per field below.
type Extremes = [(u64, u64); 7];

fn check(field: NumericField, cases: Extremes) {
    for (given, kept) in cases {
        assert_eq!(set_typed(field.name, given), kept, "{} {given}", field.name);
        let mut c = CodeModeConfig::default();
        assert_eq!(
            c.set_numeric(field.name, given),
            Some(kept),
            "set_numeric {} {given}",
            field.name
        );
        assert_eq!(c.numeric(field.name), Some(kept));
        // Setting one field leaves every other field at its default.
        for other in NUMERIC_FIELDS.iter().filter(|o| o.name != field.name) {
            let expected = if other.name == "searchDefaultLimit" {
                other.default.min(c.max_search_limit())
            } else {
                other.default
            };
            assert_eq!(
                c.numeric(other.name),
                Some(expected),
                "{} after {}",
                other.name,
                field.name
            );
        }
    }
}

/// Every numeric field with `(given, kept)` for 0, 1, min-1, min, max, max+1 and `u64::MAX`
/// (where min is 1, "min-1" is 0 again). `searchDefaultLimit`'s effective maximum is the default
/// `maxSearchLimit` 50; lowering `maxSearchLimit` under the default `searchDefaultLimit` 8 lowers
/// that too, which `check` expects.
const EXTREMES: [(NumericField, Extremes); 8] = [
    (
        TIMEOUT_MS,
        [
            (0, 100),
            (1, 100),
            (99, 100),
            (100, 100),
            (60_000, 60_000),
            (60_001, 60_000),
            (u64::MAX, 60_000),
        ],
    ),
    (
        MEMORY_LIMIT_BYTES,
        [
            (0, 1_048_576),
            (1, 1_048_576),
            (1_048_575, 1_048_576),
            (1_048_576, 1_048_576),
            (1_073_741_824, 1_073_741_824),
            (1_073_741_825, 1_073_741_824),
            (u64::MAX, 1_073_741_824),
        ],
    ),
    (
        MAX_OUTPUT_BYTES,
        [
            (0, 1_024),
            (1, 1_024),
            (1_023, 1_024),
            (1_024, 1_024),
            (10_485_760, 10_485_760),
            (10_485_761, 10_485_760),
            (u64::MAX, 10_485_760),
        ],
    ),
    (
        MAX_SNAPSHOT_BYTES,
        [
            (0, 1_024),
            (1, 1_024),
            (1_023, 1_024),
            (1_024, 1_024),
            (268_435_456, 268_435_456),
            (268_435_457, 268_435_456),
            (u64::MAX, 268_435_456),
        ],
    ),
    (
        MAX_PENDING_TOOL_CALLS,
        [
            (0, 1),
            (1, 1),
            (0, 1),
            (1, 1),
            (128, 128),
            (129, 128),
            (u64::MAX, 128),
        ],
    ),
    (
        SNAPSHOT_TTL_SECONDS,
        [
            (0, 1),
            (1, 1),
            (0, 1),
            (1, 1),
            (86_400, 86_400),
            (86_401, 86_400),
            (u64::MAX, 86_400),
        ],
    ),
    (SEARCH_DEFAULT_LIMIT, SEARCH_LIMIT_CASES),
    (MAX_SEARCH_LIMIT, SEARCH_LIMIT_CASES),
];

#[test]
fn every_numeric_field_at_its_extremes() {
    let names: Vec<&str> = EXTREMES.iter().map(|(f, _)| f.name).collect();
    let all: Vec<&str> = NUMERIC_FIELDS.iter().map(|f| f.name).collect();
    assert_eq!(names, all, "one row per field, in table order");
    for (field, cases) in EXTREMES {
        check(field, cases);
    }
}

#[test]
fn the_rows_above_are_the_spec_table() {
    let ranges: Vec<(&str, u64, u64)> = NUMERIC_FIELDS
        .iter()
        .map(|f| (f.name, f.min, f.max))
        .collect();
    assert_eq!(
        ranges,
        [
            ("timeoutMs", 100, 60_000),
            ("memoryLimitBytes", 1_048_576, 1_073_741_824),
            ("maxOutputBytes", 1_024, 10_485_760),
            ("maxSnapshotBytes", 1_024, 268_435_456),
            ("maxPendingToolCalls", 1, 128),
            ("snapshotTtlSeconds", 1, 86_400),
            ("searchDefaultLimit", 1, 50),
            ("maxSearchLimit", 1, 50),
        ]
    );
}

#[test]
fn search_default_limit_stays_at_most_max_search_limit() {
    let mut c = CodeModeConfig::default();
    c.set_max_search_limit(3);
    assert_eq!((c.search_default_limit(), c.max_search_limit()), (3, 3));
    // Above the resolved maxSearchLimit: clamped to it, not to 50.
    c.set_search_default_limit(40);
    assert_eq!(c.search_default_limit(), 3);
    c.set_search_default_limit(u64::MAX);
    assert_eq!(c.search_default_limit(), 3);
    // Raising maxSearchLimit never raises searchDefaultLimit.
    c.set_max_search_limit(u64::MAX);
    assert_eq!((c.search_default_limit(), c.max_search_limit()), (3, 50));
    c.set_search_default_limit(40);
    assert_eq!(c.search_default_limit(), 40);
    // Lowering maxSearchLimit under it lowers it; a value already under is kept.
    c.set_max_search_limit(20);
    assert_eq!((c.search_default_limit(), c.max_search_limit()), (20, 20));
    c.set_search_default_limit(5).set_max_search_limit(10);
    assert_eq!((c.search_default_limit(), c.max_search_limit()), (5, 10));
    c.set_max_search_limit(0);
    assert_eq!((c.search_default_limit(), c.max_search_limit()), (1, 1));
}

#[test]
fn set_numeric_ignores_unknown_names() {
    let mut c = CodeModeConfig::default();
    assert_eq!(c.set_numeric("timeoutMS", 5), None);
    assert_eq!(c.set_numeric("enabled", 1), None);
    assert_eq!(c, CodeModeConfig::default());
}

#[test]
fn the_largest_timeout_fits_a_deadline() {
    let mut c = CodeModeConfig::default();
    c.set_timeout_ms(u64::MAX)
        .set_snapshot_ttl_seconds(u64::MAX);
    assert_eq!(c.timeout(), std::time::Duration::from_millis(60_000));
    assert_eq!(c.snapshot_ttl(), std::time::Duration::from_secs(86_400));
    let now = std::time::Instant::now();
    assert!(now.checked_add(c.timeout()).is_some());
    assert!(now.checked_add(c.snapshot_ttl()).is_some());
}

#[test]
fn setters_keep_the_config_a_fixed_point_of_resolve() {
    let mut c = CodeModeConfig::default();
    c.set_enabled(Enabled::On)
        .set_languages(&[Language::TypeScript])
        .set_timeout_ms(u64::MAX)
        .set_memory_limit_bytes(0)
        .set_max_output_bytes(1)
        .set_max_snapshot_bytes(u64::MAX)
        .set_max_pending_tool_calls(0)
        .set_snapshot_ttl_seconds(u64::MAX)
        .set_max_search_limit(7)
        .set_search_default_limit(u64::MAX);
    let resolved = codemode_config::resolve(&c.to_value());
    assert!(resolved.warnings.is_empty(), "{:?}", resolved.warnings);
    assert_eq!(resolved.config, c);
    assert_eq!(
        c.to_value(),
        serde_json::json!({
            "enabled": true, "runtime": "quickjs-wasi", "mode": "only",
            "languages": ["typescript"], "timeoutMs": 60000, "memoryLimitBytes": 1048576,
            "maxOutputBytes": 1024, "maxSnapshotBytes": 268435456, "maxPendingToolCalls": 1,
            "snapshotTtlSeconds": 86400, "searchDefaultLimit": 7, "maxSearchLimit": 7
        })
    );
}

#[test]
fn set_languages_dedups_and_never_empties() {
    use Language::{JavaScript as J, TypeScript as T};
    let cases: [(&[Language], &[Language]); 5] = [
        (&[T], &[T]),
        (&[T, J], &[T, J]),
        (&[T, J, T, J], &[T, J]),
        (&[J, J], &[J]),
        (&[], &DEFAULT_LANGUAGES),
    ];
    for (given, kept) in cases {
        let mut c = CodeModeConfig::default();
        c.set_languages(given);
        assert_eq!(c.languages(), kept, "{given:?}");
    }
    let mut c = CodeModeConfig::default();
    c.set_languages(&[T]);
    assert!(c.allows(T) && !c.allows(J));
}

#[test]
fn enabled_round_trips_through_its_setter() {
    for enabled in [Enabled::Off, Enabled::On, Enabled::Auto] {
        let mut c = CodeModeConfig::default();
        c.set_enabled(enabled);
        assert_eq!(c.enabled(), enabled);
    }
}

#[test]
fn numeric_field_clamp_is_the_static_range() {
    assert_eq!(TIMEOUT_MS.clamp(0), 100);
    assert_eq!(TIMEOUT_MS.clamp(5_000), 5_000);
    assert_eq!(TIMEOUT_MS.clamp(u64::MAX), 60_000);
    assert_eq!(SEARCH_DEFAULT_LIMIT.clamp(u64::MAX), 50);
}
