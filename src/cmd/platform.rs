//! `mmaemu platform build|check` and the command line's platform loading: `--platform DIR`, `MMAEMU_PLATFORMS` and
//! `--profile PATH[#NAME]` (docs/platform-format.md). Loading is the datasets crate's; this adapts it to arguments.

use super::{CommandError, CommandResult, Exit};
use clap::Subcommand;
use mmaemu_datasets::platform::{self as bundle, BuildSpec, PLATFORMS_ENV};
use std::ffi::OsString;
use std::path::PathBuf;

/// `mmaemu platform ...`.
#[derive(Subcommand)]
pub enum PlatformCommand {
    /// Write a platform bundle from a recorded split-K table (and its sidecar), a preset and recordings.
    Build(BuildArgs),
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
    /// The new bundle's directory (must not exist).
    #[arg(long)]
    pub out: PathBuf,
}

/// Run `mmaemu platform ...`.
pub fn run(command: PlatformCommand) -> CommandResult {
    match command {
        PlatformCommand::Build(a) => {
            let spec = BuildSpec {
                name: a.name.clone(),
                table: a.table,
                preset: a.preset,
                rules: a.rules,
                probe: a.probe,
                profile: a.profile.unwrap_or(a.name),
                caller: a.caller,
                workspace: a.workspace,
                recordings: a.recordings,
            };
            let platform = bundle::build_platform(&spec, &a.out).map_err(CommandError::bad_input)?;
            println!(
                "wrote {} (platform {}, profiles {}); check it with `mmaemu platform check {}`",
                a.out.display(),
                platform.name,
                platform.profiles.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
                a.out.display()
            );
            Ok(Exit::Success)
        }
        PlatformCommand::Check { json, dir } => {
            let platform = bundle::register_platform(&dir).map_err(CommandError::bad_input)?;
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
            let under = mmaemu_harness::Under::profiles(platform.profiles.clone());
            super::replay::run(json, &recordings, super::replay::Scope::StatusOnly, "reference", false, &under)
        }
    }
}

/// Register the bundles `MMAEMU_PLATFORMS` and `--platform` name, and turn every `--profile PATH[#NAME]` into the
/// name of the loaded profile, so that each command takes a bundle wherever it takes a profile name.
pub fn prepare(args: Vec<OsString>) -> Result<Vec<OsString>, CommandError> {
    bundle::register_env_platforms().map_err(|e| CommandError::bad_input(format!("{PLATFORMS_ENV}: {e}")))?;
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        let s = a.to_string_lossy().into_owned();
        let (flag, inline) = match s.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (s.clone(), None),
        };
        if flag != "--profile" && flag != "--platform" {
            out.push(a);
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => match it.next() {
                Some(v) => v.to_string_lossy().into_owned(),
                None => {
                    out.push(a);
                    continue;
                }
            },
        };
        if flag == "--platform" {
            bundle::register_platform(std::path::Path::new(&value))
                .map_err(|e| CommandError::bad_input(format!("--platform: {e}")))?;
            continue;
        }
        let value = if bundle::is_bundle_arg(&value) {
            let profile =
                bundle::load_profile(&value).map_err(|e| CommandError::bad_input(format!("--profile: {e}")))?;
            let dir = value.split('#').next().unwrap_or(&value);
            bundle::register_platform(std::path::Path::new(dir))
                .map_err(|e| CommandError::bad_input(format!("--profile: {e}")))?;
            profile.name
        } else {
            value
        };
        out.push(OsString::from("--profile"));
        out.push(OsString::from(value));
    }
    Ok(out)
}
