//! The optional extension columns (`inputs`, `expected_samples`, `note`, `amax_d`): round trips, version 1 compatibility, rows
//! that ship operands by reference, and what the streaming writer refuses.

// They round-trip; a file without them reads as before (version 1 files are untouched); dropping them from a file
// leaves valid version 1 rows (a version 1 reader skips them); rows that ship operands by reference regenerate on read
// with their sha256 checked; and the streaming writer refuses what the one-shot writer refuses.

mod common;

use common::{drop_column, rewrite, tiny_recording, write_tiny};
use mmaemu_datasets::inputs::{generate, sha256_hex, DataClass, InputSpec, Operand, RowInputs, GENERATOR_V1};
use mmaemu_datasets::{
    extension_column_names, read_recording, read_recording_with, write_recording, Expectation, ReadOptions, Recording,
    RecordingWriter, Row, RowExt,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::fs::File;
use std::path::Path;

fn columns(path: &Path) -> Vec<String> {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    b.schema().fields().iter().map(|f| f.name().clone()).collect()
}

/// A row of the tiny recording whose operands come from the generator.
fn generated_row(by_reference: bool) -> Row {
    let mut r = tiny_recording().rows[0].clone();
    let spec =
        InputSpec { generator: GENERATOR_V1.into(), seed: 3, stream: 1, data: DataClass::Gaussian { scale: 2.0 } };
    let a = generate(&spec, Operand::A, &r.fmt_a, 2, 4).unwrap();
    let b = generate(&spec, Operand::B, &r.fmt_b, 3, 4).unwrap();
    r.id = "generated".into();
    r.ext = RowExt {
        inputs: Some(RowInputs { spec, a_sha256: sha256_hex(&a), b_sha256: sha256_hex(&b) }.to_json()),
        expected_samples: Some(r#"{"index":[0,5],"bits":[17,17]}"#.into()),
        note: Some("recorded twice, identical".into()),
        amax_d: Some(0x4300_0000),
    };
    if by_reference {
        r.a = Vec::new();
        r.b = Vec::new();
    } else {
        r.a = a;
        r.b = b;
    }
    r
}

#[test]
fn plain_files_have_no_extension_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write_tiny(tmp.path());
    let cols = columns(&p);
    for ext in extension_column_names() {
        assert!(!cols.iter().any(|c| c == ext), "{ext}");
    }
    assert!(read_recording(&p).unwrap().rows.iter().all(|r| r.ext.is_empty()));
}

#[test]
fn extension_columns_round_trip_and_are_droppable() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rec = tiny_recording();
    rec.rows.push(generated_row(false));
    let p = tmp.path().join("ext.parquet");
    write_recording(&p, &rec).unwrap();
    let cols = columns(&p);
    assert_eq!(&cols[cols.len() - 4..], ["inputs", "expected_samples", "note", "amax_d"]);
    let back = read_recording(&p).unwrap();
    assert_eq!(back.rows, rec.rows);

    // What a version 1 reader sees: the same rows without the extension.
    let v1 = tmp.path().join("v1.parquet");
    rewrite(
        &p,
        &v1,
        |b| drop_column(drop_column(drop_column(drop_column(b, "amax_d"), "note"), "expected_samples"), "inputs"),
        |_| {},
    );
    let plain = read_recording(&v1).unwrap();
    for (a, b) in plain.rows.iter().zip(&rec.rows) {
        let mut b = b.clone();
        b.ext = RowExt::default();
        assert_eq!(*a, b);
    }
}

#[test]
fn operands_by_reference_regenerate_and_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let full = generated_row(false);
    let mut rec = tiny_recording();
    rec.rows = vec![generated_row(true)];
    let p = tmp.path().join("byref.parquet");
    write_recording(&p, &rec).unwrap();
    let raw = read_recording_with(&p, &ReadOptions { materialise_inputs: false }).unwrap();
    assert!(raw.rows[0].a.is_empty());
    let read = read_recording(&p).unwrap();
    assert_eq!(read.rows[0].a, full.a);
    assert_eq!(read.rows[0].b, full.b);

    // A recorded sha256 that the generator does not reproduce is an error naming the row.
    let mut bad = generated_row(true);
    let mut inputs = RowInputs::parse(bad.ext.inputs.as_deref().unwrap()).unwrap();
    inputs.a_sha256 = "00".repeat(32);
    bad.ext.inputs = Some(inputs.to_json());
    let p2 = tmp.path().join("bad.parquet");
    write_recording(&p2, &Recording { rows: vec![bad], ..tiny_recording() }).unwrap();
    let err = read_recording(&p2).unwrap_err().to_string();
    assert!(err.contains("generated") && err.contains("sha256"), "{err}");

    // Empty operands without `inputs` stay an error; so do malformed extension values.
    let mut r = generated_row(true);
    r.ext.inputs = None;
    assert!(write_recording(&tmp.path().join("x.parquet"), &Recording { rows: vec![r], ..tiny_recording() }).is_err());
    let mut r = generated_row(false);
    r.ext.expected_samples = Some(r#"{"index":[1],"bits":[]}"#.into());
    let err = write_recording(&tmp.path().join("y.parquet"), &Recording { rows: vec![r], ..tiny_recording() })
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected_samples"), "{err}");
    assert!(!tmp.path().join("y.parquet").exists());
}

#[test]
fn streaming_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("stream.parquet");
    let rec = tiny_recording();
    let mut w = RecordingWriter::create(&p, &rec.meta, true).unwrap();
    w.write_rows(&rec.rows[..3]).unwrap();
    w.write_rows(&rec.rows[3..]).unwrap();
    assert!(!p.exists(), "nothing appears before finish");
    // A repeated id across calls is refused.
    assert!(w.write_rows(&rec.rows[..1]).is_err());
    assert_eq!(w.rows_written(), rec.rows.len());
    w.finish().unwrap();
    assert_eq!(read_recording(&p).unwrap().rows, rec.rows);

    // Without the extension columns, a row using them is refused; dropping the writer leaves nothing.
    let q = tmp.path().join("plain.parquet");
    let mut w = RecordingWriter::create(&q, &rec.meta, false).unwrap();
    assert!(w.write_rows(&[generated_row(false)]).is_err());
    drop(w);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    assert!(matches!(rec.rows[3].expected, Expectation::Sha256(_)));
}
