//! The shipped recordings in `datasets/recordings/`: every file reads and validates with the expected row
//! counts, discovery finds exactly them, and a read -> write -> read round trip keeps every row and the
//! metadata unchanged.

mod common;

use common::{recordings_dir, SHIPPED};
use mmaemu_datasets::{discover, read_recording, write_recording, Expectation, Op, OutSelect, Truth, FORMAT_V1};

#[test]
fn every_shipped_file_reads_with_its_row_count() {
    let dir = recordings_dir();
    let mut total = 0;
    for (name, rows) in SHIPPED {
        let rec = read_recording(&dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rec.rows.len(), *rows, "{name}");
        assert_eq!(rec.meta.format, FORMAT_V1);
        assert!(rec.meta.platform.as_ref().is_some_and(|p| p.is_object()), "{name}");
        assert!(rec.meta.provenance.as_ref().is_some_and(|p| p.is_object()), "{name}");
        for row in &rec.rows {
            let width = row.out_width().expect("known out dtype");
            if let Expectation::Bits(bits) = &row.expected {
                assert_eq!(bits.len(), row.expected_elems().unwrap() * width);
            }
        }
        total += rec.rows.len();
    }
    assert_eq!(total, 11_283);
}

#[test]
fn discover_finds_the_shipped_files_sorted() {
    let dir = recordings_dir();
    let found = discover(std::slice::from_ref(&dir)).unwrap();
    let names: Vec<String> = found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    let want: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, want);
    // A file given explicitly is taken as given, also with another extension; duplicates are dropped.
    let readme = dir.join("README.md");
    let found = discover(&[readme.clone(), dir.clone(), readme.clone()]).unwrap();
    assert_eq!(found.len(), SHIPPED.len() + 1);
    assert_eq!(found[0], readme);
}

#[test]
fn shipped_contents_look_as_documented() {
    let dir = recordings_dir();
    let gemm = read_recording(&dir.join("rtx4060-gemm.parquet")).unwrap();
    let diag = gemm.rows.iter().filter(|r| r.out_select == OutSelect::Diagonal).count();
    assert_eq!(diag, 2);
    assert_eq!(gemm.rows.iter().filter(|r| r.call.is_some()).count(), 57);
    assert_eq!(gemm.rows.iter().filter(|r| r.op == Op::Gemm).count(), 772);

    let api = read_recording(&dir.join("rtx4060-api.parquet")).unwrap();
    assert!(api.rows.iter().all(|r| r.call.is_some()));
    let passed = api.rows.iter().filter(|r| r.call.as_ref().unwrap().scale_result.is_some()).count();
    assert_eq!(passed, 118);
    assert_eq!(api.rows.iter().filter(|r| r.call.as_ref().unwrap().out.is_some()).count(), 8546 - 8526);

    let gate = read_recording(&dir.join("model-gate-ada.parquet")).unwrap();
    assert!(gate.rows.iter().all(|r| r.truth == Truth::Model && r.op == Op::Accumulator));
    let mma = read_recording(&dir.join("rtx4060-mma.parquet")).unwrap();
    assert!(mma.rows.iter().all(|r| r.c.is_some() && r.out_width() == Some(4)));
}

#[test]
fn round_trip_keeps_rows_and_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = recordings_dir();
    for (name, _) in SHIPPED {
        let original = read_recording(&dir.join(name)).unwrap();
        let out = tmp.path().join(name);
        write_recording(&out, &original).unwrap();
        let again = read_recording(&out).unwrap();
        assert_eq!(again.meta, original.meta, "{name}");
        assert_eq!(again.rows.len(), original.rows.len(), "{name}");
        for (a, b) in again.rows.iter().zip(&original.rows) {
            assert_eq!(a, b, "{name}: row {}", b.id);
        }
        // Writing the re-read recording again gives the same rows once more (a fixed point).
        write_recording(&out, &again).unwrap();
        assert_eq!(read_recording(&out).unwrap().rows, original.rows);
    }
    // Nothing but the written files is left in the directory (no temporary files).
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
