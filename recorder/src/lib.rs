//! mmaemu-recorder: `mmaemu-record`, which captures FP8 GEMM sweeps from real cuBLASLt, called exactly as
//! torch 2.7.1's `torch._scaled_mm` calls it, into mmaemu recordings (`mmaemu-recording/1` Parquet), and
//! cuBLASLt heuristic grids into split-K tables (`mmaemu-splitk-table/1`).
//!
//! - [`descriptor`]: the cuBLASLt call as data (every attribute, why), pure and unit-tested; [`scaling`]: the
//!   scale recipes and their cuBLASLt scale modes;
//! - [`spec`]: sweep specs (TOML) and their cases;
//! - [`device`]: what the pipeline needs from a recording device; [`gpu`] (cudarc, dynamic loading) and [`sim`]
//!   (the simulated device: the mmaemu model);
//! - [`sweep`] and [`heuristics`]: the two pipelines, chunked, atomic and resumable ([`parts`]), told what
//!   to do by the same [`options::RunOptions`];
//! - [`dump`]: a raw dump for tools without Parquet (the split-K tables are written by
//!   `mmaemu_datasets::splitk_write`).
//!
//! The input generator lives in `mmaemu_datasets::inputs`, so any reader can regenerate operands that a
//! recording ships by reference.

pub mod caller;
pub mod descriptor;
pub mod device;
pub mod dump;
pub mod error;
pub mod geometry;
pub mod gpu;
pub mod heuristics;
pub mod operands;
pub mod options;
pub mod parts;
pub mod progress;
pub mod scaling;
pub mod sim;
pub mod spec;
pub mod sweep;
pub mod util;

pub use error::RecordError;

use device::Device;
use spec::{SpecKind, Sweep};
use std::path::Path;

/// Reads a spec for a command: a spec of the other kind is refused (exit code 2) with the command it is for.
pub fn load_spec_for(path: &Path, kind: SpecKind) -> Result<(Sweep, String), RecordError> {
    let (sweep, text) = load_spec(path)?;
    if sweep.kind() != kind {
        let other = match sweep.kind() {
            SpecKind::Sweep => "mmaemu-record sweep SPEC",
            SpecKind::Grid => "mmaemu-record heuristics --grid SPEC",
        };
        return Err(RecordError::spec(
            path,
            format!("it is a {} spec (kind = \"{}\"), for `{other}`", sweep.kind().name(), sweep.kind().name()),
        ));
    }
    Ok((sweep, text))
}

/// The profile the simulated device uses when neither the command line nor the spec names one.
pub const DEFAULT_SIM_PROFILE: &str = "hopper";

/// Reads and parses a spec file; returns the sweep and the file's text.
pub fn load_spec(path: &Path) -> Result<(Sweep, String), RecordError> {
    let bytes = std::fs::read(path).map_err(|e| RecordError::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|_| RecordError::spec(path, "the file is not UTF-8"))?;
    let sweep = Sweep::parse(&text, util::sha256_hex(text.as_bytes())).map_err(|e| RecordError::spec(path, e))?;
    Ok((sweep, text))
}

/// Which recording device a command opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The GPU with this ordinal.
    Gpu(usize),
    /// The simulated device of this profile.
    Simulated(String),
}

/// Opens the device. The GPU is probed first: without a driver or cuBLASLt this is a
/// [`RecordError::NoGpu`] (exit code 3), never a panic.
pub fn open_device(target: &Target, flaky_every: Option<u64>) -> Result<Box<dyn Device>, RecordError> {
    match target {
        Target::Gpu(ordinal) => Ok(Box::new(gpu::GpuDevice::open(*ordinal)?)),
        Target::Simulated(profile) => {
            let mut b = sim::SimDevice::new(profile)?;
            if let Some(n) = flaky_every {
                b = b.with_flaky_every(n);
            }
            Ok(Box::new(b))
        }
    }
}
