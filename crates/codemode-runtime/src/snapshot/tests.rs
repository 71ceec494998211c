//! Dirty-page snapshots on plain byte slices: round trips against random memories and images
//! (proptest), the stored pages are exactly the ones that differ, every corrupt input is refused
//! with its own message, and the bounds of a capture.

use super::*;
use proptest::prelude::*;

const GUEST: [u8; 32] = [7; 32];

/// Deterministic filler: `len` bytes from a linear congruential generator, a quarter of them
/// runs of zeros (memory is mostly zeros and small integers).
fn filler(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let run = ((x >> 33) % 300) as usize + 1;
        let zero = (x >> 20).is_multiple_of(4);
        for _ in 0..run.min(len - out.len()) {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.push(if zero { 0 } else { (x >> 56) as u8 });
        }
    }
    out
}

/// An image of `pages` wasm pages with its stack top at `base`, filled from `seed`.
fn image(base: u32, pages: u64, seed: u64) -> Image {
    let len = pages as usize * 65536 - base as usize;
    let data = filler(seed, len);
    Image::capture(MemoryAtRest {
        pages,
        stack_pointer: base,
        base,
        data: &data,
        initial_bytes: 65536,
    })
}

fn at_rest(memory: &[u8], base: u32) -> MemoryAtRest<'_> {
    MemoryAtRest {
        pages: (memory.len() as u64 + u64::from(base)) / 65536,
        stack_pointer: base,
        base,
        data: memory,
        initial_bytes: 65536,
    }
}

fn capture(image: &Image, memory: &[u8], base: u32, format: SnapshotFormat) -> Snapshot {
    let mut counters = BTreeMap::new();
    counters.insert(BridgeMethod::Call, 3);
    Snapshot::capture(
        GUEST,
        image,
        at_rest(memory, base),
        Vec::new(),
        counters,
        format,
    )
    .unwrap()
}

/// What a restore writes into: a fresh VM's memory, the image and zeros beyond it.
fn fresh_memory(image: &Image, len: usize) -> Vec<u8> {
    let mut dst = image.data.clone();
    dst.resize(len, 0);
    dst
}

/// Page indices (from the stack top) where `memory` differs from `image` (zeros beyond it).
fn differing_pages(memory: &[u8], image: &[u8], page_bytes: usize) -> Vec<u32> {
    (0..memory.len().div_ceil(page_bytes))
        .filter(|&i| {
            let end = ((i + 1) * page_bytes).min(memory.len());
            (i * page_bytes..end).any(|at| memory[at] != image.get(at).copied().unwrap_or(0))
        })
        .map(|i| i as u32)
        .collect()
}

fn stored_pages(snapshot: &Snapshot) -> Vec<u32> {
    match &snapshot.memory {
        StoredMemory::Pages { runs, .. } => runs
            .iter()
            .flat_map(|r| r.first..r.first + r.count)
            .collect(),
        StoredMemory::Whole { .. } => panic!("not a page snapshot"),
    }
}

const FORMATS: [SnapshotFormat; 3] = [
    SnapshotFormat::DirtyPages { page_bytes: 4096 },
    SnapshotFormat::DirtyPages { page_bytes: 65536 },
    SnapshotFormat::WholeDelta,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// capture → to_bytes → from_bytes → restore into a VM holding the image gives back the
    /// exact memory, in every format; a page snapshot stores exactly the differing pages.
    #[test]
    fn round_trip_gives_the_exact_memory(
        base in prop_oneof![Just(0u32), Just(1000u32), Just(65536u32)],
        image_pages in 2u64..4,
        grown in 0u64..3,
        seed in any::<u64>(),
        writes in proptest::collection::vec((0.0f64..1.0, 1usize..9000, any::<u64>()), 0..12),
    ) {
        let image = image(base, image_pages, seed);
        let len = (image_pages + grown) as usize * 65536 - base as usize;
        let mut memory = fresh_memory(&image, len);
        for (at, n, fill) in &writes {
            let start = (*at * len as f64) as usize;
            let end = (start + n).min(len);
            let bytes = filler(*fill, end - start);
            memory[start..end].copy_from_slice(&bytes);
        }
        for format in FORMATS {
            let snapshot = capture(&image, &memory, base, format);
            let bytes = snapshot.to_bytes();
            prop_assert_eq!(bytes.len(), snapshot.stored_bytes());
            let parsed = Snapshot::from_bytes(&bytes).unwrap();
            prop_assert_eq!(&parsed, &snapshot);
            // A page snapshot restores into a VM holding the image; a whole one into a raw
            // instance (zeros past the module's initial memory).
            let mut dst = match format {
                SnapshotFormat::WholeDelta => vec![0u8; len],
                SnapshotFormat::DirtyPages { .. } => fresh_memory(&image, len),
            };
            parsed.restore_memory(&mut dst, &image).unwrap();
            let first_difference = dst.iter().zip(&memory).position(|(a, b)| a != b);
            prop_assert_eq!(first_difference, None, "{:?}: restored memory differs", format);
            if let SnapshotFormat::DirtyPages { page_bytes } = format {
                let expected = differing_pages(&memory, &image.data, page_bytes as usize);
                prop_assert_eq!(stored_pages(&snapshot), expected.clone());
                let bytes: u64 = expected
                    .iter()
                    .map(|&i| slot_bytes(u64::from(i), u64::from(page_bytes), len as u64))
                    .sum();
                prop_assert_eq!(snapshot.memory_bytes(), bytes);
                prop_assert_eq!(snapshot.dirty_pages(), expected.len() as u64);
            }
        }
    }
}

#[test]
fn an_untouched_memory_stores_no_pages() {
    let image = image(65536, 3, 1);
    let memory = image.data.clone();
    let snapshot = capture(&image, &memory, 65536, SnapshotFormat::default());
    assert_eq!(snapshot.dirty_pages(), 0);
    assert_eq!(snapshot.memory_bytes(), 0);
    let bytes = snapshot.to_bytes();
    assert_eq!(&bytes[8..12], &3u32.to_le_bytes());
    let mut dst = image.data.clone();
    Snapshot::from_bytes(&bytes)
        .unwrap()
        .restore_memory(&mut dst, &image)
        .unwrap();
    assert_eq!(dst, memory);
}

#[test]
fn neighbouring_dirty_pages_make_one_run() {
    let image = image(0, 2, 2);
    let mut memory = image.data.clone();
    // Pages 1, 2, 3 (bytes 4095..12289 touch 0..=3; keep page 0 clean), and 9; then two pages
    // past the image.
    for at in [4096, 8191, 8192, 12288, 9 * 4096 + 5] {
        memory[at] ^= 0x55;
    }
    memory.resize(4 * 65536, 0);
    memory[2 * 65536 + 7] = 1;
    memory[3 * 65536 + 4095] = 1;
    let snapshot = capture(&image, &memory, 0, SnapshotFormat::default());
    let StoredMemory::Pages { runs, .. } = &snapshot.memory else {
        panic!("format");
    };
    assert_eq!(
        runs,
        &[
            PageRun { first: 1, count: 3 },
            PageRun { first: 9, count: 1 },
            PageRun {
                first: 32,
                count: 1
            },
            PageRun {
                first: 48,
                count: 1
            },
        ]
    );
    assert_eq!(snapshot.memory_bytes(), 6 * 4096);
}

/// A page snapshot as bytes with its header fields and runs replaced: `edit(page_bytes, runs,
/// data_len)`.
fn edited(edit: impl FnOnce(&mut u32, &mut Vec<(u32, u32)>, &mut u64)) -> Vec<u8> {
    let image = image(1000, 2, 3);
    let mut memory = image.data.clone();
    memory[5000] ^= 1;
    memory[70000] ^= 1;
    let snapshot = capture(&image, &memory, 1000, SnapshotFormat::default());
    let StoredMemory::Pages {
        mut page_bytes,
        runs,
        mut data_len,
        compressed,
    } = snapshot.memory.clone()
    else {
        panic!("format");
    };
    let mut runs: Vec<(u32, u32)> = runs.iter().map(|r| (r.first, r.count)).collect();
    edit(&mut page_bytes, &mut runs, &mut data_len);
    Snapshot {
        memory: StoredMemory::Pages {
            page_bytes,
            runs: runs
                .into_iter()
                .map(|(first, count)| PageRun { first, count })
                .collect(),
            data_len,
            compressed,
        },
        ..snapshot
    }
    .to_bytes()
}

fn corrupt(bytes: &[u8]) -> String {
    match Snapshot::from_bytes(bytes) {
        Err(SnapshotError::Corrupt(what)) => what,
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn corrupt_page_lists_are_refused_with_their_reason() {
    // The unedited snapshot parses: pages 1 and 17 of 4 KiB from the stack top at 1000.
    let good = edited(|_, runs, _| assert_eq!(runs, &[(1, 1), (17, 1)]));
    assert!(Snapshot::from_bytes(&good).is_ok());
    // (2 × 65536 − 1000) bytes from the stack top: 32 slots, the last one 3096 bytes.
    assert_eq!(
        corrupt(&edited(|_, runs, _| runs[1] = (32, 1))),
        "page index out of range"
    );
    assert_eq!(
        corrupt(&edited(|_, runs, _| runs[1] = (31, 2))),
        "page index out of range"
    );
    assert_eq!(
        corrupt(&edited(|_, runs, _| runs[1] = (u32::MAX, u32::MAX))),
        "page index out of range"
    );
    assert_eq!(
        corrupt(&edited(|_, runs, _| runs[1] = (1, 1))),
        "page runs out of order or overlapping"
    );
    assert_eq!(
        corrupt(&edited(|_, runs, _| runs.swap(0, 1))),
        "page runs out of order or overlapping"
    );
    assert_eq!(
        corrupt(&edited(|_, runs, _| runs[0] = (1, 17))),
        "page runs out of order or overlapping"
    );
    assert_eq!(
        corrupt(&edited(|_, runs, _| runs[0] = (1, 0))),
        "empty page run"
    );
    assert_eq!(
        corrupt(&edited(|_, _, len| *len += 1)),
        "memory length does not match its pages"
    );
    assert_eq!(
        corrupt(&edited(|_, runs, _| runs.push((20, 1)))),
        "memory length does not match its pages"
    );
    // The last slot is short: a run ending there stores 3096 bytes for it.
    let last = edited(|_, runs, len| {
        runs[1] = (31, 1);
        *len = 4096 + 3096;
    });
    assert!(Snapshot::from_bytes(&last).is_ok());
    for size in [0, 1024, 4095, 6000, 131072] {
        assert_eq!(
            corrupt(&edited(|p, _, _| *p = size)),
            format!("unsupported page size {size}")
        );
    }
    // Cut inside the page list (the host table is short; the runs are just before the zstd
    // frame, whose first bytes are its magic).
    let frame = good
        .windows(4)
        .position(|w| w == [0x28, 0xb5, 0x2f, 0xfd])
        .unwrap();
    assert_eq!(corrupt(&good[..frame - 3]), "truncated page list");
    let mut many_runs = good.clone();
    many_runs[96..100].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(corrupt(&many_runs), "truncated page list");
}

#[test]
fn corrupt_headers_are_refused_with_their_reason() {
    let good = edited(|_, _, _| {});
    assert_eq!(corrupt(&good[..50]), "bad header");
    assert_eq!(corrupt(&good[..HEADER_BYTES - 1]), "bad header");
    let mut magic = good.clone();
    magic[0] = b'X';
    assert_eq!(corrupt(&magic), "bad header");
    let mut version = good.clone();
    version[8..12].copy_from_slice(&4u32.to_le_bytes());
    assert_eq!(
        Snapshot::from_bytes(&version),
        Err(SnapshotError::Version(4))
    );
    let mut pages = good.clone();
    pages[84..92].copy_from_slice(&65537u64.to_le_bytes());
    assert_eq!(corrupt(&pages), "memory size out of range");
    let mut base = good.clone();
    base[80..84].copy_from_slice(&(2 * 65536 + 1u32).to_le_bytes());
    assert_eq!(corrupt(&base), "memory size out of range");
    let mut table = good.clone();
    table[108..112].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(corrupt(&table), "truncated host table");
}

#[test]
fn corrupt_compressed_pages_fail_the_restore() {
    let image = image(1000, 2, 4);
    let mut memory = image.data.clone();
    for at in (0..memory.len()).step_by(7000) {
        memory[at] ^= 0xaa;
    }
    let bytes = capture(&image, &memory, 1000, SnapshotFormat::default()).to_bytes();
    let restore = |bytes: &[u8]| {
        let snapshot = Snapshot::from_bytes(bytes)?;
        let mut dst = image.data.clone();
        snapshot
            .restore_memory(&mut dst, &image)
            .map_err(|e| SnapshotError::Corrupt(e.to_string()))
    };
    assert!(restore(&bytes).is_ok());
    let n = bytes.len();
    // A flipped byte in the frame's last block or its checksum; the frame cut short; bytes
    // after it.
    let mut flipped = bytes.clone();
    flipped[n - 10] ^= 0xff;
    assert!(restore(&flipped).is_err());
    let mut checksum = bytes.clone();
    checksum[n - 1] ^= 0xff;
    let err = restore(&checksum).unwrap_err().to_string();
    assert!(err.contains("corrupt snapshot"), "{err}");
    assert!(restore(&bytes[..n - 1]).is_err());
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        restore(&longer).unwrap_err(),
        SnapshotError::Corrupt(
            "code mode guest protocol violation: corrupt snapshot: bytes after the memory".into()
        )
    );
}

#[test]
fn a_capture_stops_at_its_size_limit_and_its_deadline() {
    let image = image(0, 2, 5);
    // 8 MiB of incompressible pages past the image.
    let mut memory = image.data.clone();
    memory.extend(filler(9, 128 * 65536).iter().map(|b| b | 1));
    let m = || at_rest(&memory, 0);
    let bounded = |max, until| {
        Snapshot::capture_bounded(GUEST, &image, m(), Vec::new(), BTreeMap::new(), max, until)
    };
    let later = Instant::now() + std::time::Duration::from_secs(60);
    assert_eq!(bounded(1024 * 1024, later).unwrap(), None);
    assert_eq!(
        bounded(usize::MAX, Instant::now()).unwrap_err(),
        VmError::Timeout
    );
    let full = bounded(usize::MAX, later).unwrap().unwrap();
    assert_eq!(full.dirty_pages(), 128 * 16);
    // Exactly at its own size it fits (the limit counts compressed bytes and runs); one byte
    // less does not.
    let StoredMemory::Pages {
        runs, compressed, ..
    } = &full.memory
    else {
        panic!("format");
    };
    let own = compressed.len() + runs.len() * RUN_BYTES;
    assert_eq!(bounded(own, later).unwrap(), Some(full.clone()));
    assert_eq!(bounded(own - 1, later).unwrap(), None);
    assert!(stored_bound(memory.len(), 0) >= full.stored_bytes() as u64);
}

#[test]
fn an_unsupported_page_size_is_a_protocol_error() {
    let image = image(0, 2, 6);
    let err = Snapshot::capture(
        GUEST,
        &image,
        at_rest(&image.data, 0),
        Vec::new(),
        BTreeMap::new(),
        SnapshotFormat::DirtyPages { page_bytes: 5000 },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "code mode guest protocol violation: unsupported snapshot page size 5000 (a power of two \
         from 4096 to 65536 bytes)"
    );
}

#[test]
fn whole_delta_snapshots_still_round_trip() {
    let image = image(1000, 2, 7);
    let mut memory = image.data.clone();
    memory[123] ^= 9;
    let snapshot = capture(&image, &memory, 1000, SnapshotFormat::WholeDelta);
    let bytes = snapshot.to_bytes();
    assert_eq!(&bytes[8..12], &2u32.to_le_bytes());
    assert_eq!(bytes.len(), snapshot.stored_bytes());
    let parsed = Snapshot::from_bytes(&bytes).unwrap();
    assert_eq!(parsed, snapshot);
    let mut dst = vec![0u8; memory.len()];
    parsed.restore_memory(&mut dst, &image).unwrap();
    assert_eq!(dst, memory);
}
