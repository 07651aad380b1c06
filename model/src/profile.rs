//! Profiles (docs/reference.md §6.1): one reference platform and caller — the preset, the GPU, cuBLASLt, the
//! workspace, the split-K table, the profile's cuBLAS rejections and its maturity — and their lookup.

use crate::epilogue::OutDtype;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::preset::{Maturity, Preset, SM120_RUNBOOK};
use std::fmt;

/// The recorded split-K tables a profile can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableId {
    /// `heur_rtx4060_lt12.8.3.14`: tables/rtx4060-cublaslt-12.8.3.14.parquet.
    Rtx4060,
    /// `heur_h100pcie_lt12.8.3.14`: tables/h100pcie-cublaslt-12.8.3.14.parquet.
    H100Pcie,
}

impl TableId {
    /// The table_id string reported in split decisions.
    pub fn id(self) -> &'static str {
        match self {
            TableId::Rtx4060 => "heur_rtx4060_lt12.8.3.14",
            TableId::H100Pcie => "heur_h100pcie_lt12.8.3.14",
        }
    }
    /// The table's file stem under datasets/tables.
    pub fn file_stem(self) -> &'static str {
        match self {
            TableId::Rtx4060 => "rtx4060-cublaslt-12.8.3.14",
            TableId::H100Pcie => "h100pcie-cublaslt-12.8.3.14",
        }
    }
}

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
    pub splitk_table: Option<TableId>,
    /// The profile's cuBLAS rejections.
    pub rejects: Vec<RejectRule>,
    /// Maturity of the profile.
    pub maturity: Maturity,
    /// Maturity of its split-K decisions (None: the profile has no split-K decisions).
    pub splitk_maturity: Option<Maturity>,
    /// Human description.
    pub description: String,
}

const MIB: u64 = 1 << 20;

/// The profile names, in the order `list_profiles` returns them.
pub const PROFILE_NAMES: [&str; 8] = [
    "ada",
    "ada-te",
    "ada-ws0",
    "hopper",
    "hopper-te",
    "hopper-ws0",
    "hopper-experimental",
    "b200-mma-sync-experimental",
];

/// The default profile.
pub const DEFAULT_PROFILE: &str = "hopper";

fn e4m3_to_e5m2_rule(gpu: &str) -> RejectRule {
    RejectRule {
        fmt_a: Some(Format::E4m3),
        fmt_b: Some(Format::E4m3),
        out: Some(OutDtype::E5m2),
        message: format!(
            "cuBLASLt 12.8.3 on {gpu} rejects e4m3 x e4m3 -> e5m2 output (CUBLAS_STATUS_NOT_SUPPORTED); mixed \
             e4m3/e5m2 inputs may produce e5m2"
        ),
    }
}

impl Profile {
    /// A built-in profile by name (docs/reference.md §6.1). Unknown names (the pre-release names included)
    /// are invalid-argument (unknown name) errors naming the known profiles and the ways to add a GPU.
    pub fn by_name(name: &str) -> Result<Profile> {
        // The two recorded platforms, each under cuBLASLt 12.8.3.14 and torch 2.7.1+cu128: preset, GPU name,
        // capability, SM count, split-K table, and the name the e4m3 x e4m3 -> e5m2 rejection gives the GPU.
        struct Gpu(Preset, &'static str, (u32, u32), u32, TableId, &'static str);
        let rtx4060 = Gpu(Preset::ada(), "NVIDIA GeForce RTX 4060", (8, 9), 24, TableId::Rtx4060, "sm_89");
        let h100 = Gpu(Preset::hopper(), "NVIDIA H100 PCIe", (9, 0), 114, TableId::H100Pcie, "the H100 (sm_90)");
        let recorded = |gpu: &Gpu, name: &str, caller, ws, align, splitk_maturity, description: &str| Profile {
            name: name.into(),
            preset: gpu.0.clone(),
            gpu_name: Some(gpu.1.into()),
            capability: gpu.2,
            sm_count: Some(gpu.3),
            cublaslt_version: Some("12.8.3.14".into()),
            caller,
            torch_version: Some("2.7.1+cu128".into()),
            workspace_bytes: Some(ws),
            align,
            splitk_table: Some(gpu.4),
            rejects: vec![e4m3_to_e5m2_rule(gpu.5)],
            maturity: Maturity::Validated,
            splitk_maturity: Some(splitk_maturity),
            description: description.into(),
        };
        let bare = |name: &str, preset: Preset, capability, description: &str| Profile {
            name: name.into(),
            preset,
            gpu_name: None,
            capability,
            sm_count: None,
            cublaslt_version: None,
            caller: Caller::TorchScaledMm,
            torch_version: None,
            workspace_bytes: None,
            align: None,
            splitk_table: None,
            rejects: vec![],
            maturity: Maturity::Experimental,
            splitk_maturity: None,
            description: description.into(),
        };
        use Caller::*;
        use Maturity::*;
        Ok(match name {
            "ada" => recorded(
                &rtx4060,
                name,
                TorchScaledMm,
                MIB,
                None,
                Validated,
                "RTX 4060 (sm_89), cuBLASLt 12.8.3.14, torch 2.7.1 torch._scaled_mm, 1 MiB workspace",
            ),
            "ada-te" => recorded(
                &rtx4060,
                name,
                TransformerEngine,
                4 * MIB,
                Some(256),
                Experimental,
                "RTX 4060 (sm_89), cuBLASLt 12.8.3.14, Transformer Engine 2.3, 4 MiB workspace",
            ),
            "ada-ws0" => recorded(
                &rtx4060,
                name,
                TorchScaledMm,
                0,
                None,
                Validated,
                "RTX 4060 (sm_89), cuBLASLt 12.8.3.14, torch._scaled_mm without a cuBLASLt workspace",
            ),
            "hopper" => recorded(
                &h100,
                name,
                TorchScaledMm,
                MIB,
                None,
                Validated,
                "H100 PCIe (sm_90), cuBLASLt 12.8.3.14, torch 2.7.1 torch._scaled_mm, 1 MiB workspace",
            ),
            "hopper-te" => recorded(
                &h100,
                name,
                TransformerEngine,
                32 * MIB,
                Some(256),
                Experimental,
                "H100 PCIe (sm_90), cuBLASLt 12.8.3.14, Transformer Engine 2.3, 32 MiB workspace",
            ),
            "hopper-ws0" => recorded(
                &h100,
                name,
                TorchScaledMm,
                0,
                None,
                Validated,
                "H100 PCIe (sm_90), cuBLASLt 12.8.3.14, torch._scaled_mm without a cuBLASLt workspace",
            ),
            "hopper-experimental" => bare(
                name,
                Preset::hopper(),
                (9, 0),
                "the hopper preset without a reference platform: no split-K table, no rejections",
            ),
            "b200-mma-sync-experimental" => bare(
                name,
                Preset::b200_mma_sync(),
                (10, 0),
                "the b200_mma_sync preset (mma.sync via HMMA on sm_90/sm_100); NOT a model of sm_120, NOT B200 cuBLAS",
            ),
            _ => {
                return Err(Error::unknown_name(format!(
                    "unknown profile '{name}'; known: {}. A GPU without a profile needs a recorded table: see \
                     mmaemu-record (the recorder) and {SM120_RUNBOOK}",
                    PROFILE_NAMES.join(", ")
                )))
            }
        })
    }

    /// All built-in profiles, in the order of §6.1.
    pub fn list() -> Vec<Profile> {
        PROFILE_NAMES.iter().filter_map(|n| Profile::by_name(n).ok()).collect()
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
