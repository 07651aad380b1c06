//! Scale recipes (`scaling`) end to end without a GPU: on the simulated device every case is a row that
//! replays or a skip that says why; the loaded cuBLASLt gates each recipe before the device sees the call
//! (a device that reports cuBLASLt 12.8 gets no row-wise call, one that reports 12.9 gets them all); specs
//! that cannot record a recipe are refused.

use mmaemu_datasets::{read_recording, Scaling};
use mmaemu_harness::files::replay_file;
use mmaemu_recorder::descriptor::CallConfig;
use mmaemu_recorder::device::{Device, Heuristic, Inputs, Platform, RunOutcome};
use mmaemu_recorder::sim::SimDevice;
use mmaemu_recorder::spec::Sweep;
use mmaemu_recorder::sweep::{manifest_path, run_sweep, SweepOptions};
use mmaemu_recorder::RecordError;

const SPEC: &str = r#"
kind = "sweep"
name = "recipes"
seed = 45
profile = "hopper"
out_dtypes = ["bfloat16"]
fast_accum = [false, true]
scales = [[1.0, 1.0], [0.5, 2.0]]
scaling = ["tensorwise", "rowwise", "blockwise_1x128", "blockwise_1x128_128x128", "mxfp8"]
[[shapes]]
mnk = [[16, 32, 128], [48, 64, 256], [16, 32, 96]]
"#;

fn sweep(text: &str) -> Sweep {
    Sweep::parse(text, mmaemu_recorder::util::sha256_hex(text.as_bytes())).unwrap()
}

/// The simulated device of hopper, reporting the platform a test gives (a real device's cuBLASLt version),
/// and counting the recipe calls that reach it.
struct Reporting {
    inner: SimDevice,
    platform: Platform,
    recipe_calls: usize,
}

impl Reporting {
    fn new(cublaslt: &str) -> Reporting {
        let inner = SimDevice::new("hopper").unwrap();
        let mut platform = inner.platform().clone();
        platform.simulated = false;
        platform.cublaslt = Some(cublaslt.into());
        Reporting { inner, platform, recipe_calls: 0 }
    }
}

impl Device for Reporting {
    fn platform(&self) -> &Platform {
        &self.platform
    }
    fn heuristic(&mut self, cfg: &CallConfig) -> Result<Heuristic, RecordError> {
        self.inner.heuristic(cfg)
    }
    fn run(&mut self, cfg: &CallConfig, inputs: &Inputs<'_>, runs: usize) -> Result<RunOutcome, RecordError> {
        self.recipe_calls += usize::from(inputs.scales.is_some());
        self.inner.run(cfg, inputs, runs)
    }
}

#[test]
fn simulated_recipes_are_rows_that_replay_or_skips_that_say_why() {
    let s = sweep(SPEC);
    // shapes x fast x scales x scaling.
    assert_eq!(s.case_count(), 3 * 2 * 2 * 5);
    let skipped: Vec<String> = (0..s.case_count()).filter_map(|i| s.case(i).skip).collect();
    // K = 96 is not a multiple of 128 for the two 1 x 128 recipes (x 2 accumulations x 2 scale pairs), but is
    // of MXFP8's 32; the fp32 recipes record their pattern at [1, 1] only (3 recipes x 3 shapes x 2 at scales[1],
    // less those 4), MXFP8 records [0.5, 2.0] as constant block scales.
    assert_eq!(skipped.iter().filter(|w| w.contains("not a multiple of 128")).count(), 2 * 2 * 2);
    assert_eq!(skipped.iter().filter(|w| w.contains("tensor-wise and mxfp8 cases only")).count(), 3 * 3 * 2 - 2 * 2);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("recipes.parquet");
    let mut device = SimDevice::new("hopper").unwrap();
    let opts = SweepOptions { out: out.clone(), quiet: true, ..SweepOptions::default() };
    let r = run_sweep(&s, SPEC, &mut device, Some("hopper"), &opts).unwrap();
    assert_eq!(r.rows + r.skipped + r.unsupported, r.cases, "{r:?}");
    assert_eq!(r.skipped, skipped.len() as u64);
    let rec = read_recording(&out).unwrap();
    // Every tensor-wise case is a row: 3 shapes x 2 accumulations x 2 scale pairs.
    let tensorwise = rec.rows.iter().filter(|r| r.call.as_ref().and_then(|c| c.scale_a.as_ref()).is_none()).count();
    assert_eq!(tensorwise, 12);
    // The simulated device computes the row-wise recipe as a GPU would (opted in to the experimental modes): a row
    // for each of 3 shapes x 2 accumulations.
    let rowwise = rec.rows.iter().filter(|r| {
        r.call.as_ref().and_then(|c| c.scale_a.as_ref()).is_some_and(|a| a.scaling == Some(Scaling::RowWise))
    });
    assert_eq!(rowwise.count(), 6);
    for row in rec.rows.iter().filter(|r| r.call.is_some()) {
        // A recipe row names its scale tensors in the call object; the scalar columns are null.
        let call = row.call.as_ref().unwrap();
        let a = call.scale_a.as_ref().unwrap();
        assert!(a.scaling.is_some_and(|x| x != Scaling::TensorWise), "{}", row.id);
        assert!(row.scale_a.is_none() && row.scale_b.is_none(), "{}", row.id);
    }
    if !rec.rows.is_empty() {
        let report = replay_file(&out, &|| {}).unwrap();
        assert!(report.failures.is_empty(), "{:?}", report.failures.first());
        assert_eq!(report.passed, report.rows);
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(manifest_path(&out)).unwrap()).unwrap();
    assert_eq!(manifest["counts"]["unsupported_scaling"], r.unsupported);
}

#[test]
fn the_loaded_cublaslt_gates_each_recipe() {
    let text = SPEC.replace("scales = [[1.0, 1.0], [0.5, 2.0]]\n", "").replace(", [16, 32, 96]", "");
    let s = sweep(&text);
    let dir = tempfile::tempdir().unwrap();
    // 12.8: no OUTER_VEC / VEC128 / BLK128x128; MXFP8 needs sm_100 (the hopper platform is 9.0).
    let mut old = Reporting::new("12.8.3");
    let o = SweepOptions { out: dir.path().join("old.parquet"), quiet: true, ..SweepOptions::default() };
    let r = run_sweep(&s, &text, &mut old, None, &o).unwrap();
    assert_eq!(old.recipe_calls, 0);
    assert_eq!(r.unsupported, 4 * 2 * 2, "{r:?}");
    assert_eq!(r.rows, 2 * 2);
    // 12.9: the Hopper recipes reach the device; MXFP8 still needs sm_100.
    let mut new = Reporting::new("12.9.1");
    let o = SweepOptions { out: dir.path().join("new.parquet"), quiet: true, ..SweepOptions::default() };
    run_sweep(&s, &text, &mut new, None, &o).unwrap();
    assert_eq!(new.recipe_calls, 3 * 2 * 2);
}

#[test]
fn specs_that_cannot_record_a_recipe_are_refused() {
    let base = "kind = \"sweep\"\nname = \"t\"\n[[shapes]]\nmnk = [[16, 32, 128]]\n";
    for (extra, needle) in [
        ("scaling = [\"nvfp4\"]\n", "python -m mmaemu.record"),
        ("scaling = [\"colwise\"]\n", "colwise"),
        ("scaling = []\n", "scaling is empty"),
        ("op = \"gemm\"\nscaling = [\"rowwise\"]\n", "call object"),
        ("caller = \"transformer-engine\"\nscaling = [\"tensorwise\", \"rowwise\"]\n", "tensor-wise scales only"),
    ] {
        let text = base.replacen("[[shapes]]", &format!("{extra}[[shapes]]"), 1);
        let err = Sweep::parse(&text, String::new()).unwrap_err();
        assert!(err.contains(needle), "{extra}: {err}");
    }
}

/// MXFP8 at scale pairs other than [1, 1]: constant e8m0 block scales, recorded and replayed bit for bit on the
/// simulated B200 (products pushed to the bottom and the top of fp32's range); a pair e8m0 cannot hold is skipped.
#[test]
fn mxfp8_records_constant_block_scales() {
    let text = r#"
kind = "sweep"
name = "mx-pairs"
seed = 46
op = "scaled_mm"
profile = "b200-tcgen05-experimental"
out_dtypes = ["float32"]
fast_accum = [false]
scales = [[1.0, 1.0], [5.421010862427522e-20, 8.673617379884035e-19], [1.2676506002282294e30, 1048576.0], [0.5, 3.0], [1.0, 1.7014118346046923e38]]
scaling = ["mxfp8"]
[[shapes]]
mnk = [[16, 32, 64], [5, 16, 96]]
[[inputs]]
class = "gaussian"
[[inputs]]
class = "split"
"#;
    let s = sweep(text);
    let skipped: Vec<String> = (0..s.case_count()).filter_map(|i| s.case(i).skip).collect();
    // [0.5, 3.0]: 3 is no power of two; [1, 2^127]: 2^127 is e8m0's largest, kept.
    assert_eq!(skipped.len(), 2 * 2, "{skipped:?}");
    assert!(skipped.iter().all(|w| w.contains("powers of two from 2^-127 to 2^127")), "{skipped:?}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mx.parquet");
    let mut device = SimDevice::new("b200-tcgen05-experimental").unwrap();
    let opts = SweepOptions { out: out.clone(), quiet: true, ..SweepOptions::default() };
    let r = run_sweep(&s, text, &mut device, None, &opts).unwrap();
    let m = std::fs::read_to_string(manifest_path(&out)).unwrap();
    assert_eq!((r.rows, r.skipped), (2 * 2 * 4, 4), "{r:?} {m}");
    let rec = read_recording(&out).unwrap();
    let constants: Vec<f64> = rec
        .rows
        .iter()
        .filter_map(|row| row.call.as_ref()?.scale_a.as_ref())
        .filter_map(|a| match a.value {
            mmaemu_datasets::ScaleValue::Number(x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(constants.len(), 2 * 2 * 3);
    assert!(constants.contains(&2f64.powi(-64)) && constants.contains(&2f64.powi(100)));
    let report = replay_file(&out, &|| {}).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures.first());
    assert_eq!(report.passed, report.rows);
    // The tiny scales reach results far below the [1, 1] pattern's.
    let least = rec.rows.iter().filter_map(|r| r.expected_bits()).flat_map(|b| {
        b.chunks(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]).abs()).filter(|x| *x > 0.0).collect::<Vec<_>>()
    });
    assert!(least.fold(f32::MAX, f32::min) < 1e-30);
}
