//! Named split-side truths brought up on the simulated device: GPUs whose customOptions split K with restarts every
//! 3, 6 and 8 tiles or none, 16- and 512-wide tiles, reversed and tree orders (none of them a shipped scheme). Each is
//! written as a bundle (`truth::write_truth`), loaded into the simulated device and deleted; `bring_up` must fit, for
//! every customOption it saw split, the truth's rule or one that computes the same on every call the recorded table
//! routes to it, and its bundle must replay bit for bit every recorded row and held-out split calls recorded after
//! the fit (other seeds, data classes, formats and out dtypes, the layout recorded as unknown). The device calls per
//! stage are printed. `MMAEMU_SPLIT_TRUTHS=NAME,...` runs some of them.

use mmaemu_bringup::specs::{Size, WORKSPACE};
use mmaemu_bringup::{bring_up, truth, Options};
use mmaemu_datasets::splitk_table::{read_splitk_table, SplitKTable};
use mmaemu_fit::splitk::equivalent_on;
use mmaemu_harness::replay::{replay_row_under, Verdict};
use mmaemu_model::{BlockRounding, CEntry, Preset, PresetSpec, SplitRule};
use mmaemu_recorder::options::RunOptions;
use mmaemu_recorder::sim::SimDevice;
use mmaemu_recorder::spec::Sweep;
use std::collections::BTreeSet;
use std::path::Path;

/// (name, profile seed, rules of customOptions 0, 1, 2). Every customOption the small grid splits gets a named rule;
/// each named feature is some truth's customOption 1 (the one the grid splits most).
const TRUTHS: [(&str, u64, [&str; 3]); 4] = [
    (
        "restart3-w16-reversed",
        9001,
        ["contiguous512/tree/restart6", "interleaved16/reversed/restart3", "contiguous16/serial/restart8"],
    ),
    (
        "restart6-w512-tree",
        9002,
        ["interleaved16/reversed/norestart", "contiguous512/tree/restart6", "interleaved64/pairwise/restart3"],
    ),
    (
        "restart8-w16-tree",
        9003,
        ["interleaved512/serial/restart3", "contiguous16/tree/restart8", "contiguous32/reversed/restart6"],
    ),
    (
        "norestart-w512-reversed",
        9004,
        ["contiguous16/tree/restart3", "interleaved512/reversed/norestart", "interleaved32/serial/restart8"],
    ),
];

/// The truth's instruction: one the preset fit decides in a couple of experiments (4 products a block, 28 term bits,
/// nearest-even, late c, a slow chunk of 144), so that these truths test the split side.
fn preset(seed: u64) -> PresetSpec {
    PresetSpec::custom(&format!("{}-mma", truth::profile_name(seed)), 4, 28, 23, -127, CEntry::Late, Some(144))
        .with_rounding(BlockRounding::NearestEven)
}

/// Held-out split calls: per customOption and accumulation, the recorded table's split keys of the smallest m·n·k
/// (at most 3 of them, m·n·k <= 2^22), with data, formats and out dtypes the bring-up's split sweeps did not use.
fn heldout_spec(name: &str, table: &SplitKTable, fast: bool) -> Option<String> {
    let mut keys: Vec<(u64, u8, [u64; 3])> = table
        .rows
        .iter()
        .filter(|r| r.decision.split_s > 1 && r.fast_accum == fast && r.workspace_bytes == WORKSPACE as i64)
        .map(|r| {
            let (m, n, k) = (r.m as u64, r.n as u64, r.k as u64);
            (m * n * k, r.decision.custom_option, [m, n, k])
        })
        .filter(|(work, _, _)| *work <= 1 << 22)
        .collect();
    keys.sort();
    keys.dedup();
    let mut chosen: Vec<[u64; 3]> = Vec::new();
    for c in keys.iter().map(|x| x.1).collect::<BTreeSet<_>>() {
        for (_, _, key) in keys.iter().filter(|x| x.1 == c).take(3) {
            if !chosen.contains(key) {
                chosen.push(*key);
            }
        }
    }
    if chosen.is_empty() {
        return None;
    }
    let mnk: Vec<String> = chosen.iter().map(|[m, n, k]| format!("[{m}, {n}, {k}]")).collect();
    Some(format!(
        "kind = \"sweep\"\nname = \"{name}-heldout-split-{fast}\"\ndescription = \"held-out split calls\"\nseed = 4242\n\
         op = \"scaled_mm\"\nprofile = \"{name}\"\nformats = [[\"e4m3\", \"e4m3\"], [\"e5m2\", \"e4m3\"]]\n\
         out_dtypes = [\"float32\", \"bfloat16\"]\nfast_accum = [{fast}]\nworkspace = [{WORKSPACE}]\n\
         scales = [[1.0, 1.0]]\nsplit_scheme = \"unknown\"\nchunk_rows = 16\n\n[[shapes]]\nmnk = [{}]\n\n\
         [[inputs]]\nclass = \"gaussian\"\n\n[[inputs]]\nclass = \"binades\"\nwidth = 16\nsilent = 2\n",
        mnk.join(", ")
    ))
}

/// Brings up the named truth; panics with the reason where it is not recovered.
fn bring_up_named(label: &str, seed: u64, rules: [&str; 3], dir: &Path) {
    let source = truth::repository_table();
    let customs = truth::customs(&source).unwrap();
    assert_eq!(customs, [0, 1, 2], "the source table's customOptions");
    let t = truth::Truth {
        seed,
        preset: preset(seed),
        rules: customs.iter().zip(rules).map(|(&c, r)| (c, r.to_string())).collect(),
    };
    let truth_dir = dir.join("truth");
    truth::write_truth(&t, &source, &truth_dir).unwrap_or_else(|e| panic!("{label}: {e}"));
    let profile = mmaemu_datasets::platform::load_profile(truth_dir.to_str().unwrap()).unwrap();
    let mut device = SimDevice::from_profile(profile).unwrap();
    std::fs::remove_dir_all(&truth_dir).unwrap();
    let name = format!("split{seed}");
    let out = dir.join("out");
    let opts = Options {
        name: name.clone(),
        out: out.clone(),
        size: Size::Small,
        budget_minutes: Some(10.0),
        max_experiment_calls: 16,
        quiet: true,
    };
    let started = std::time::Instant::now();
    let o = bring_up(&mut device, &opts).unwrap_or_else(|e| panic!("{label}: {e}"));
    let report = &o.report;
    eprintln!(
        "{label}: {} device calls ({}), {:.1} s; customOptions {}",
        report["calls"]["total"],
        report["calls"]["per_stage"],
        started.elapsed().as_secs_f64(),
        report["custom_options"]
    );
    assert!(o.passed(), "{label}: the bundle does not replay every recorded row: {}", report["check"]);
    let table = read_splitk_table(&out.join(format!("work/{name}-table.parquet"))).unwrap();
    let fitted = report["custom_options"].as_array().unwrap();
    assert!(!fitted.is_empty(), "{label}: no customOption seen split ({report})");
    for c in fitted {
        let label_c = c["label"].as_str().unwrap();
        let (custom, want) = t.rules.iter().find(|(n, _)| label_c == format!("customOption {n}")).unwrap();
        let got = c["rule"].as_str().unwrap_or_else(|| panic!("{label}: {label_c}: no rule ({report})"));
        assert_eq!(c["verdict"], "unique", "{label}: {label_c}: {c}");
        let pair = [SplitRule::parse(got).unwrap(), SplitRule::parse(want).unwrap()];
        assert!(
            got == want || equivalent_on(&pair, &table, *custom as u8, &Preset::custom(t.preset.clone()).unwrap()),
            "{label}: {label_c}: fitted {got}, truth {want}, which a routed call tells apart"
        );
    }
    // Held-out split calls, recorded after the fit by the same device, replayed under the fitted bundle.
    let platform = mmaemu_datasets::platform::load_platform(&o.bundle).unwrap();
    let under = mmaemu_harness::Under::profiles(platform.profiles.clone());
    let engine = mmaemu_api::registry().resolve("reference").unwrap().engine;
    let (mut split_rows, mut rows) = (0, 0);
    for fast in [false, true] {
        let Some(text) = heldout_spec(&name, &table, fast) else { continue };
        let spec = Sweep::parse(&text, mmaemu_datasets::digest::sha256_hex(text.as_bytes())).unwrap();
        let file = dir.join(format!("heldout-{fast}.parquet"));
        let ro = RunOptions { out: file.clone(), quiet: true, ..RunOptions::default() };
        mmaemu_recorder::sweep::run_sweep(&spec, &text, &mut device, None, &ro).unwrap();
        for row in mmaemu_datasets::read_recording(&file).unwrap().rows {
            rows += 1;
            if row.split_s.unwrap_or(1) > 1 {
                assert_eq!(row.split_scheme.as_deref(), Some("unknown"), "{label}: {}", row.id);
                split_rows += 1;
            }
            let v = replay_row_under(&row, engine, &under);
            assert!(matches!(v, Verdict::Pass), "{label}: held-out {} ({}): {:?}", row.id, file.display(), v.message());
        }
    }
    eprintln!("{label}: {rows} held-out rows ({split_rows} split) replayed bit for bit");
    assert!(split_rows > 0, "{label}: no held-out row split");
}

#[test]
fn named_split_truths_are_brought_up() {
    let only: Option<Vec<String>> =
        std::env::var("MMAEMU_SPLIT_TRUTHS").ok().map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    for (label, seed, rules) in TRUTHS {
        if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == label)) {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        bring_up_named(label, seed, rules, tmp.path());
    }
}
