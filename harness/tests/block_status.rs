//! The status of the block-scaled modes is computed from evidence, never declared (docs/reference.md §12.7): with no
//! row each is listed experimental with 0 hardware rows on the profiles whose GPU runs it; hardware rows of a mode that
//! replay bit for bit turn it validated, a mismatching one failing, and model rows never validate.
//!
//! Why this is not self-fulfilling: what is under test is the status logic (which rows count as evidence of which
//! mode), not the arithmetic. The rows' expected bits come from the contract's compositions (§12.4: MXFP8 = the
//! block-scaled instruction `dot_scaled` per output over K; §12.5: block-wise = `dot` per 128 of K, scaled and added
//! in fp32), computed here from the logical scales of the recording format's patterns, while replay runs the GEMMs
//! (`blockwise_gemm_on`, `mx_gemm_on`) on scales rebuilt from the call object in cuBLAS's blocked layout. A flipped
//! bit must fail.

use mmaemu_datasets::{read_recording, write_recording, Call, Expectation, Op, Recording, Row, ScaleLayout};
use mmaemu_datasets::{ScaleSpec, ScaleValue, Scaling, Truth};
use mmaemu_harness::status::{self, block_feature, Status, StatusReport};
use mmaemu_model::block_call::BlockMode;
use mmaemu_model::{dot, dot_scaled, Format, Preset};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::path::Path;

const HOPPER: &str = "hopper";
const B200: &str = "b200-tcgen05-experimental";

/// The recording format's `rowwise` pattern (element i).
fn rowwise(i: usize) -> f64 {
    0.25 + 0.0625 * ((7 * i) % 16) as f64
}

/// The exponent of the recording format's `pow2` pattern (element i is 2^e).
fn pow2_exp(i: usize) -> i32 {
    ((5 * i) % 7) as i32 - 3
}

/// Finite e4m3 codes (0x7F and 0xFF are NaN).
fn codes(rng: &mut ChaCha8Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.random_range(0..=0x7Eu8) | if rng.random::<bool>() { 0x80 } else { 0 }).collect()
}

fn scale(dtype: &str, rows: usize, cols: usize, value: ScaleValue, scaling: Scaling, layout: ScaleLayout) -> ScaleSpec {
    ScaleSpec {
        dtype: dtype.into(),
        shape: vec![rows as i64, cols as i64],
        value,
        scaling: Some(scaling),
        layout,
        global: None,
    }
}

/// One block-scaled row (fp32 out) and its expected bits from the contract's composition.
fn row(mode: BlockMode, id: usize, rng: &mut ChaCha8Rng, template: &Row) -> Row {
    let (m, n, k) =
        (rng.random_range(1..=24usize), 16 * rng.random_range(1..=3usize), 16 * rng.random_range(1..=20usize));
    let (a, b) = (codes(rng, m * k), codes(rng, n * k));
    let catalogue = mmaemu_model::Catalogue::builtin();
    let (profile, call, acc) = match mode {
        BlockMode::Block128 => {
            let preset: Preset = catalogue.profile(HOPPER).unwrap().preset;
            let kb = k.div_ceil(128);
            let f32s = ScaleValue::Rowwise;
            let sa = scale("float32", m, kb, f32s, Scaling::BlockWise1x128, ScaleLayout::Col);
            let sb = scale("float32", n, kb, f32s, Scaling::BlockWise1x128, ScaleLayout::Col);
            let mut acc = Vec::new();
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0.0f32;
                    for c in 0..kb {
                        let r = c * 128..((c + 1) * 128).min(k);
                        let (ra, rb) = (&a[i * k + r.start..i * k + r.end], &b[j * k + r.start..j * k + r.end]);
                        let p = dot(&preset, Format::E4m3, Format::E4m3, ra, rb, None).unwrap();
                        s += p * (rowwise(i * kb + c) as f32 * rowwise(j * kb + c) as f32);
                    }
                    acc.push(s);
                }
            }
            (HOPPER, (sa, sb), acc)
        }
        BlockMode::Mx => {
            let preset: Preset = catalogue.profile(B200).unwrap().preset;
            let nb = k.div_ceil(32);
            let sa = scale("float8_e8m0fnu", m, nb, ScaleValue::Pow2, Scaling::BlockWise1x32, ScaleLayout::Blocked);
            let sb = scale("float8_e8m0fnu", n, nb, ScaleValue::Pow2, Scaling::BlockWise1x32, ScaleLayout::Blocked);
            // e8m0 of 2^e is the biased exponent e + 127.
            let e8m0 = |row: usize| -> Vec<u8> { (0..nb).map(|c| (pow2_exp(row * nb + c) + 127) as u8).collect() };
            let mut acc = Vec::new();
            for i in 0..m {
                for j in 0..n {
                    let (ra, rb) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
                    acc.push(
                        dot_scaled(&preset, Format::E4m3, Format::E4m3, ra, rb, &e8m0(i), &e8m0(j), None).unwrap(),
                    );
                }
            }
            (B200, (sa, sb), acc)
        }
        other => unreachable!("the test records block128 and mx, not {other:?}"),
    };
    let preset = catalogue.profile(profile).unwrap().preset.name().to_string();
    let mut r = template.clone();
    r.id = format!("block-status-{}-{id}", mode.name());
    (r.op, r.preset, r.profile, r.truth) = (Op::ScaledMm, preset, Some(profile.into()), Truth::Hardware);
    (r.fmt_a, r.fmt_b, r.batch, r.m, r.n, r.k) = ("e4m3".into(), "e4m3".into(), 1, m as i64, n as i64, k as i64);
    (r.a, r.b, r.c, r.scale_a, r.scale_b, r.scale_result) = (a, b, None, None, None, None);
    (r.out_dtype, r.fast_accum, r.split_s, r.split_scheme) =
        (Some("float32".into()), Some(false), Some(1), Some("none".into()));
    r.call = Some(Call { scale_a: Some(call.0), scale_b: Some(call.1), ..Call::default() });
    // fp32 out with alpha 1: the output is the accumulator (RN32(acc · 1) = acc).
    r.expected = Expectation::Bits(acc.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect());
    r.scope = None;
    r
}

fn feature(report: &StatusReport, profile: &str, mode: BlockMode) -> (Status, usize, usize) {
    let scope = report.scopes.iter().find(|s| s.name == profile && s.kind.name() == "profile").unwrap();
    let name = block_feature(mode);
    let f = scope.features.iter().find(|f| f.feature.name == name).unwrap_or_else(|| panic!("{profile}: no {name}"));
    (f.status, f.counts.hardware, f.counts.passed)
}

fn status_of(path: &Path, rows: Vec<Row>, meta: &Recording) -> StatusReport {
    let rec = Recording { path: path.to_path_buf(), meta: meta.meta.clone(), rows };
    write_recording(path, &rec).unwrap();
    let (_, facts) = status::replay_file_with_facts(path, &|| {}).unwrap();
    status::compute(&facts)
}

#[test]
fn block_scaled_modes_are_validated_by_hardware_rows_alone() {
    // With no row: each mode experimental with 0 hardware rows, on the profiles that run it only.
    let empty = status::compute(&[]);
    for (profile, mode) in [(HOPPER, BlockMode::Block128), (HOPPER, BlockMode::Block128x128), (B200, BlockMode::Mx)] {
        assert_eq!(feature(&empty, profile, mode), (Status::Experimental, 0, 0), "{profile} {mode:?}");
    }
    assert_eq!(feature(&empty, B200, BlockMode::Nvfp4), (Status::Experimental, 0, 0));
    let hopper = empty.scopes.iter().find(|s| s.name == HOPPER && s.kind.name() == "profile").unwrap();
    assert!(!hopper.features.iter().any(|f| f.feature.name == block_feature(BlockMode::Mx)), "hopper cannot run MX");

    let seed = 0x4545_1206u64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let gate = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/recordings/toolbox-h100.parquet");
    let source = read_recording(&gate).unwrap();
    // A row of the shipped file whose every column below is overwritten.
    let template = Row { algo: None, out_select: Default::default(), ..source.rows[0].clone() };
    let mut rows = Vec::new();
    for (i, mode) in [BlockMode::Block128, BlockMode::Mx].into_iter().cycle().take(6).enumerate() {
        rows.push(row(mode, i, &mut rng, &template));
    }
    let dir = tempfile::tempdir().unwrap();

    // Hardware rows that replay bit for bit: validated.
    let report = status_of(&dir.path().join("pass.parquet"), rows.clone(), &source);
    assert_eq!(feature(&report, HOPPER, BlockMode::Block128), (Status::Validated, 3, 3), "seed {seed:#x}");
    assert_eq!(feature(&report, B200, BlockMode::Mx), (Status::Validated, 3, 3), "seed {seed:#x}");
    // The modes without rows stay experimental; these rows are no evidence of the tensor-wise pipeline.
    assert_eq!(feature(&report, HOPPER, BlockMode::Block128x128), (Status::Experimental, 0, 0));
    assert_eq!(feature(&report, B200, BlockMode::Nvfp4), (Status::Experimental, 0, 0));
    let hopper = report.scopes.iter().find(|s| s.name == HOPPER && s.kind.name() == "profile").unwrap();
    assert_eq!(hopper.counts.hardware, 0, "block-scaled rows count for their mode alone");

    // One mismatching bit: that mode fails, the other stays validated.
    let mut bad = rows.clone();
    let Expectation::Bits(bits) = &mut bad[1].expected else { unreachable!() };
    bits[0] ^= 1;
    let report = status_of(&dir.path().join("fail.parquet"), bad, &source);
    assert_eq!(feature(&report, B200, BlockMode::Mx), (Status::Failing, 3, 2), "seed {seed:#x}");
    assert_eq!(feature(&report, HOPPER, BlockMode::Block128).0, Status::Validated);

    // The same rows as model rows (simulated, never evidence): experimental.
    let model: Vec<Row> = rows.into_iter().map(|r| Row { truth: Truth::Model, ..r }).collect();
    let report = status_of(&dir.path().join("model.parquet"), model, &source);
    assert_eq!(feature(&report, HOPPER, BlockMode::Block128), (Status::Experimental, 0, 0));
    assert_eq!(feature(&report, B200, BlockMode::Mx), (Status::Experimental, 0, 0));
}
