//! Seeded random truths: a GPU that exists nowhere, drawn across the whole space bring-up must recover (the
//! instruction's parameters and one split rule per customOption), written as a platform bundle that the simulated
//! device plays. The truth's split decisions are a recorded table's (its keys and customOptions), under new rules.

use mmaemu_datasets::digest::sha256_file;
use mmaemu_model::manifest::{
    Manifest, ManifestGpu, ManifestLibrary, ManifestProfile, ManifestSplitk, FORMAT, MANIFEST,
};
use mmaemu_model::{BlockRounding, CEntry, Plan, Preset, PresetSpec, Scheme, SplitK, SplitRule};
use rand::{RngExt, SeedableRng};
use std::path::{Path, PathBuf};

/// One drawn truth: its preset and the split rule of each customOption of the source table.
#[derive(Debug, Clone, PartialEq)]
pub struct Truth {
    /// The seed it was drawn from.
    pub seed: u64,
    /// The instruction's arithmetic (slow chunk included).
    pub preset: PresetSpec,
    /// (customOption, rule name).
    pub rules: Vec<(i64, String)>,
}

/// The profile name of the truth of `seed`.
pub fn profile_name(seed: u64) -> String {
    format!("truth-{seed}")
}

/// Draws the truth of `seed` for the customOptions `customs` (the source table's): nfma 4..=128 (a power of two, as
/// every instruction the preset fit searches), frac 8..=40, truncation to frac_out 8..=23 or nearest even, early or late c, min_exp
/// -140..=-126, a slow chunk 64..=1024 (a multiple of 16), and per customOption a rule: interleaved or contiguous
/// tiles 16..=512 wide, serial, pairwise, reversed or tree order, no restart (`/norestart`: one chain per split) or
/// a restart every 1..=8 tiles. Every rule names a restart, so the model runs the truth's slow split calls too.
pub fn draw(seed: u64, customs: &[i64]) -> Truth {
    draw_where(seed, customs, |_, _| true)
}

/// [`draw`], each customOption's rule drawn again until `plans(customOption, rule)`: the model refuses some splits of
/// the documented schemes (`contiguous128/serial/restart1` is hopper's `contiguous`, which never leaves a split without
/// a k-tile, so S = 24 over K = 8192 is refused), and a truth whose own table's calls it refuses cannot be played. A
/// truth whose first draws plan is [`draw`]'s; [`write`] checks every split the table routes to the customOption.
pub fn draw_where(seed: u64, customs: &[i64], plans: impl Fn(i64, &str) -> bool) -> Truth {
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
    let nfma = 1u32 << rng.random_range(2..=7);
    let frac = rng.random_range(8..=40);
    let (frac_out, rounding) = if rng.random_bool(0.5) {
        (23, BlockRounding::NearestEven)
    } else {
        (rng.random_range(8..=23), BlockRounding::Truncate)
    };
    let min_exp = rng.random_range(-140..=-126);
    let c_entry = if rng.random_bool(0.5) { CEntry::Early } else { CEntry::Late };
    let slow_chunk = 16 * rng.random_range(4..=64u32);
    let name = format!("{}-mma", profile_name(seed));
    let preset =
        PresetSpec::custom(&name, nfma, frac, frac_out, min_exp, c_entry, Some(slow_chunk)).with_rounding(rounding);
    let rule = |rng: &mut rand::rngs::ChaCha8Rng| {
        let ownership = if rng.random_bool(0.5) { "interleaved" } else { "contiguous" };
        let width = 16usize << rng.random_range(0..=5);
        let order = ["serial", "pairwise", "reversed", "tree"][rng.random_range(0..4)];
        let restart = match rng.random_range(0..=8) {
            0 => "/norestart".to_string(),
            n => format!("/restart{n}"),
        };
        format!("{ownership}{width}/{order}{restart}")
    };
    let mut rules: Vec<(i64, String)> = customs.iter().map(|&c| (c, rule(&mut rng))).collect();
    // A rule that does not plan is drawn again from a stream of its own, so the other rules stay [`draw`]'s.
    // Interleaved 16-wide tiles give every split a tile wherever S is at most K / 16: some draw plans.
    for (c, r) in rules.iter_mut() {
        let mut again = rand::rngs::ChaCha8Rng::seed_from_u64(seed ^ (0x5EED_0000 + *c as u64));
        for _ in 0..1000 {
            if plans(*c, r) {
                break;
            }
            *r = rule(&mut again);
        }
    }
    Truth { seed, preset, rules }
}

/// The customOptions the recorded table `source` (a `.parquet` with its `.json` sidecar) maps to a scheme, ascending:
/// the ones a truth written over it needs a rule for.
pub fn customs(source: &Path) -> Result<Vec<i64>, String> {
    let (_, customs) = sidecar(source)?;
    Ok(customs)
}

fn sidecar(source: &Path) -> Result<(serde_json::Value, Vec<i64>), String> {
    let sidecar_path = source.with_extension("json");
    // A regular file under the memory ceiling (a FIFO or a device is refused before it is opened).
    let text = mmaemu_datasets::platform::read_data(&sidecar_path, "the table's sidecar").map_err(|e| e.to_string())?;
    let sidecar: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", sidecar_path.display()))?;
    let mut customs: Vec<i64> = sidecar["codes"]["custom -> scheme"]
        .as_object()
        .map(|m| m.keys().filter_map(|k| k.parse().ok()).collect())
        .unwrap_or_default();
    customs.sort_unstable();
    if customs.is_empty() {
        return Err(format!("{}: the sidecar maps no customOption to a scheme", sidecar_path.display()));
    }
    Ok((sidecar, customs))
}

/// Writes the truth of `seed` as a bundle in the new directory `out`, its split decisions those of the recorded
/// table `source` (a `.parquet` with its `.json` sidecar) under the drawn rules. Returns the truth.
pub fn write(seed: u64, source: &Path, out: &Path) -> Result<Truth, String> {
    let table = mmaemu_datasets::read_splitk_table(source).map_err(|e| e.to_string())?;
    let splits: Vec<(i64, usize, usize, bool)> = table
        .rows
        .iter()
        .filter(|r| r.decision.split_s > 1)
        .filter_map(|r| Some((i64::from(r.decision.custom_option), r.split_key()?, r.decision.split_s as usize)))
        .map(|(c, key, s)| (c, key.k, s, key.fast))
        .collect();
    let truth = draw_where(seed, &customs(source)?, |c, rule| {
        let Some(rule) = SplitRule::parse(rule) else { return false };
        // A rule that is the documented `contiguous` scheme is refused where a split owns no k-tile (§6.6: never
        // recorded); and the model plans the call.
        let documented = Scheme::of_rule(rule) == Scheme::Contiguous;
        splits.iter().filter(|x| x.0 == c).all(|&(_, k, s, fast)| {
            let rule = if fast { rule.fast() } else { rule };
            !(documented && rule.plan_splits(k, s, fast).iter().any(|split| split.chunks.is_empty()))
                && SplitK::new(s, Scheme::Rule(rule))
                    .is_ok_and(|split| Plan::new(&Preset::ada(), k, fast, split).is_ok())
        })
    });
    write_truth(&truth, source, out)?;
    Ok(truth)
}

/// Writes `truth` (a drawn one, or one built from a chosen preset and rules; its seed names its profile,
/// [`profile_name`]) as a bundle in the new directory `out`, its split decisions those of the recorded table `source`
/// under the truth's rules, which must name every customOption of the table ([`customs`]).
pub fn write_truth(truth: &Truth, source: &Path, out: &Path) -> Result<(), String> {
    let (mut sidecar, customs) = sidecar(source)?;
    if let Some(c) = customs.iter().find(|c| !truth.rules.iter().any(|(r, _)| r == *c)) {
        return Err(format!("truth {}: no rule for customOption {c} of {}", truth.seed, source.display()));
    }
    let seed = truth.seed;
    let name = profile_name(seed);
    let gpu = format!("Random GPU {seed}");
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let table = format!("{name}-table");
    let mut from = mmaemu_datasets::open_regular(source).map_err(|e| e.to_string())?;
    let mut to = std::fs::File::create(out.join(format!("{table}.parquet"))).map_err(|e| e.to_string())?;
    std::io::copy(&mut from, &mut to).map_err(|e| format!("{}: {e}", source.display()))?;
    sidecar["platform"]["gpu"] = gpu.clone().into();
    sidecar["profile_device"]["gpu"] = gpu.clone().into();
    sidecar["name"] = table.clone().into();
    // A bundle states no verification of its own (docs/platform-format.md).
    if let Some(m) = sidecar.as_object_mut() {
        m.remove("verified_combos");
        m.remove("split_layouts");
    }
    sidecar["codes"]["custom -> scheme"] =
        truth.rules.iter().map(|(c, r)| (c.to_string(), serde_json::Value::from(r.clone()))).collect();
    std::fs::write(out.join(format!("{table}.json")), sidecar.to_string()).map_err(|e| e.to_string())?;
    let sha = |f: &str| -> Result<String, String> { Ok(sha256_file(&out.join(f)).map_err(|e| format!("{f}: {e}"))?.0) };
    let preset = Preset::from_spec(truth.preset.clone()).map_err(|e| format!("truth {seed}: {e}"))?;
    let manifest = Manifest {
        format: FORMAT.into(),
        name: name.clone(),
        description: format!("a random GPU (seed {seed})"),
        gpu: Some(ManifestGpu { name: Some(gpu), capability: [12, 7], sm_count: Some(7), driver: None }),
        library: Some(ManifestLibrary { cublaslt: "12.8.3.14".into() }),
        preset: preset.to_document().parse().map_err(|e| format!("truth {seed}: {e}"))?,
        splitk: Some(ManifestSplitk { table: Some(format!("{table}.parquet")), schemes: None }),
        reject: Vec::new(),
        profile: vec![ManifestProfile {
            name: name.clone(),
            caller: "torch._scaled_mm".into(),
            workspace: Some(1 << 20),
            description: format!("random truth {seed}"),
            ..ManifestProfile::default()
        }],
        files: [format!("{table}.parquet"), format!("{table}.json")]
            .into_iter()
            .map(|f| Ok((f.clone(), sha(&f)?)))
            .collect::<Result<_, String>>()?,
    };
    let manifest = toml::to_string(&manifest).map_err(|e| format!("truth {seed}: {e}"))?;
    std::fs::write(out.join(MANIFEST), manifest).map_err(|e| e.to_string())?;
    // Check it loads: a truth the model refuses is a generator bug, said here rather than at the first call.
    mmaemu_datasets::platform::load_platform(out).map_err(|e| format!("truth {seed}: {e}"))?;
    Ok(())
}

/// The source table the truths reuse in this repository (for tests and the documented long run).
pub fn repository_table() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets/platforms/rtx4060-cublaslt-12.8.3.14/rtx4060-cublaslt-12.8.3.14.parquet")
}
