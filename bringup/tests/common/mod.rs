//! What the bring-up tests share: reading a `bring-up.json` report's preset against the truth it was run on.

use mmaemu_model::PresetSpec;
use serde_json::Value;

/// The preset parameters the report leaves undecided.
pub fn undecided(report: &Value) -> Vec<&str> {
    report["preset"]["undecided"].as_array().unwrap().iter().filter_map(|u| u["parameter"].as_str()).collect()
}

/// Every preset parameter the report decides is the truth's (`label` names the run in a failure).
pub fn assert_decided_are_the_truths(report: &Value, p: &PresetSpec, label: &str) {
    let params = &report["preset"]["parameters"];
    let undecided = undecided(report);
    let want = serde_json::json!({"nfma": p.nfma, "frac": p.frac, "frac_out": p.frac_out,
        "rounding": p.rounding.name(), "min_exp": p.min_exp, "c_entry": p.c_entry.name(), "slow_chunk": p.slow_chunk,
        "scale_block": p.scale_block});
    for (k, v) in want.as_object().unwrap() {
        if !undecided.contains(&k.as_str()) {
            assert_eq!(&params[k], v, "{label}: {k} (truth {p:?}; report {})", report["preset"]);
        }
    }
}

/// Brings up the truth bundle in `truth_dir` from the simulated device alone, sealed: the device holds the truth and
/// the truth's files are gone before the fits start. Writes `out`; `experiments`: designed calls at most. Returns the
/// outcome and the options it ran with.
pub fn bring_up_sealed(
    truth_dir: &std::path::Path,
    out: std::path::PathBuf,
    seed: u64,
    experiments: usize,
) -> (mmaemu_bringup::Outcome, mmaemu_bringup::Options) {
    let profile = mmaemu_datasets::platform::load_profile(truth_dir.to_str().unwrap()).unwrap();
    let mut device = mmaemu_recorder::sim::SimDevice::from_profile(profile).unwrap();
    std::fs::remove_dir_all(truth_dir).unwrap();
    let opts = mmaemu_bringup::Options {
        name: format!("gpu{seed}"),
        out,
        size: mmaemu_bringup::specs::Size::Small,
        budget_minutes: Some(10.0),
        max_experiment_calls: experiments,
        quiet: true,
    };
    let o = mmaemu_bringup::bring_up(&mut device, &opts).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    (o, opts)
}
