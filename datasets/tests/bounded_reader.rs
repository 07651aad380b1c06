//! The recording reader is bounded by the memory ceiling in force: the rows a footer announces, and their decoded
//! columns, are refused before any is read when they would pass it (a 50 MB file of ten million tiny rows decoded to
//! 10.8 GB). Its own test binary: the ceiling is process-wide.

mod common;

use mmaemu_datasets::{read_recording, write_recording};

#[test]
fn a_recording_whose_rows_pass_the_ceiling_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = common::tiny_recording();
    let first = rec.rows[0].clone();
    rec.rows = (0..5000)
        .map(|i| {
            let mut r = first.clone();
            r.id = format!("row-{i}");
            r
        })
        .collect();
    let path = dir.path().join("many.parquet");
    write_recording(&path, &rec).unwrap();
    assert_eq!(read_recording(&path).unwrap().rows.len(), 5000);
    mmaemu_datasets::limits::set_ceiling(1 << 20);
    let e = read_recording(&path).unwrap_err().to_string();
    mmaemu_datasets::limits::set_ceiling(mmaemu_datasets::limits::DEFAULT_MAX_BYTES);
    assert!(e.contains("reading its 5000 rows") && e.contains("above the limit"), "{e}");
}
