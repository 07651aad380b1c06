//! Profiles (docs/reference.md §6.1): one platform and caller — the preset, the GPU, cuBLASLt, the workspace, the
//! split-K table, the profile's cuBLAS rejections and its maturity — and their lookup among the known platforms.

use crate::epilogue::OutDtype;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::platform::Platform;
use crate::preset::{Maturity, Preset, BRING_UP};
use crate::splitk::Table;
use std::fmt;

/// A rejection rule of a profile's cuBLAS (docs/reference.md §5.2 step 6, §9.4): None fields match anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectRule {
    /// Format of A.
    pub fmt_a: Option<Format>,
    /// Format of B.
    pub fmt_b: Option<Format>,
    /// Out dtype.
    pub out: Option<OutDtype>,
    /// The message (the profile name is appended when raised).
    pub message: String,
}

impl RejectRule {
    /// Does the rule match (fa, fb, od)?
    pub fn matches(&self, fa: Format, fb: Format, od: OutDtype) -> bool {
        self.fmt_a.is_none_or(|f| f == fa) && self.fmt_b.is_none_or(|f| f == fb) && self.out.is_none_or(|o| o == od)
    }
}

/// Who calls cuBLASLt on the reference platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Caller {
    /// torch 2.7.1 `torch._scaled_mm` (1 MiB workspace).
    TorchScaledMm,
    /// Transformer Engine 2.3.
    TransformerEngine,
}

impl Caller {
    /// `torch._scaled_mm` or `transformer_engine`.
    pub fn name(self) -> &'static str {
        match self {
            Caller::TorchScaledMm => "torch._scaled_mm",
            Caller::TransformerEngine => "transformer_engine",
        }
    }
    /// Parse a caller's name.
    pub fn from_name(s: &str) -> Option<Caller> {
        [Caller::TorchScaledMm, Caller::TransformerEngine].into_iter().find(|c| c.name() == s)
    }
}

/// An immutable profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Name (`hopper`, `ada-te`, ...).
    pub name: String,
    /// The tensor-core arithmetic.
    pub preset: Preset,
    /// The GPU name as the driver reports it.
    pub gpu_name: Option<String>,
    /// Compute capability.
    pub capability: (u32, u32),
    /// SM count.
    pub sm_count: Option<u32>,
    /// cuBLASLt version.
    pub cublaslt_version: Option<String>,
    /// The caller.
    pub caller: Caller,
    /// torch version.
    pub torch_version: Option<String>,
    /// cuBLASLt workspace in bytes (None: no reference platform).
    pub workspace_bytes: Option<u64>,
    /// MIN_ALIGNMENT preference (Transformer Engine: 256), None for torch.
    pub align: Option<u32>,
    /// The split-K table.
    pub splitk_table: Option<Table>,
    /// The profile's cuBLAS rejections.
    pub rejects: Vec<RejectRule>,
    /// Maturity of the profile.
    pub maturity: Maturity,
    /// Maturity of its split-K decisions (None: the profile has no split-K decisions).
    pub splitk_maturity: Option<Maturity>,
    /// Human description.
    pub description: String,
}

/// The default profile.
pub const DEFAULT_PROFILE: &str = "hopper";

/// The names of the built-in profiles, in the order of docs/reference.md §6.1.
pub fn builtin_names() -> Vec<String> {
    Platform::builtins()
        .map(|ps| ps.iter().flat_map(|p| p.profiles.iter().map(|q| q.name.clone())).collect())
        .unwrap_or_default()
}

impl Profile {
    /// A profile by name (docs/reference.md §6.1): the built-in ones and those of the platforms loaded in this
    /// process. Unknown names are invalid-argument (unknown name) errors naming the known profiles and the way to
    /// add a GPU.
    pub fn by_name(name: &str) -> Result<Profile> {
        // Called on every call that names its profile: only the profile found is copied.
        if let Some(p) = Platform::find(|p| p.profiles.iter().find(|p| p.name == name).cloned())? {
            return Ok(p);
        }
        let known: Vec<String> = Platform::all()?.into_iter().flat_map(|p| p.profiles).map(|p| p.name).collect();
        Err(Error::unknown_name(format!(
            "unknown profile '{name}'; known: {}. A GPU without a profile is brought up as a platform bundle: see {BRING_UP}",
            known.join(", ")
        )))
    }

    /// All known profiles: the built-in ones in the order of §6.1, then those of loaded platforms.
    pub fn list() -> Vec<Profile> {
        Platform::all().map(|ps| ps.into_iter().flat_map(|p| p.profiles).collect()).unwrap_or_default()
    }

    /// The first rejection rule matching (fa, fb, od), if any.
    pub fn rejection(&self, fa: Format, fb: Format, od: OutDtype) -> Option<&RejectRule> {
        self.rejects.iter().find(|r| r.matches(fa, fb, od))
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}
