//! `bring-up --simulate` on named instruction truths outside the built-in presets (2-, 16- and 64-product blocks,
//! nearest-even and truncated block results, late and early c, slow chunks of 192 to 1024 elements), their split
//! layouts the recorded table's own: each is brought up from the simulated device alone (its bundle is deleted
//! before the fits start), and its fitted preset must equal the truth in every decided parameter, with the bundle
//! replaying every recorded row (held-out calls included) bit for bit. The device calls are printed.
//!
//! CI runs the first two; `MMAEMU_BRINGUP_TRUTHS=all` runs every one, `MMAEMU_BRINGUP_TRUTHS=name,name` the ones named:
//! `MMAEMU_BRINGUP_TRUTHS=all cargo test -p mmaemu-bringup --test truths_instruction -- --nocapture`.

mod common;

use mmaemu_bringup::truth;
use mmaemu_model::{BlockRounding, CEntry, PresetSpec};

/// A named truth: (name, nfma, frac, block result, c entry, slow chunk).
type Named = (&'static str, u32, u32, (u32, BlockRounding), CEntry, u32);

/// The truths, CI's first. The first is issue 42's GPU (16-product blocks, 24 term bits, nearest even, late c, a slow
/// chunk of 256).
const TRUTHS: [Named; 8] = [
    ("b16-ne-late-256", 16, 24, (23, BlockRounding::NearestEven), CEntry::Late, 256),
    ("b64-ne-early-192", 64, 28, (23, BlockRounding::NearestEven), CEntry::Early, 192),
    ("b16-trunc-early-192", 16, 20, (16, BlockRounding::Truncate), CEntry::Early, 192),
    ("b64-ne-late-256", 64, 33, (23, BlockRounding::NearestEven), CEntry::Late, 256),
    ("b16-ne-early-256", 16, 30, (23, BlockRounding::NearestEven), CEntry::Early, 256),
    ("b64-trunc-late-192", 64, 14, (12, BlockRounding::Truncate), CEntry::Late, 192),
    ("b16-ne-late-240", 16, 19, (23, BlockRounding::NearestEven), CEntry::Late, 240),
    ("b2-trunc-early-1024", 2, 19, (22, BlockRounding::Truncate), CEntry::Early, 1024),
];

/// The truths this run brings up.
fn selected() -> Vec<(usize, Named)> {
    let all = TRUTHS.iter().copied().enumerate();
    match std::env::var("MMAEMU_BRINGUP_TRUTHS") {
        Ok(v) if v == "all" => all.collect(),
        Ok(v) => all.filter(|(_, t)| v.split(',').any(|n| n.trim() == t.0)).collect(),
        Err(_) => all.take(2).collect(),
    }
}

/// The truth of a named preset: the recorded table's own split layouts (its documented schemes' rules).
fn named(index: usize, t: Named) -> truth::Truth {
    let (name, nfma, frac, (frac_out, rounding), c_entry, slow) = t;
    let source = truth::repository_table();
    let rules = truth::customs(&source)
        .unwrap()
        .into_iter()
        .map(|c| (c, if c == 1 { "interleaved64/pairwise/restart2" } else { "interleaved64/serial/restart2" }.into()))
        .collect();
    let spec = PresetSpec::custom(&format!("{name}-mma"), nfma, frac, frac_out, -133, c_entry, Some(slow))
        .with_rounding(rounding);
    truth::Truth { seed: 9000 + index as u64, preset: spec, rules }
}

fn bring_up_named(index: usize, t: Named) {
    let tmp = tempfile::tempdir().unwrap();
    let truth_dir = tmp.path().join("truth");
    let t = named(index, t);
    let name = t.preset.name.clone();
    truth::write_truth(&t, &truth::repository_table(), &truth_dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    // Sealed: the truth's files are gone before the fits start.
    let start = std::time::Instant::now();
    let (o, _) = common::bring_up_sealed(&truth_dir, tmp.path().join("out"), t.seed, 16);
    let report = &o.report;
    eprintln!(
        "{name}: {} device calls ({}), {:.0} s; preset {}",
        report["calls"]["total"],
        report["calls"]["per_stage"],
        start.elapsed().as_secs_f64(),
        report["preset"]["fit"]["verdict"]
    );
    assert_eq!(report["preset"]["fit"]["verdict"], "unique", "{name}: {}", report["preset"]);
    let undecided = common::undecided(report);
    for key in ["nfma", "frac", "c_entry", "slow_chunk"] {
        assert!(!undecided.contains(&key), "{name}: {key} undecided: {}", report["preset"]);
    }
    common::assert_decided_are_the_truths(report, &t.preset, &name);
    // The device skips every MXFP8 call (its instruction takes no block scales): the fitted preset takes none.
    assert_eq!(report["preset"]["parameters"]["scale_block"], serde_json::Value::Null, "{name}");
    let scale = report["preset"]["decisions"].as_array().unwrap().iter().find(|d| d["parameter"] == "scale_block");
    assert_eq!(scale.unwrap()["values"], serde_json::json!(["none"]), "{name}");
    assert!(o.passed(), "{name}: the bundle does not replay every row: {}", report["check"]);
}

#[test]
fn named_instruction_truths_are_brought_up_from_the_simulated_device_alone() {
    let runs = selected();
    assert!(!runs.is_empty(), "MMAEMU_BRINGUP_TRUTHS names no truth of {:?}", TRUTHS.map(|t| t.0));
    for (i, t) in runs {
        eprintln!("bring-up of the named truth {} (rerun with MMAEMU_BRINGUP_TRUTHS={})", t.0, t.0);
        bring_up_named(i, t);
    }
}
