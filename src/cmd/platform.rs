//! `mmaemu platform build|check` and the command line's platform loading: `--platform DIR`, `MMAEMU_PLATFORMS` and
//! `--profile PATH[#NAME]` (docs/platform-format.md). Loading is the datasets crate's; this adapts it to arguments.

use super::{CommandError, CommandResult, Exit};
use clap::Subcommand;
use mmaemu_api::PLATFORMS_ENV;
use mmaemu_datasets::platform::{build_platform, replace_platform, unknown_layouts, BuildSpec};
use std::path::{Path, PathBuf};

/// `mmaemu platform ...`.
#[derive(Subcommand)]
pub enum PlatformCommand {
    /// Write a platform bundle from a recorded split-K table (and its sidecar), a preset and recordings.
    Build(Box<BuildArgs>),
    /// Load a bundle (every file and sha256 checked), replay its recordings and print the computed status.
    Check {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// The bundle directory.
        dir: PathBuf,
    },
}

/// `mmaemu platform build`.
#[derive(clap::Args)]
pub struct BuildArgs {
    /// The bundle's name (also its profile's name unless --profile is given).
    #[arg(long)]
    pub name: String,
    /// The split-K table (`mmaemu-splitk-table/1`, the recorder's `heuristics` output); its sidecar is the same
    /// path with `.json`.
    #[arg(long)]
    pub table: Option<PathBuf>,
    /// The instruction preset: a built-in name (ada, hopper, b200_mma_sync, ...) or a preset document's path
    /// (`mmaemu fit preset --out`), embedded in the manifest.
    #[arg(long)]
    pub preset: String,
    /// The output of `mmaemu fit splitk --json` over the GPU's split recordings: the table's schemes become the
    /// fitted rules.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// The envelope `mmaemu fit envelope --out` fitted from the same table (`mmaemu-envelope/1`): with it the profile
    /// resolves splitk='auto' for shapes outside the table.
    #[arg(long)]
    pub envelope: Option<PathBuf>,
    /// The GPU as `mmaemu-record probe` printed it (JSON): its facts for a bundle without --table, checked against
    /// the table's platform otherwise.
    #[arg(long)]
    pub probe: Option<PathBuf>,
    /// The profile's name (default: --name).
    #[arg(long)]
    pub profile: Option<String>,
    /// The caller: torch._scaled_mm or transformer_engine.
    #[arg(long, default_value = "torch._scaled_mm")]
    pub caller: String,
    /// The cuBLASLt workspace of the profile, in bytes (torch 2.7.1: 1 MiB).
    #[arg(long, default_value_t = 1 << 20)]
    pub workspace: u64,
    /// Recordings of this GPU that validate the bundle (copied into it).
    #[arg(long, num_args = 1..)]
    pub recordings: Vec<PathBuf>,
    /// The new bundle's directory (must not exist unless --replace).
    #[arg(long)]
    pub out: PathBuf,
    /// Supersede the bundle at --out (a rebuilt bundle keeps its profile name and its place): the new bundle is
    /// written and loaded first, then swapped in.
    #[arg(long)]
    pub replace: bool,
}

/// Run `mmaemu platform ...`.
pub fn run(command: PlatformCommand) -> CommandResult {
    match command {
        PlatformCommand::Build(a) => {
            let a = *a;
            let spec = BuildSpec {
                name: a.name.clone(),
                table: a.table,
                preset: a.preset,
                rules: a.rules,
                envelope: a.envelope,
                probe: a.probe,
                profile: a.profile.unwrap_or(a.name),
                caller: a.caller,
                workspace: a.workspace,
                recordings: a.recordings,
            };
            let build = if a.replace { replace_platform } else { build_platform };
            let platform = build(&spec, &a.out).map_err(CommandError::bad_input)?;
            println!(
                "wrote {} (platform {}, profiles {}); check it with `mmaemu platform check {}`",
                a.out.display(),
                platform.name,
                platform.profiles.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
                a.out.display()
            );
            print_unknown_layouts(&a.out, &platform)?;
            Ok(Exit::Success)
        }
        PlatformCommand::Check { json, dir } => {
            if let Some(platform) = mmaemu_datasets::platform::builtin_bundle(&dir).map_err(CommandError::bad_input)? {
                return check_builtin(json, &dir, &platform);
            }
            let platform = mmaemu_api::register_platform(&dir).map_err(CommandError::bad_input)?;
            let recordings: Vec<PathBuf> =
                platform.files.keys().filter(|f| platform.is_recording(f)).map(|f| dir.join(f)).collect();
            if !json {
                println!(
                    "platform {}: {} - preset {}, profiles {}, {} recording file(s)",
                    platform.name,
                    platform.description,
                    platform.preset.name(),
                    platform.profiles.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
                    recordings.len()
                );
            }
            if recordings.is_empty() {
                if !json {
                    println!("no recordings in the bundle: every feature of its profiles is experimental");
                }
                return Ok(Exit::Success);
            }
            // The bundle's recordings replay under its own profiles, whatever profile names they were recorded with.
            let under = mmaemu_harness::Under::bundle_profiles(&dir, platform.profiles.clone());
            super::replay::run(json, &recordings, super::replay::Scope::Check, "reference", false, &under)
        }
    }
}

/// Say which customOptions the bundle's table splits with an unknown layout: its profile refuses those splits.
fn print_unknown_layouts(dir: &Path, platform: &mmaemu_api::model::Platform) -> Result<(), CommandError> {
    for (custom, rows) in unknown_layouts(dir, platform).map_err(CommandError::bad_input)? {
        println!(
            "customOption {custom}: its split layout is unknown ({rows} split table rows), so the profile refuses \
             those splits; record split calls of it and rebuild with the rules `mmaemu fit splitk --json` fits \
             (docs/bring-up.md)"
        );
    }
    Ok(())
}

/// `platform check` of one of the library's own bundles: they state the maturity docs/reference.md §6.1 gives them,
/// established by recordings of which the repository ships part (`datasets/recordings`, beside `datasets/platforms`);
/// the shipped ones replay, and the status table sets each profile's stated maturity beside what they show.
fn check_builtin(json: bool, dir: &std::path::Path, platform: &mmaemu_api::model::Platform) -> CommandResult {
    let recordings = dir.join("../../recordings");
    if !json {
        println!(
            "platform {}: one of the library's own bundles (its manifest and files are the shipped ones), profiles {}; \
             its stated maturity against the shipped recordings ({}):",
            platform.name,
            platform.profiles.iter().map(|p| format!("{} {}", p.name, p.maturity.name())).collect::<Vec<_>>().join(", "),
            recordings.display()
        );
    }
    if !recordings.is_dir() {
        if !json {
            println!("no shipped recordings beside it: nothing to replay");
        }
        return Ok(Exit::Success);
    }
    let under = mmaemu_harness::Under::own();
    super::replay::run(json, &[recordings], super::replay::Scope::StatusOnly, "reference", false, &under)
}

/// `--profile NAME|PATH[#NAME]`, clap's value parser wherever a profile is looked up: a bundle's profile is loaded,
/// its platform joins the process's catalogue, and the value becomes the profile's name; any other value is a name,
/// looked up when the command runs. A bad bundle is a usage error naming the flag (exit 2).
pub fn profile_value(value: &str) -> Result<String, String> {
    if !mmaemu_api::is_bundle_arg(value) {
        return Ok(value.to_string());
    }
    let profile = mmaemu_api::load_profile(value).map_err(|e| e.to_string())?;
    let dir = value.split('#').next().unwrap_or(value);
    mmaemu_api::register_platform(Path::new(dir)).map_err(|e| e.to_string())?;
    Ok(profile.name)
}

/// `--platform DIR`, clap's value parser: the bundle joins the process's catalogue.
pub fn platform_value(value: &str) -> Result<PathBuf, String> {
    mmaemu_api::register_platform(Path::new(value)).map_err(|e| e.to_string())?;
    Ok(PathBuf::from(value))
}

/// The bundles `MMAEMU_PLATFORMS` names, joined to the process's catalogue before the arguments are parsed (so that
/// `--profile PATH` clashes with them as with any loaded bundle). The error is kept for the commands, so that
/// `--help` and `--version` still answer.
pub fn register_env() -> Result<(), CommandError> {
    mmaemu_api::register_env_platforms()
        .map(|_| ())
        .map_err(|e| CommandError::bad_input(format!("{PLATFORMS_ENV}: {e}")))
}
