//! Malformed files: each problem gives its typed error, with a message naming the file (and the row id where
//! there is one), and never a panic. Also: the writer refuses invalid rows, tolerated variations (extra
//! columns, missing optional `algo`) read fine, and the synthetic recording round-trips.

mod common;

use arrow_array::{Array, ArrayRef, BinaryArray, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array};
use common::{add_column, drop_column, recordings_dir, replace_column, rewrite, tiny_index, write_tiny};
use mmaemu_datasets::{discover, read_recording, write_recording, DatasetError, Expectation, FileMeta, Recording};
use std::path::Path;
use std::sync::Arc;

/// Reads `path`, expecting an error whose message names the file.
fn read_err(path: &Path) -> DatasetError {
    let err = read_recording(path).expect_err("the file must be rejected");
    let msg = err.to_string();
    let name = path.file_name().unwrap().to_string_lossy();
    assert!(msg.contains(&*name), "message does not name the file: {msg}");
    assert_eq!(err.path(), path);
    err
}

/// Expects `Invalid` for row `id`, with `what` containing `needle`.
fn assert_invalid_row(err: &DatasetError, id: &str, needle: &str) {
    match err {
        DatasetError::Invalid { row_id, what, .. } => {
            assert_eq!(row_id.as_deref(), Some(id), "{err}");
            assert!(what.contains(needle), "{err}");
            assert!(err.to_string().contains(id), "{err}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let a = batch.column_by_name(name).unwrap();
    let a = a.as_any().downcast_ref::<StringArray>().unwrap();
    (0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i).to_string())).collect()
}

fn binaries(batch: &RecordBatch, name: &str) -> Vec<Option<Vec<u8>>> {
    let a = batch.column_by_name(name).unwrap();
    let a = a.as_any().downcast_ref::<BinaryArray>().unwrap();
    (0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i).to_vec())).collect()
}

fn string_array(v: Vec<Option<String>>) -> ArrayRef {
    Arc::new(v.into_iter().collect::<StringArray>())
}

fn binary_array(v: &[Option<Vec<u8>>]) -> ArrayRef {
    Arc::new(v.iter().map(|x| x.as_deref()).collect::<BinaryArray>())
}

#[test]
fn truncated_file_is_not_parquet() {
    let tmp = tempfile::tempdir().unwrap();
    let src = recordings_dir().join("toolbox-ada.parquet");
    let bytes = std::fs::read(&src).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 1, 8, 0] {
        let p = tmp.path().join(format!("truncated-{cut}.parquet"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        let err = read_err(&p);
        assert!(matches!(err, DatasetError::NotParquet { .. }), "{err:?}");
    }
}

#[test]
fn text_file_is_not_parquet() {
    let p = recordings_dir().join("README.md");
    let err = read_err(&p);
    assert!(matches!(err, DatasetError::NotParquet { .. }), "{err:?}");
    assert!(err.to_string().contains("not a readable Parquet file"), "{err}");
}

#[test]
fn missing_file_is_io_error() {
    let p = recordings_dir().join("no-such-file.parquet");
    let err = read_err(&p);
    assert!(matches!(err, DatasetError::Io { .. }), "{err:?}");
    let err = discover(std::slice::from_ref(&p)).unwrap_err();
    assert!(matches!(err, DatasetError::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("no-such-file.parquet"));
}

#[test]
fn missing_required_column() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    for column in ["origin", "expected_sha256", "c"] {
        let p = tmp.path().join(format!("no-{column}.parquet"));
        rewrite(&tiny, &p, |b| drop_column(b, column), |_| {});
        let err = read_err(&p);
        match &err {
            DatasetError::MissingColumn { column: c, .. } => assert_eq!(c, column),
            other => panic!("expected MissingColumn, got {other:?}"),
        }
        assert!(err.to_string().contains(column));
    }
}

#[test]
fn wrong_column_type() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let p = tmp.path().join("batch-int32.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let n = b.num_rows();
            let batch: Vec<i32> = (0..n).map(|i| if i == tiny_index("mma") { 2 } else { 1 }).collect();
            replace_column(b, "batch", Arc::new(Int32Array::from(batch)))
        },
        |_| {},
    );
    let err = read_err(&p);
    match &err {
        DatasetError::WrongType { column, .. } => assert_eq!(column, "batch"),
        other => panic!("expected WrongType, got {other:?}"),
    }
}

#[test]
fn wrong_or_missing_format_key() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let p = tmp.path().join("v2.parquet");
    rewrite(
        &tiny,
        &p,
        |b| b,
        |kv| {
            for e in kv.iter_mut().filter(|e| e.key == "mmaemu:format") {
                e.value = Some("mmaemu-recording/2".into());
            }
        },
    );
    let err = read_err(&p);
    assert!(matches!(err, DatasetError::WrongFormat { ref found, .. } if found == "mmaemu-recording/2"), "{err:?}");

    let p = tmp.path().join("no-format.parquet");
    rewrite(&tiny, &p, |b| b, |kv| kv.retain(|e| e.key != "mmaemu:format"));
    let err = read_err(&p);
    assert!(matches!(err, DatasetError::MissingMetadata { .. }), "{err:?}");

    let p = tmp.path().join("bad-platform.parquet");
    rewrite(
        &tiny,
        &p,
        |b| b,
        |kv| {
            for e in kv.iter_mut().filter(|e| e.key == "mmaemu:platform") {
                e.value = Some("{not json".into());
            }
        },
    );
    let err = read_err(&p);
    assert!(matches!(err, DatasetError::Invalid { row_id: None, .. }), "{err:?}");
    assert!(err.to_string().contains("mmaemu:platform"), "{err}");
}

#[test]
fn wrong_a_length() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let p = tmp.path().join("short-a.parquet");
    let i = tiny_index("with-call");
    rewrite(
        &tiny,
        &p,
        |b| {
            let mut a = binaries(&b, "a");
            if let Some(v) = a[i].as_mut() {
                v.pop();
            }
            replace_column(b, "a", binary_array(&a))
        },
        |_| {},
    );
    let err = read_err(&p);
    assert_invalid_row(&err, "with-call", "`a` holds 7 bytes, expected 8");
}

#[test]
fn wrong_expected_and_c_lengths() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let i = tiny_index("diag");
    let p = tmp.path().join("long-expected.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let mut e = binaries(&b, "expected");
            if let Some(v) = e[i].as_mut() {
                v.extend([0, 0]); // 4 bytes: the whole 2x2 instead of the diagonal
            }
            replace_column(b, "expected", binary_array(&e))
        },
        |_| {},
    );
    assert_invalid_row(&read_err(&p), "diag", "`expected` holds 4 bytes, expected 2");

    let i = tiny_index("mma");
    let p = tmp.path().join("no-c.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let mut c = binaries(&b, "c");
            c[i] = None;
            replace_column(b, "c", binary_array(&c))
        },
        |_| {},
    );
    assert_invalid_row(&read_err(&p), "mma", "`c` is null");
}

#[test]
fn two_expectations() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let i = tiny_index("plain");
    let p = tmp.path().join("two-expectations.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let mut e = strings(&b, "expected_error");
            e[i] = Some("ReferenceRejectsError".into());
            replace_column(b, "expected_error", string_array(e))
        },
        |_| {},
    );
    assert_invalid_row(&read_err(&p), "plain", "expected and expected_error are all set");

    let i = tiny_index("rejected");
    let p = tmp.path().join("no-expectation.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let mut e = strings(&b, "expected_error");
            e[i] = None;
            replace_column(b, "expected_error", string_array(e))
        },
        |_| {},
    );
    assert_invalid_row(&read_err(&p), "rejected", "none of expected");
}

#[test]
fn bad_values() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let cases: &[(&str, &str, &str, Option<&str>, &str)] = &[
        ("bad-op", "op", "acc", Some("matmul"), "`op` \"matmul\""),
        ("bad-truth", "truth", "acc", Some("guess"), "`truth`"),
        ("bad-select", "out_select", "plain", Some("row"), "`out_select`"),
        ("null-origin", "origin", "mma", None, "`origin` is null"),
        ("bad-call", "call", "with-call", Some("{\"scale_a\": {\"value\": \"huge\"}}"), "`call`"),
        ("unknown-key", "call", "with-call", Some("{\"mat3\": {}}"), "mat3"),
        ("call-on-gemm", "call", "hashed", Some("{}"), "scaled_mm only"),
        ("bad-fmt", "fmt_b", "plain", Some("int8"), "unknown `fmt_b`"),
        ("bad-error", "expected_error", "rejected", Some("Boom"), "`expected_error`"),
        ("bad-scope", "scope", "plain", Some("out:"), "`scope`"),
        ("bad-algo", "algo", "hashed", Some("[1"), "`algo`"),
        ("no-profile", "profile", "plain", None, "`profile` is null"),
    ];
    for (file, column, id, value, needle) in cases {
        let i = tiny_index(id);
        let p = tmp.path().join(format!("{file}.parquet"));
        rewrite(
            &tiny,
            &p,
            |b| {
                let mut v = strings(&b, column);
                v[i] = value.map(str::to_string);
                replace_column(b, column, string_array(v))
            },
            |_| {},
        );
        assert_invalid_row(&read_err(&p), id, needle);
    }
}

#[test]
fn null_id_negative_dims_and_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());

    let p = tmp.path().join("null-id.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let mut v = strings(&b, "id");
            v[3] = None;
            replace_column(b, "id", string_array(v))
        },
        |_| {},
    );
    let err = read_err(&p);
    assert!(matches!(err, DatasetError::Invalid { row_id: None, ref what, .. } if what.contains("row 3")), "{err:?}");

    let p = tmp.path().join("negative-k.parquet");
    let i = tiny_index("acc");
    rewrite(
        &tiny,
        &p,
        |b| {
            let k: Vec<i64> = (0..b.num_rows()).map(|r| if r == i { -4 } else { 4 }).collect();
            replace_column(b, "k", Arc::new(Int64Array::from(k)))
        },
        |_| {},
    );
    assert_invalid_row(&read_err(&p), "acc", "`k` is negative");

    let p = tmp.path().join("duplicate.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let mut v = strings(&b, "id");
            v[1] = v[0].clone();
            replace_column(b, "id", string_array(v))
        },
        |_| {},
    );
    assert_invalid_row(&read_err(&p), "plain", "duplicate id");
}

#[test]
fn tolerated_variations() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let original = read_recording(&tiny).unwrap();

    // Extra columns of later versions are ignored; `algo` may be absent.
    let p = tmp.path().join("extra.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let n = b.num_rows();
            let b = add_column(b, "future", Arc::new(UInt32Array::from(vec![7u32; n])));
            drop_column(b, "algo")
        },
        |_| {},
    );
    let rec = read_recording(&p).unwrap();
    assert_eq!(rec.rows.len(), original.rows.len());
    for (a, b) in rec.rows.iter().zip(&original.rows) {
        let mut b = b.clone();
        b.algo = None;
        assert_eq!(*a, b);
    }

    // Large string and binary types read like the plain ones.
    let p = tmp.path().join("large.parquet");
    rewrite(
        &tiny,
        &p,
        |b| {
            let ids = strings(&b, "id");
            let a = binaries(&b, "a");
            let b = replace_column(b, "id", Arc::new(ids.into_iter().collect::<arrow_array::LargeStringArray>()));
            replace_column(b, "a", Arc::new(a.iter().map(|x| x.as_deref()).collect::<arrow_array::LargeBinaryArray>()))
        },
        |_| {},
    );
    assert_eq!(read_recording(&p).unwrap().rows, original.rows);
}

#[test]
fn tiny_round_trip_and_helpers() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let rec = read_recording(&tiny).unwrap();
    assert_eq!(rec.rows, common::tiny_recording().rows);
    assert_eq!(rec.meta, common::tiny_recording().meta);
    let by_id = |id: &str| rec.rows.iter().find(|r| r.id == id).unwrap();
    assert_eq!(by_id("plain").out_width(), Some(2));
    assert_eq!(by_id("with-call").effective_out_dtype(), "float32");
    assert_eq!(by_id("diag").out_width(), Some(1));
    assert_eq!(by_id("acc").out_width(), Some(4));
    assert_eq!(by_id("mma").out_width(), Some(4));
    assert!(matches!(by_id("hashed").expected, Expectation::Sha256(_)));
    assert_eq!(mmaemu_datasets::Row::elem_width("float8_e8m0fnu"), Some(1));
    assert_eq!(mmaemu_datasets::Row::elem_width("int8"), None);
}

#[test]
fn writer_refuses_invalid_rows_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("out.parquet");

    let mut rec = common::tiny_recording();
    rec.rows[0].a.pop();
    let err = write_recording(&target, &rec).unwrap_err();
    assert_invalid_row(&err, "plain", "`a` holds");

    let mut rec = common::tiny_recording();
    rec.rows[0].expected = Expectation::Error("Whatever".into());
    assert!(matches!(write_recording(&target, &rec), Err(DatasetError::Invalid { .. })));

    let mut rec = common::tiny_recording();
    let dup = rec.rows[0].clone();
    rec.rows.push(dup);
    assert_invalid_row(&write_recording(&target, &rec).unwrap_err(), "plain", "duplicate");

    let rec = Recording {
        meta: FileMeta { format: "mmaemu-recording/2".into(), ..FileMeta::default() },
        ..common::tiny_recording()
    };
    assert!(matches!(write_recording(&target, &rec), Err(DatasetError::WrongFormat { .. })));

    assert!(!target.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);

    // Writing into a directory that does not exist is an I/O error, not a panic.
    let err = write_recording(&tmp.path().join("missing/x.parquet"), &common::tiny_recording()).unwrap_err();
    assert!(matches!(err, DatasetError::Io { .. }), "{err:?}");

    // Replacing an existing file works; an empty recording is valid.
    write_recording(&target, &common::tiny_recording()).unwrap();
    let empty = Recording { rows: Vec::new(), ..common::tiny_recording() };
    write_recording(&target, &empty).unwrap();
    assert!(read_recording(&target).unwrap().rows.is_empty());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn damaged_bytes_never_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let bytes = std::fs::read(&tiny).unwrap();
    let p = tmp.path().join("damaged.parquet");
    // Deterministic pseudo-random damage all over the file, footer included.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut errors = 0;
    for _ in 0..300 {
        let mut damaged = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % damaged.len() as u64) as usize;
            damaged[at] ^= 1 << (next() % 8);
        }
        std::fs::write(&p, &damaged).unwrap();
        if let Err(e) = read_recording(&p) {
            assert!(e.to_string().contains("damaged.parquet"), "{e}");
            errors += 1;
        }
    }
    assert!(errors > 0);
}

#[test]
fn labels_must_name_what_the_model_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = write_tiny(tmp.path());
    let i = tiny_index("with-call");
    // An unknown preset, a known preset that the row's profile does not run, and `unknown` (fitting input) on a row
    // with a profile, which names its preset.
    for (preset, needle) in [
        ("volta", "`preset` \"volta\" is not a preset of the model"),
        ("hopper", "runs preset"),
        ("unknown", "`preset` is unknown, so `profile` must be null"),
    ] {
        let p = tmp.path().join(format!("preset-{preset}.parquet"));
        rewrite(
            &tiny,
            &p,
            |b| {
                let mut v = strings(&b, "preset");
                v[i] = Some(preset.to_string());
                replace_column(b, "preset", string_array(v))
            },
            |_| {},
        );
        let err = read_err(&p);
        assert_invalid_row(&err, "with-call", needle);
    }
}
