//! Shared helpers of the integration tests: where the shipped recordings are, a small synthetic recording
//! covering every op, and a raw Parquet rewriter to produce malformed files the crate's writer refuses to
//! write.
#![allow(dead_code)]

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};
use mmaemu_datasets::{
    read_recording, write_recording, Call, Expectation, FileMeta, Op, OutSelect, Recording, Row, Truth,
};
use parquet::file::metadata::KeyValue;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The shipped recordings.
pub fn recordings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings")
}

/// Rows per shipped file.
pub const SHIPPED: &[(&str, usize)] = &[
    ("model-gate-ada.parquet", 8),
    ("rtx4060-api.parquet", 8546),
    ("rtx4060-gemm.parquet", 2623),
    ("rtx4060-mma.parquet", 96),
    ("toolbox-ada.parquet", 2),
    ("toolbox-b200.parquet", 2),
    ("toolbox-h100.parquet", 2),
    ("toolbox-h200.parquet", 2),
    ("toolbox-l40s.parquet", 2),
];

fn base(id: &str, op: Op) -> Row {
    Row {
        id: id.to_string(),
        op,
        preset: "ada".into(),
        profile: Some("ada".into()),
        gpu: "RTX 4060".into(),
        truth: Truth::Hardware,
        fmt_a: "e4m3".into(),
        fmt_b: "e5m2".into(),
        batch: 1,
        m: 2,
        n: 3,
        k: 4,
        a: (0..8).collect(),
        b: (0..12).collect(),
        c: None,
        scale_a: Some(0x3f80_0000),
        scale_b: Some(0x4000_0000),
        scale_result: None,
        out_dtype: Some("bfloat16".into()),
        fast_accum: Some(true),
        split_s: Some(1),
        split_scheme: Some("none".into()),
        algo: None,
        call: None,
        out_select: OutSelect::Full,
        expected: Expectation::Bits(vec![0x11; 2 * 3 * 2]),
        scope: None,
        origin: format!("synthetic {id}"),
        ext: Default::default(),
    }
}

/// A small valid recording with one row of every kind (ops, expectations, call object, diagonal, algo).
pub fn tiny_recording() -> Recording {
    let mut rows = Vec::new();
    rows.push(base("plain", Op::ScaledMm));

    let mut r = base("with-call", Op::ScaledMm);
    r.scale_a = None;
    r.scale_b = None;
    r.call = Some(
        Call::parse(
            r#"{"scale_a":{"value":"rowwise","shape":[2,1]},"scale_b":{"value":-0.0},
                "scale_result":{"value":0.3},"out":{"dtype":"float32","shape":[2,3],"contiguous":false,"fill":"nan"},
                "out_dtype_passed":false}"#,
        )
        .expect("valid call"),
    );
    r.out_dtype = None;
    r.expected = Expectation::Bits(vec![0; 2 * 3 * 4]);
    rows.push(r);

    let mut r = base("rejected", Op::ScaledMm);
    r.expected = Expectation::Error("ReferenceRejectsError".into());
    r.scope = Some("out:bias".into());
    rows.push(r);

    let mut r = base("hashed", Op::Gemm);
    r.expected = Expectation::Sha256("ab".repeat(32));
    r.algo = Some(r#"{"algo_id":66,"split_s":1,"kernel":null}"#.into());
    rows.push(r);

    let mut r = base("diag", Op::Gemm);
    r.n = 2;
    r.b = vec![7; 8];
    r.out_select = OutSelect::Diagonal;
    r.out_dtype = Some("float8_e4m3fn".into());
    r.expected = Expectation::Bits(vec![1, 2]);
    r.split_s = Some(3);
    r.split_scheme = Some("pairwise".into());
    rows.push(r);

    let mut r = base("acc", Op::Accumulator);
    r.truth = Truth::Model;
    r.profile = None;
    r.gpu = "none".into();
    r.out_dtype = None;
    r.expected = Expectation::Bits(vec![3; 2 * 3 * 4]);
    rows.push(r);

    let mut r = base("mma", Op::Mma);
    r.batch = 2;
    r.a = vec![1; 16];
    r.b = vec![2; 24];
    r.c = Some(vec![0; 2 * 2 * 3 * 4]);
    r.scale_a = None;
    r.scale_b = None;
    r.out_dtype = None;
    r.fast_accum = None;
    r.split_s = None;
    r.split_scheme = None;
    r.expected = Expectation::Bits(vec![9; 2 * 2 * 3 * 4]);
    rows.push(r);

    Recording {
        path: PathBuf::new(),
        meta: FileMeta {
            format: mmaemu_datasets::FORMAT_V1.to_string(),
            platform: Some(serde_json::json!({"gpu": "NVIDIA GeForce RTX 4060", "capability": [8, 9]})),
            provenance: Some(serde_json::json!({"source": "tests"})),
        },
        rows,
    }
}

/// Writes the tiny recording into `dir` and returns its path.
pub fn write_tiny(dir: &Path) -> PathBuf {
    let p = dir.join("tiny.parquet");
    write_recording(&p, &tiny_recording()).expect("tiny recording writes");
    read_recording(&p).expect("tiny recording reads back");
    p
}

/// Rewrites the Parquet file `src` to `dst` with the raw arrow/parquet crates: `edit_batch` may change the
/// (single) batch, `edit_kv` the key-value metadata.
pub fn rewrite(
    src: &Path,
    dst: &Path,
    edit_batch: impl FnOnce(RecordBatch) -> RecordBatch,
    edit_kv: impl FnOnce(&mut Vec<KeyValue>),
) {
    let (batch, mut kv) = mmaemu_testkit::raw_parquet::read(src).unwrap();
    let batch = edit_batch(batch);
    edit_kv(&mut kv);
    mmaemu_testkit::raw_parquet::write(dst, &batch, kv).unwrap();
}

/// `batch` with column `name` replaced by `array` (same name; nullable).
pub fn replace_column(batch: RecordBatch, name: &str, array: ArrayRef) -> RecordBatch {
    let schema = batch.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
    let i = schema.index_of(name).unwrap();
    fields[i] = Field::new(name, array.data_type().clone(), true);
    cols[i] = array;
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

/// `batch` without column `name`.
pub fn drop_column(batch: RecordBatch, name: &str) -> RecordBatch {
    let i = batch.schema().index_of(name).unwrap();
    let mut b = batch;
    b.remove_column(i);
    b
}

/// `batch` with an extra column appended.
pub fn add_column(batch: RecordBatch, name: &str, array: ArrayRef) -> RecordBatch {
    let schema = batch.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
    fields.push(Field::new(name, array.data_type().clone(), true));
    cols.push(array);
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

/// Position of the row with id `id` in the tiny recording.
pub fn tiny_index(id: &str) -> usize {
    tiny_recording().rows.iter().position(|r| r.id == id).unwrap()
}

/// The hopper profile with cuBLASLt workspace `ws`: the shipped profile of that workspace (hopper-ws0, hopper,
/// hopper-te), or, for a workspace no shipped profile has (the H100 table has 4 MiB rows), hopper with it.
pub fn hopper_with_workspace(ws: u64) -> mmaemu_model::profile::Profile {
    use mmaemu_model::profile::Profile;
    let mut profile = match ws {
        0 => mmaemu_model::Catalogue::builtin().profile("hopper-ws0").unwrap(),
        1_048_576 => mmaemu_model::Catalogue::builtin().profile("hopper").unwrap(),
        33_554_432 => mmaemu_model::Catalogue::builtin().profile("hopper-te").unwrap(),
        _ => {
            Profile { name: format!("hopper-ws{ws}"), ..mmaemu_model::Catalogue::builtin().profile("hopper").unwrap() }
        }
    };
    profile.workspace_bytes = Some(ws);
    profile
}
