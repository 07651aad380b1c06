//! The command line of `mmaemu-record bring-up` and `mmaemu-record truth`: the arguments, the device they open, and
//! the exit code (0 only when the bundle replays every recorded row bit for bit).

use crate::specs::Size;
use crate::{bring_up, truth, Options};
use mmaemu_recorder::device::Device;
use mmaemu_recorder::RecordError;
use std::path::PathBuf;

/// `mmaemu-record bring-up`.
#[derive(clap::Args, Clone, Debug)]
pub struct BringUpArgs {
    /// The bundle's and its profile's name (a plain name, not one already loaded).
    #[arg(long)]
    pub name: String,
    /// Output directory: DIR/NAME (the bundle), DIR/bring-up.json, DIR/bring-up.html, DIR/work (the recordings;
    /// a second run with the same DIR resumes an interrupted one).
    #[arg(long)]
    pub out: PathBuf,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0, conflicts_with = "simulate")]
    pub device: usize,
    /// Rehearse on the simulated device playing --profile's GPU.
    #[arg(long, requires = "profile")]
    pub simulate: bool,
    /// The simulated GPU: a profile name (MMAEMU_PLATFORMS) or a bundle's path (PATH[#PROFILE]).
    #[arg(long)]
    pub profile: Option<String>,
    /// Minutes the run may take: no experiment starts after them.
    #[arg(long)]
    pub budget_minutes: Option<f64>,
    /// How much to record: small or full (default: full on a GPU, small on the simulated device).
    #[arg(long)]
    pub size: Option<String>,
    /// Device calls the experiments may make in all.
    #[arg(long, default_value_t = 64)]
    pub max_experiment_calls: usize,
    /// No progress lines.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `mmaemu-record truth`.
#[derive(clap::Args, Clone, Debug)]
pub struct TruthArgs {
    /// The seed the truth is drawn from.
    #[arg(long)]
    pub seed: u64,
    /// The recorded split-K table whose decisions the truth makes (default: the repository's RTX 4060 table).
    #[arg(long)]
    pub table: Option<PathBuf>,
    /// The new bundle's directory.
    #[arg(long)]
    pub out: PathBuf,
    /// An sm_100 whose instruction takes MXFP8 block scales: 32-product blocks, each scaled by its two e8m0 codes
    /// (the drawn truth's other parameters and rules kept).
    #[arg(long)]
    pub block_scaled: bool,
}

/// Opens the device of `bring-up`: the GPU, or the simulated device of a profile (a bundle's path is loaded
/// without joining the process's catalogue: only the device holds the truth).
pub fn open(a: &BringUpArgs) -> Result<Box<dyn Device>, RecordError> {
    if !a.simulate {
        return Ok(Box::new(mmaemu_recorder::gpu::GpuDevice::open(a.device)?));
    }
    let p = a.profile.as_deref().ok_or_else(|| RecordError::Usage("--simulate needs --profile".into()))?;
    let device = if mmaemu_api::is_bundle_arg(p) {
        let profile =
            mmaemu_datasets::platform::load_profile(p).map_err(|e| RecordError::Usage(format!("--profile: {e}")))?;
        mmaemu_recorder::sim::SimDevice::from_profile(profile)?
    } else {
        mmaemu_recorder::sim::SimDevice::new(p)?
    };
    Ok(Box::new(device))
}

/// The options of `bring-up` from its arguments.
pub fn options(a: &BringUpArgs) -> Result<Options, RecordError> {
    let size = match a.size.as_deref() {
        None if a.simulate => Size::Small,
        None | Some("full") => Size::Full,
        Some("small") => Size::Small,
        Some(s) => return Err(RecordError::Usage(format!("--size {s:?}: small or full"))),
    };
    if !mmaemu_model::catalogue::is_plain_label(&a.name) {
        return Err(RecordError::Usage(format!("--name {:?}: a plain name, [a-z0-9][a-z0-9._-]*", a.name)));
    }
    if mmaemu_api::catalogue().profile(&a.name).is_ok() {
        return Err(RecordError::Usage(format!("--name {}: a profile of that name is already loaded", a.name)));
    }
    Ok(Options {
        name: a.name.clone(),
        out: a.out.clone(),
        size,
        budget_minutes: a.budget_minutes,
        max_experiment_calls: a.max_experiment_calls,
        quiet: a.quiet,
    })
}

/// Runs `bring-up`: Ok(true) when the check replays every recorded row bit for bit.
pub fn run_bring_up(a: &BringUpArgs) -> Result<bool, crate::Error> {
    let opts = options(a)?;
    let mut device = open(a)?;
    let outcome = bring_up(device.as_mut(), &opts)?;
    println!(
        "{}",
        serde_json::json!({"out": opts.out.display().to_string(), "bundle": outcome.bundle.display().to_string(),
        "verdict": outcome.report["verdict"], "calls": outcome.report["calls"], "open": outcome.open(),
        "check": {"passed": outcome.check.passed, "failed": outcome.check.failed, "skipped": outcome.check.skipped}})
    );
    Ok(outcome.passed())
}

/// Runs `truth`: writes the bundle and prints the truth.
pub fn run_truth(a: &TruthArgs) -> Result<(), RecordError> {
    let table = a.table.clone().unwrap_or_else(truth::repository_table);
    let t = truth::write_drawn(a.seed, &table, &a.out, a.block_scaled).map_err(RecordError::Usage)?;
    println!(
        "{}",
        serde_json::json!({"seed": t.seed, "profile": truth::profile_name(t.seed), "out": a.out.display().to_string(),
            "preset": mmaemu_model::Preset::custom(t.preset.clone()).map(|p| p.to_document()).unwrap_or_default(), "rules": t.rules.iter().map(|(c, r)| (c.to_string(), serde_json::Value::from(r.clone())))
                .collect::<serde_json::Map<_, _>>()})
    );
    Ok(())
}
