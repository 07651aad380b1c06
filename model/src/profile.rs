//! Profiles (docs/reference.md §6.1): one platform and caller — the preset, the GPU, cuBLASLt, the workspace, the
//! split-K table, the profile's cuBLAS rejections and its maturity. A `Catalogue` finds them by name.

use crate::epilogue::OutDtype;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::plan::{Scheme, SplitK};
use crate::preset::{Maturity, Preset};
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
    /// The schemes its GPU's split kernels use (its table's customOptions', or its manifest's `[splitk] schemes`),
    /// sorted; empty: its split-K layouts are not characterised.
    pub schemes: Vec<Scheme>,
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

impl Profile {
    /// Whether the profile's GPU splits K as `split` says (docs/reference.md §3.4, §6.6), in this order: no split-K
    /// layout characterised → UnsupportedFeatureError (slow accumulation without a slow chunk first); a documented
    /// scheme that is not one of its kernels' → invalid value; a contiguous split leaving a split without k-tiles →
    /// invalid value. A split rule by name is the data's claim, planned as given.
    pub fn check_split(&self, split: SplitK, fast: bool, k: usize) -> Result<()> {
        let name = self.preset.name();
        if split.s() == 1 {
            return Ok(());
        }
        if self.schemes.is_empty() {
            if !fast && self.preset.slow_chunk().is_none() {
                return Err(Error::unsupported(format!(
                    "slow accumulation (use_fast_accum=False) is not characterised for preset '{name}'"
                )));
            }
            return Err(Error::unsupported(format!("split-K is not characterised for preset '{name}'")));
        }
        let documented = !matches!(split.scheme(), Scheme::Rule(_));
        if documented && !self.schemes.contains(&split.scheme()) {
            let allowed: Vec<_> = self.schemes.iter().map(|x| x.name()).collect();
            return Err(Error::invalid_value(format!(
                "scheme '{}' is not a split-K layout of preset '{name}': its cuBLASLt kernels split as {}",
                split.scheme(),
                allowed.join(" or ")
            )));
        }
        // A contiguous split some split of which owns no k-tile was never recorded (§6.6).
        if let Some(why) = crate::splitk::resolve::empty_split(split.s(), split.scheme(), k) {
            return Err(Error::invalid_value(why));
        }
        Ok(())
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
