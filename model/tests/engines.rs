//! The engine contract of plan execution (docs/reference.md §3.5): operand checks, engines used through
//! references, what `execute` hands an engine (finite codes only) and how a chunk's columns are gathered.

use mmaemu_model::accumulate::gather;
use mmaemu_model::plan::Chunk;
use mmaemu_model::{execute, ChainEngine, Format, Operands, Plan, Preset, ReferenceEngine, SplitK};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

const E4: Format = Format::E4m3;
const E5: Format = Format::E5m2;

fn ops<'a>(a: &'a [u8], b: &'a [u8], m: usize, n: usize, k: usize) -> Operands<'a> {
    Operands { fa: E4, fb: E5, a, b, m, n, k }
}

#[test]
fn operand_buffers_must_match_the_shape() {
    let (a, b) = (vec![0u8; 2 * 3], vec![0u8; 4 * 3]);
    assert!(ops(&a, &b, 2, 4, 3).check().is_ok());
    // Either buffer alone of the wrong length is refused.
    assert!(ops(&a[..5], &b, 2, 4, 3).check().is_err());
    assert!(ops(&a, &b[..11], 2, 4, 3).check().is_err());
    assert!(ops(&a, &b, 3, 4, 3).check().is_err());
    assert!(ops(&a, &b, 2, 3, 3).check().is_err());
    // A size product that overflows is refused, not wrapped.
    assert!(ops(&[], &[], usize::MAX, 0, 2).check().is_err());
    assert!(ops(&[], &[], 0, usize::MAX, 2).check().is_err());
    // execute checks them before anything else.
    let plan = Plan::new(&Preset::hopper(), 3, true, SplitK::NONE).unwrap();
    assert!(execute(&Preset::hopper(), &plan, &ops(&a[..5], &b, 2, 4, 3), &ReferenceEngine).is_err());
}

/// An engine whose every answer is recognisable: `chains` numbers the outputs, `run_plan` fills -2, and it
/// serves hopper only.
struct Probe;

impl ChainEngine for Probe {
    fn name(&self) -> String {
        "probe".into()
    }
    fn chains(&self, _preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        (0..ops.m * ops.n).map(|o| o as f32 + 0.5).collect()
    }
    fn run_plan(&self, _preset: &Preset, _plan: &Plan, ops: &Operands<'_>) -> Vec<f32> {
        vec![-2.0; ops.m * ops.n]
    }
    fn serves(&self, preset: &Preset, _fa: Format, _fb: Format) -> bool {
        preset.name() == "hopper"
    }
}

/// An engine's answers: name, chains, run_plan, run_plan_checked, serves (hopper, ada).
type Answers = (String, Vec<f32>, Vec<f32>, Option<Vec<f32>>, [bool; 2]);

/// The five answers of an engine, called through the generic parameter (for `&Probe`, the impl for references).
fn answers<E: ChainEngine>(e: E) -> Answers {
    let (a, b) = (vec![0x38u8; 2 * 16], vec![0x38u8; 3 * 16]);
    let ops = ops(&a, &b, 2, 3, 16);
    let hopper = Preset::hopper();
    let plan = Plan::new(&hopper, 16, true, SplitK::NONE).unwrap();
    (
        e.name(),
        e.chains(&hopper, &ops),
        e.run_plan(&hopper, &plan, &ops),
        e.run_plan_checked(&hopper, &plan, &ops),
        [e.serves(&hopper, E4, E5), e.serves(&Preset::ada(), E4, E5)],
    )
}

#[test]
fn an_engine_behind_a_reference_forwards_every_method() {
    let want =
        ("probe".to_string(), vec![0.5, 1.5, 2.5, 3.5, 4.5, 5.5], vec![-2.0; 6], Some(vec![-2.0; 6]), [true, false]);
    assert_eq!(answers(Probe), want);
    assert_eq!(answers(&Probe), want);
}

/// An engine that counts its calls and sets a flag if it is ever handed a non-finite code.
#[derive(Default)]
struct FiniteOnly {
    calls: AtomicUsize,
    saw_nonfinite: AtomicBool,
}

impl ChainEngine for FiniteOnly {
    fn name(&self) -> String {
        "finite-only".into()
    }
    fn chains(&self, preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if ops.fa.any_nonfinite(ops.a) || ops.fb.any_nonfinite(ops.b) {
            self.saw_nonfinite.store(true, Ordering::Relaxed);
        }
        ReferenceEngine.chains(preset, ops)
    }
}

#[test]
fn a_default_engine_serves_every_preset_and_the_reference_is_named() {
    let e = FiniteOnly::default();
    for preset in [Preset::hopper(), Preset::ada()] {
        for (fa, fb) in [(E4, E4), (E4, E5), (E5, E4), (E5, E5)] {
            assert!(e.serves(&preset, fa, fb));
            assert!(ReferenceEngine.serves(&preset, fa, fb));
        }
    }
    assert_eq!(ReferenceEngine.name(), "reference");
}

#[test]
fn execute_hands_the_engine_finite_codes_only() {
    // §3.5 step 3: non-finite codes are replaced by zero before any chain; §3.7 patches their outputs after.
    // Row 0 of A holds an e4m3 NaN (0x7F), row 0 of B an e5m2 +Inf (0x7C); the other codes are 1.0.
    let (m, n, k) = (2, 2, 40);
    let mut a = vec![0x38u8; m * k];
    let mut b = vec![0x3Cu8; n * k];
    a[5] = 0x7F;
    b[7] = 0x7C;
    let preset = Preset::ada();
    for split in [SplitK::NONE, SplitK::new(2, mmaemu_model::Scheme::Serial).unwrap()] {
        for fast in [true, false] {
            let plan = Plan::new(&preset, k, fast, split).unwrap();
            let engine = FiniteOnly::default();
            let out = execute(&preset, &plan, &ops(&a, &b, m, n, k), &engine).unwrap();
            assert!(engine.calls.load(Ordering::Relaxed) > 0);
            assert!(!engine.saw_nonfinite.load(Ordering::Relaxed), "fast {fast}, {split:?}");
            // Row 0 of A holds a NaN: NaN. (1, 0): 39 terms of 1 and one 1 x Inf: +Inf. (1, 1): 40 x 1.
            assert!(out[0].is_nan() && out[1].is_nan());
            assert_eq!(out[2], f32::INFINITY);
            assert_eq!(out[3], 40.0);
        }
    }
}

#[test]
fn a_chunk_gathers_its_ranges_in_order_then_zero_padding() {
    // Two rows of K = 6 codes 1..=12; the chunk takes k 1..3 and 4..6 and pads to 6.
    let x: Vec<u8> = (1..=12).collect();
    let chunk = Chunk { ranges: vec![1..3, 4..6], len: 6 };
    assert_eq!(gather(&x, 2, 6, &chunk), vec![2, 3, 5, 6, 0, 0, 8, 9, 11, 12, 0, 0]);
    let chunk = Chunk { ranges: vec![3..4, 0..2], len: 3 };
    assert_eq!(gather(&x, 2, 6, &chunk), vec![4, 1, 2, 10, 7, 8]);
}
