//! Dirty-page snapshots of real VMs (issue 17 item 5, docs/guest-abi.md "Snapshots"): a restored
//! VM holds exactly the memory of the one captured (its own snapshot is byte for byte the
//! same), only pages that differ from the image are stored, a run with a live heap goes on after
//! restore, and corrupt page lists are refused before or at restore.

use std::time::Duration;

use codemode_bridge::{Delivery, GuestState};
use codemode_runtime::{
    AbortHandle, LegBudget, ProtocolViolation, Runtime, Snapshot, SnapshotError, SnapshotFormat,
    Vm, VmError, VmLimits, SNAPSHOT_FORMAT_VERSION, SNAPSHOT_PAGE_BYTES,
};
use serde_json::json;

const CTX: &str = r#"{"tools":[]}"#;

fn limits() -> VmLimits {
    VmLimits {
        memory_limit_bytes: 128 * 1024 * 1024,
        ..VmLimits::default()
    }
}

fn budget() -> LegBudget {
    LegBudget::new(Duration::from_secs(60), AbortHandle::new())
}

/// A VM parked on `yield_control()`, holding `chars` pseudo-random characters in one string.
fn parked(chars: usize) -> Vm {
    let rt = Runtime::global().unwrap();
    let mut vm = rt.fresh_vm(&limits()).unwrap();
    let code = format!(
        "let x = 7; const parts = [];
         for (let i = 0; i < {chars}; i += 1024) {{
           let s = '';
           for (let j = 0; j < 1024; j++) {{ x = (x * 69069 + 1) % 4294967296; s += String.fromCharCode(33 + (x >>> 16) % 90); }}
           parts.push(s);
         }}
         const keep = parts.join('');
         const reason = await yield_control('park');
         return [keep.length, keep.slice(0, 4), keep.slice(-4), reason];"
    );
    let report = codemode_runtime::on_leg_stack(|| vm.start(&code, CTX, &limits(), &budget()))
        .unwrap()
        .unwrap();
    assert_eq!(report.state, GuestState::Pending, "{report:?}");
    vm
}

fn resume(vm: &mut Vm) -> serde_json::Value {
    let id = vm.pending()[0].id.clone();
    let report = codemode_runtime::on_leg_stack(|| {
        vm.deliver(
            &Delivery {
                id,
                outcome: Ok(json!("resumed")),
            },
            &budget(),
        )
    })
    .unwrap()
    .unwrap();
    match report.state {
        GuestState::Completed { value } => value,
        other => panic!("expected completed, got {other:?}"),
    }
}

/// capture → bytes → from_bytes → restore; the restored VM's own snapshot is the same bytes, so
/// its memory from the stack top is exactly the captured VM's.
fn round_trip(chars: usize) -> (Snapshot, Vm) {
    let mut vm = parked(chars);
    let snapshot = vm.snapshot().unwrap();
    let bytes = snapshot.to_bytes();
    assert_eq!(bytes.len(), snapshot.stored_bytes());
    assert_eq!(&bytes[8..12], &SNAPSHOT_FORMAT_VERSION.to_le_bytes());
    let parsed = Snapshot::from_bytes(&bytes).unwrap();
    assert_eq!(parsed, snapshot);
    let rt = Runtime::global().unwrap();
    let mut restored = rt.restore(&parsed, &limits()).unwrap();
    assert_eq!(restored.pending(), vm.pending());
    assert_eq!(restored.snapshot().unwrap().to_bytes(), bytes);
    // Only whole 4 KiB pages from a page-aligned stack top.
    assert_eq!(
        snapshot.memory_bytes(),
        snapshot.dirty_pages() * u64::from(SNAPSHOT_PAGE_BYTES)
    );
    (snapshot, restored)
}

#[test]
fn an_idle_parked_run_restores_exactly_and_holds_less_than_the_whole_region() {
    let (snapshot, mut restored) = round_trip(0);
    assert_eq!(resume(&mut restored), json!([0, "", "", "resumed"]));
    // The whole-region format of the same VM holds more memory (its stored size is about the
    // same: the XOR of an untouched page is zeros, which zstd stores in almost nothing).
    let mut vm = parked(0);
    let whole = vm.snapshot_with(SnapshotFormat::WholeDelta).unwrap();
    assert!(
        snapshot.memory_bytes() < whole.memory_bytes(),
        "{} pages vs {} bytes",
        snapshot.memory_bytes(),
        whole.memory_bytes()
    );
}

#[test]
fn a_run_with_a_live_heap_restores_twice_and_goes_on() {
    let (snapshot, mut restored) = round_trip(2 * 1024 * 1024);
    assert!(
        snapshot.memory_bytes() > 2 * 1024 * 1024,
        "{}",
        snapshot.memory_bytes()
    );
    let expected = resume(&mut parked(2 * 1024 * 1024));
    assert_eq!(expected[0], json!(2 * 1024 * 1024));
    assert_eq!(resume(&mut restored), expected);
    let mut again = Runtime::global()
        .unwrap()
        .restore(&snapshot, &limits())
        .unwrap();
    assert_eq!(resume(&mut again), expected);
}

#[test]
fn whole_region_snapshots_restore_too() {
    let mut vm = parked(64 * 1024);
    let whole = vm.snapshot_with(SnapshotFormat::WholeDelta).unwrap();
    let bytes = whole.to_bytes();
    assert_eq!(&bytes[8..12], &2u32.to_le_bytes());
    let parsed = Snapshot::from_bytes(&bytes).unwrap();
    let mut restored = Runtime::global()
        .unwrap()
        .restore(&parsed, &limits())
        .unwrap();
    assert_eq!(
        restored.snapshot().unwrap().to_bytes(),
        vm.snapshot().unwrap().to_bytes()
    );
    assert_eq!(resume(&mut restored), resume(&mut vm));
}

/// Byte offsets of the version-3 header fields.
const PAGES_AT: usize = 84;
const RUNS_AT: usize = 96;
const DATA_LEN_AT: usize = 100;
const TABLE_LEN_AT: usize = 108;
const HEADER: usize = 112;

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

#[test]
fn corrupt_page_lists_and_sizes_are_refused() {
    let mut vm = parked(0);
    let bytes = vm.snapshot().unwrap().to_bytes();
    let runs_start = HEADER + u32_at(&bytes, TABLE_LEN_AT) as usize;
    let run_count = u32_at(&bytes, RUNS_AT) as usize;
    assert!(run_count >= 2, "{run_count} runs");
    let corrupt = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = bytes.clone();
        edit(&mut b);
        Snapshot::from_bytes(&b)
    };
    // The first run moved past the end of memory.
    let pages = u64::from_le_bytes(bytes[PAGES_AT..PAGES_AT + 8].try_into().unwrap());
    let slots = (pages * 65536 - u64::from(u32_at(&bytes, 80))) / 4096;
    assert_eq!(
        corrupt(&|b| b[runs_start..runs_start + 4].copy_from_slice(&(slots as u32).to_le_bytes())),
        Err(SnapshotError::Corrupt("page index out of range".into()))
    );
    // The second run a duplicate of the first.
    assert_eq!(
        corrupt(&|b| {
            let first: [u8; 8] = b[runs_start..runs_start + 8].try_into().unwrap();
            b[runs_start + 8..runs_start + 16].copy_from_slice(&first);
        }),
        Err(SnapshotError::Corrupt(
            "page runs out of order or overlapping".into()
        ))
    );
    // One page more in the first run than the stored length says.
    assert_eq!(
        corrupt(&|b| {
            let count = u32_at(b, runs_start + 4) + 1;
            b[runs_start + 4..runs_start + 8].copy_from_slice(&count.to_le_bytes());
        }),
        Err(SnapshotError::Corrupt(
            "memory length does not match its pages".into()
        ))
    );
    // No pages at all: the compressed pages are then more than the list says (at restore).
    let rt = Runtime::global().unwrap();
    let without_runs = |b: &mut Vec<u8>| {
        b.drain(runs_start..runs_start + 8 * run_count);
        b[RUNS_AT..RUNS_AT + 4].copy_from_slice(&0u32.to_le_bytes());
        b[DATA_LEN_AT..DATA_LEN_AT + 8].copy_from_slice(&0u64.to_le_bytes());
    };
    let no_pages = corrupt(&without_runs).unwrap();
    assert_eq!(
        rt.restore(&no_pages, &limits()).unwrap_err(),
        VmError::Protocol(ProtocolViolation::CorruptMemory {
            what: "memory longer than its pages".into()
        })
    );
    // Fewer memory pages than a fresh VM has (memory cannot shrink): refused at restore.
    let just_past_the_stack = u64::from(u32_at(&bytes, 80)).div_ceil(65536) + 1;
    assert!(just_past_the_stack < pages);
    let small = corrupt(&|b| {
        without_runs(b);
        b[PAGES_AT..PAGES_AT + 8].copy_from_slice(&just_past_the_stack.to_le_bytes());
    })
    .unwrap();
    assert_eq!(
        rt.restore(&small, &limits()).unwrap_err(),
        VmError::Protocol(ProtocolViolation::SmallerThanFresh)
    );
    // A flipped byte in the compressed pages fails the restore (zstd's checksum).
    let n = bytes.len();
    let garbled = corrupt(&|b| b[n - 10] ^= 0xff).unwrap();
    assert!(matches!(
        rt.restore(&garbled, &limits()),
        Err(VmError::Protocol(ProtocolViolation::CorruptMemory { .. }))
    ));
}
