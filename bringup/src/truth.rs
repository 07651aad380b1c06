//! Seeded random truths: a GPU that exists nowhere, drawn across the whole space bring-up must recover (the
//! instruction's parameters and one split rule per customOption), written as a platform bundle that the simulated
//! device plays. The truth's split decisions are a recorded table's (its keys and customOptions), under new rules.

use mmaemu_datasets::digest::sha256_hex;
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

/// A truth whose instruction takes MXFP8 block scales (an sm_100, docs/reference.md §2.8): the truth with 32-product
/// blocks, each scaled by its two e8m0 codes (scale_block = nfma = 32); every other parameter and the split rules
/// stay.
pub fn block_scaled(mut t: Truth) -> Truth {
    t.preset.nfma = 32;
    t.preset.scale_block = Some(32);
    t
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
    Ok(Source::read(source)?.customs)
}

/// A split call's (K, S, fast).
type Shape = (usize, usize, bool);

/// A recorded table a truth is written over: both files read once (regular files under the memory ceiling: a link,
/// FIFO or device is refused before it is read), its sidecar parsed and the customOptions it maps to a scheme.
struct Source {
    path: PathBuf,
    parquet: Vec<u8>,
    sidecar_path: PathBuf,
    sidecar_bytes: Vec<u8>,
    sidecar: serde_json::Value,
    customs: Vec<i64>,
}

impl Source {
    fn read(path: &Path) -> Result<Source, String> {
        let sidecar_path = path.with_extension("json");
        let ceiling = mmaemu_datasets::limits::ceiling();
        let read =
            |p: &Path, what| mmaemu_datasets::platform::read_regular(p, ceiling, what).map_err(|e| e.to_string());
        let sidecar_bytes = read(&sidecar_path, "the table's sidecar")?;
        let parquet = read(path, "the table")?;
        let sidecar: serde_json::Value =
            serde_json::from_slice(&sidecar_bytes).map_err(|e| format!("{}: {e}", sidecar_path.display()))?;
        let mut customs: Vec<i64> = sidecar["codes"]["custom -> scheme"]
            .as_object()
            .map(|m| m.keys().filter_map(|k| k.parse().ok()).collect())
            .unwrap_or_default();
        customs.sort_unstable();
        if customs.is_empty() {
            return Err(format!("{}: the sidecar maps no customOption to a scheme", sidecar_path.display()));
        }
        Ok(Source { path: path.to_path_buf(), parquet, sidecar_path, sidecar_bytes, sidecar, customs })
    }

    /// The (K, S, fast) of the split calls the table routes to each of its customOptions (its rows parsed).
    fn routed(&self) -> Result<Vec<(i64, Vec<Shape>)>, String> {
        let table = mmaemu_datasets::splitk_table::splitk_table_from_bytes(
            &self.path,
            self.parquet.clone(),
            &self.sidecar_path,
            &self.sidecar_bytes,
        )
        .map_err(|e| e.to_string())?;
        let custom = |c: i64| u8::try_from(c).map_err(|_| format!("{}: customOption {c}", self.sidecar_path.display()));
        self.customs.iter().map(|&c| Ok((c, mmaemu_fit::splitk::routed_shapes(&table, custom(c)?)))).collect()
    }
}

/// Writes the truth of `seed` as a bundle in the new directory `out`, its split decisions those of the recorded
/// table `source` (a `.parquet` with its `.json` sidecar) under the drawn rules. Returns the truth.
pub fn write(seed: u64, source: &Path, out: &Path) -> Result<Truth, String> {
    write_drawn(seed, source, out, false)
}

/// [`write`], the drawn truth's instruction made [`block_scaled`] where `scaled`.
pub fn write_drawn(seed: u64, source: &Path, out: &Path, scaled: bool) -> Result<Truth, String> {
    let source = Source::read(source)?;
    let routed = source.routed()?;
    let truth = draw_where(seed, &source.customs, |c, rule| {
        let Some(rule) = SplitRule::parse(rule) else { return false };
        // A rule that is the documented `contiguous` scheme is refused where a split owns no k-tile (§6.6: never
        // recorded); and the model plans the call.
        let documented = Scheme::of_rule(rule) == Scheme::Contiguous;
        routed.iter().filter(|(x, _)| *x == c).flat_map(|(_, shapes)| shapes).all(|&(k, s, fast)| {
            let rule = if fast { rule.fast() } else { rule };
            !(documented && rule.plan_splits(k, s, fast).iter().any(|split| split.chunks.is_empty()))
                && SplitK::new(s, Scheme::Rule(rule))
                    .is_ok_and(|split| Plan::new(&Preset::ada(), k, fast, split).is_ok())
        })
    });
    let truth = if scaled { block_scaled(truth) } else { truth };
    write_from(&truth, &source, out)?;
    Ok(truth)
}

/// Writes `truth` (a drawn one, or one built from a chosen preset and rules; its seed names its profile,
/// [`profile_name`]) as a bundle in the new directory `out`, its split decisions those of the recorded table `source`
/// under the truth's rules, which must name every customOption of the table ([`customs`]).
pub fn write_truth(truth: &Truth, source: &Path, out: &Path) -> Result<(), String> {
    write_from(truth, &Source::read(source)?, out)
}

fn write_from(truth: &Truth, source: &Source, out: &Path) -> Result<(), String> {
    if let Some(c) = source.customs.iter().find(|c| !truth.rules.iter().any(|(r, _)| r == *c)) {
        return Err(format!("truth {}: no rule for customOption {c} of {}", truth.seed, source.path.display()));
    }
    let mut sidecar = source.sidecar.clone();
    let seed = truth.seed;
    let name = profile_name(seed);
    let gpu = format!("Random GPU {seed}");
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let table = format!("{name}-table");
    std::fs::write(out.join(format!("{table}.parquet")), &source.parquet).map_err(|e| e.to_string())?;
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
    let sidecar = sidecar.to_string();
    std::fs::write(out.join(format!("{table}.json")), &sidecar).map_err(|e| e.to_string())?;
    let preset = Preset::from_spec(truth.preset.clone()).map_err(|e| format!("truth {seed}: {e}"))?;
    let manifest = Manifest {
        format: FORMAT.into(),
        name: name.clone(),
        description: format!("a random GPU (seed {seed})"),
        // A GPU whose instruction takes e8m0 block scales is an sm_100 (the MXFP8 mode's GPU, §12.7); others a
        // capability no built-in profile has.
        gpu: Some(ManifestGpu {
            name: Some(gpu),
            capability: if truth.preset.scale_block.is_some() { [10, 0] } else { [12, 7] },
            sm_count: Some(7),
            driver: None,
        }),
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
        // The digests of the bytes just written.
        files: [
            (format!("{table}.parquet"), sha256_hex(&source.parquet)),
            (format!("{table}.json"), sha256_hex(sidecar.as_bytes())),
        ]
        .into(),
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
