//! Presets (docs/reference.md §2.1): the parameters of one tensor-core arithmetic — block size, fraction bits,
//! minimum exponent, how the block result is rounded, how the accumulator enters the block, optional block scales,
//! the slow-accumulation chunk — and their maturity. The built-in presets, their alias, the refused names, and
//! validated user-defined presets.

use crate::error::{Error, Result};
use crate::plan::Scheme;
use std::fmt;

/// How the running accumulator c enters a block step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CEntry {
    /// c takes part in the block maximum and is aligned and truncated with the products (ada, hopper).
    Early,
    /// c is added after the block sum with an fp32 round-to-nearest-even addition (b200_mma_sync).
    Late,
}

/// How a block step rounds its exact sum to the block result (docs/reference.md §2.2 step 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockRounding {
    /// Toward zero, to `frac_out` fraction bits below the leading bit, the leading bit taken at least at 2^-126
    /// (fp32 subnormals): ada and hopper keep 13 bits; `frac_out = 23` is fp32 round-toward-zero.
    Truncate,
    /// Round to nearest, ties to even, to fp32 (with subnormals; `frac_out` must be 23).
    NearestEven,
}

impl BlockRounding {
    /// `truncate`, `nearest_even`.
    pub fn name(self) -> &'static str {
        match self {
            BlockRounding::Truncate => "truncate",
            BlockRounding::NearestEven => "nearest_even",
        }
    }
}

/// How far hardware recordings establish a preset or profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Maturity {
    /// Reproduced bit for bit by hardware recordings of the reference GPU.
    Validated,
    /// Not (fully) established by hardware: every use warns.
    Experimental,
    /// A user-defined preset.
    Custom,
}

impl Maturity {
    /// `validated`, `experimental`, `custom`.
    pub fn name(self) -> &'static str {
        match self {
            Maturity::Validated => "validated",
            Maturity::Experimental => "experimental",
            Maturity::Custom => "custom",
        }
    }
}

/// Which of the library's own presets a value is; user-defined presets have none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `ada`: RTX 4060 (sm_89) FP8 mma.sync.
    Ada,
    /// `hopper`: the H100 PCIe's cuBLAS FP8 GEMMs (sm_90 nvjet kernels).
    Hopper,
    /// `b200_mma_sync`: mma.sync compiled for sm_90/sm_100 into HMMA + fp32 add.
    B200MmaSync,
    /// `b200_tcgen05`: sm_100 (B200, GB200) `tcgen05.mma` kind::f8f6f4, after MMA-Sim; no recordings of ours.
    B200Tcgen05,
    /// `rtx50_mma_sync`: sm_120 (RTX 50) `mma.sync` m16n8k32 and kind::f8f6f4, after MMA-Sim; no recordings of ours.
    Rtx50MmaSync,
}

/// The parameters of a user-defined preset (see [`Preset::custom`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresetSpec {
    /// Name used in messages and warnings.
    pub name: String,
    /// Products per block (nfma >= 1).
    pub nfma: u32,
    /// Fraction bits of the aligned terms (1..=40).
    pub frac: u32,
    /// Fraction bits of the block result (1..=23).
    pub frac_out: u32,
    /// Floor of the block exponent.
    pub min_exp: i32,
    /// Early or late accumulator.
    pub c_entry: CEntry,
    /// How the block result is rounded.
    pub rounding: BlockRounding,
    /// Elements per e8m0 block scale of A and of B (MXFP8: 32), equal to nfma, or None if the preset takes no
    /// block scales.
    pub scale_block: Option<u32>,
    /// Slow-accumulation chunk length, or None if slow accumulation is not characterised.
    pub slow_chunk: Option<u32>,
    /// Maturity (default for user presets: custom).
    pub maturity: Maturity,
}

impl PresetSpec {
    /// The parameters of a user-defined preset (maturity custom), in the fields' order; [`Preset::custom`]
    /// checks them.
    pub fn custom(
        name: &str,
        nfma: u32,
        frac: u32,
        frac_out: u32,
        min_exp: i32,
        c_entry: CEntry,
        slow_chunk: Option<u32>,
    ) -> PresetSpec {
        PresetSpec {
            name: name.into(),
            nfma,
            frac,
            frac_out,
            min_exp,
            c_entry,
            rounding: BlockRounding::Truncate,
            scale_block: None,
            slow_chunk,
            maturity: Maturity::Custom,
        }
    }

    /// The same parameters with the block result rounded by `rounding`.
    pub fn with_rounding(self, rounding: BlockRounding) -> PresetSpec {
        PresetSpec { rounding, ..self }
    }

    /// The same parameters taking e8m0 block scales per `scale_block` elements (None: none).
    pub fn with_scale_block(self, scale_block: Option<u32>) -> PresetSpec {
        PresetSpec { scale_block, ..self }
    }

    /// Whether two parameter sets compute the same arithmetic (every field but the name and maturity).
    pub fn same_arithmetic(&self, other: &PresetSpec) -> bool {
        PresetSpec { name: String::new(), maturity: Maturity::Custom, ..self.clone() }
            == PresetSpec { name: String::new(), maturity: Maturity::Custom, ..other.clone() }
    }
}

/// An immutable tensor-core arithmetic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preset {
    spec: PresetSpec,
    builtin: Option<Builtin>,
}

/// Names refused with a pointer to the bring-up guide (compared case-insensitively).
const SM120_NAMES: [&str; 6] = ["sm_120", "sm120", "rtx_blackwell", "rtx-blackwell", "rtx5070ti", "rtx_5070_ti"];

/// Where a GPU without a preset or profile is brought up.
pub const BRING_UP: &str =
    "docs/bring-up.md (record the GPU with mmaemu-record, fit its split-K rules, build and check a platform bundle)";

impl Preset {
    fn builtin(b: Builtin) -> Preset {
        // ada and hopper differ only in the block size (docs/reference.md §2.1).
        let ada = PresetSpec {
            name: "ada".into(),
            nfma: 16,
            frac: 13,
            frac_out: 13,
            min_exp: -132,
            c_entry: CEntry::Early,
            rounding: BlockRounding::Truncate,
            scale_block: None,
            slow_chunk: Some(128),
            maturity: Maturity::Validated,
        };
        let spec = match b {
            Builtin::Ada => ada,
            Builtin::Hopper => PresetSpec { name: "hopper".into(), nfma: 32, ..ada },
            Builtin::B200MmaSync => PresetSpec {
                name: "b200_mma_sync".into(),
                nfma: 32,
                frac: 25,
                frac_out: 23,
                min_exp: -133,
                c_entry: CEntry::Late,
                rounding: BlockRounding::Truncate,
                scale_block: None,
                slow_chunk: None,
                maturity: Maturity::Experimental,
            },
            // MMA-Sim's sm_100 tcgen05.mma and sm_120 mma.sync FP8 models: one arithmetic (docs/reference.md §2.1).
            Builtin::B200Tcgen05 | Builtin::Rtx50MmaSync => PresetSpec {
                name: if b == Builtin::B200Tcgen05 { "b200_tcgen05" } else { "rtx50_mma_sync" }.into(),
                nfma: 32,
                frac: 25,
                frac_out: 23,
                min_exp: -133,
                c_entry: CEntry::Early,
                rounding: BlockRounding::Truncate,
                scale_block: Some(32),
                slow_chunk: None,
                maturity: Maturity::Experimental,
            },
        };
        Preset { spec, builtin: Some(b) }
    }

    /// The `ada` preset: 16-product blocks, 13/13 fraction bits, c early, validated.
    pub fn ada() -> Preset {
        Preset::builtin(Builtin::Ada)
    }
    /// The `hopper` preset: 32-product blocks, 13/13 fraction bits, c early, validated.
    pub fn hopper() -> Preset {
        Preset::builtin(Builtin::Hopper)
    }
    /// The `b200_mma_sync` preset (alias `blackwell`): 32-product blocks, 25/23 bits, c late, experimental.
    pub fn b200_mma_sync() -> Preset {
        Preset::builtin(Builtin::B200MmaSync)
    }

    /// The `b200_tcgen05` preset: 32-product blocks, 25/23 bits truncated, c early, e8m0 scales per 32,
    /// experimental (MMA-Sim's model of sm_100 tcgen05.mma kind::f8f6f4).
    pub fn b200_tcgen05() -> Preset {
        Preset::builtin(Builtin::B200Tcgen05)
    }
    /// The `rtx50_mma_sync` preset: the arithmetic of `b200_tcgen05`, experimental (MMA-Sim's model of sm_120
    /// mma.sync m16n8k32).
    pub fn rtx50_mma_sync() -> Preset {
        Preset::builtin(Builtin::Rtx50MmaSync)
    }

    /// The preset of a built-in kind.
    pub fn of_builtin(b: Builtin) -> Preset {
        Preset::builtin(b)
    }

    /// Every built-in kind, in the order of [`Preset::list`].
    pub const BUILTINS: [Builtin; 5] =
        [Builtin::Ada, Builtin::B200MmaSync, Builtin::B200Tcgen05, Builtin::Hopper, Builtin::Rtx50MmaSync];

    /// A user-defined preset, validated (docs/reference.md §2.1): nfma >= 1, slow_chunk None or >= 1,
    /// 1 <= frac <= 40, 1 <= frac_out <= 23, -1000 <= min_exp <= 1000; nearest-even rounding only with
    /// frac_out = 23; a scale block only equal to nfma. Violations are invalid-value errors.
    pub fn custom(spec: PresetSpec) -> Result<Preset> {
        if spec.nfma < 1 {
            return Err(Error::invalid_value(format!("preset '{}': nfma must be >= 1, got {}", spec.name, spec.nfma)));
        }
        if spec.slow_chunk == Some(0) {
            return Err(Error::invalid_value(format!(
                "preset '{}': slow_chunk must be None or a positive integer, got 0",
                spec.name
            )));
        }
        if !(1..=40).contains(&spec.frac) {
            return Err(Error::invalid_value(format!(
                "preset '{}': frac must be in 1..=40, got {}",
                spec.name, spec.frac
            )));
        }
        if !(1..=23).contains(&spec.frac_out) {
            return Err(Error::invalid_value(format!(
                "preset '{}': frac_out must be in 1..=23, got {}",
                spec.name, spec.frac_out
            )));
        }
        if !(-1000..=1000).contains(&spec.min_exp) {
            return Err(Error::invalid_value(format!(
                "preset '{}': min_exp must be in -1000..=1000, got {}",
                spec.name, spec.min_exp
            )));
        }
        if spec.rounding == BlockRounding::NearestEven && spec.frac_out != 23 {
            return Err(Error::invalid_value(format!(
                "preset '{}': nearest_even rounding is to fp32 and needs frac_out = 23, got {}",
                spec.name, spec.frac_out
            )));
        }
        if let Some(s) = spec.scale_block {
            if s != spec.nfma {
                return Err(Error::invalid_value(format!(
                    "preset '{}': scale_block must equal nfma ({}), got {s}",
                    spec.name, spec.nfma
                )));
            }
        }
        Ok(Preset { spec, builtin: None })
    }

    /// Look a preset up by name (docs/reference.md §2.1): `ada`, `hopper`, `b200_mma_sync`, `b200_tcgen05`,
    /// `rtx50_mma_sync`, the alias `blackwell`, then the presets of the platform bundles loaded in this process
    /// (docs/platform-format.md). The sm_120 names are refused with a pointer to the bring-up guide.
    pub fn by_name(name: &str) -> Result<Preset> {
        match name {
            "ada" => return Ok(Preset::ada()),
            "hopper" => return Ok(Preset::hopper()),
            "b200_mma_sync" | "blackwell" => return Ok(Preset::b200_mma_sync()),
            "b200_tcgen05" => return Ok(Preset::b200_tcgen05()),
            "rtx50_mma_sync" => return Ok(Preset::rtx50_mma_sync()),
            _ => {}
        }
        if let Some(p) = crate::platform::Platform::find(|p| (p.preset.name() == name).then(|| p.preset.clone()))? {
            return Ok(p);
        }
        if SM120_NAMES.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return Err(Error::unknown_name(format!(
                "unknown preset '{name}': sm_120 GPUs (RTX 50 series) have no validated preset (the experimental \
                 'rtx50_mma_sync' follows MMA-Sim); see {BRING_UP}"
            )));
        }
        Err(Error::unknown_name(format!(
            "unknown preset '{name}'; known: ['ada', 'b200_mma_sync', 'b200_tcgen05', 'hopper', 'rtx50_mma_sync'] \
             (alias: 'blackwell')"
        )))
    }

    /// The sorted canonical names of the built-in presets.
    pub fn list() -> [&'static str; 5] {
        ["ada", "b200_mma_sync", "b200_tcgen05", "hopper", "rtx50_mma_sync"]
    }

    /// The preset's name (`ada`, `hopper`, `b200_mma_sync`, or the user's).
    pub fn name(&self) -> &str {
        &self.spec.name
    }
    /// Products per block.
    pub fn nfma(&self) -> usize {
        self.spec.nfma as usize
    }
    /// Fraction bits of the aligned terms.
    pub fn frac(&self) -> u32 {
        self.spec.frac
    }
    /// Fraction bits of the block result.
    pub fn frac_out(&self) -> u32 {
        self.spec.frac_out
    }
    /// Floor of the block exponent.
    pub fn min_exp(&self) -> i32 {
        self.spec.min_exp
    }
    /// How c enters.
    pub fn c_entry(&self) -> CEntry {
        self.spec.c_entry
    }
    /// How the block result is rounded.
    pub fn rounding(&self) -> BlockRounding {
        self.spec.rounding
    }
    /// Elements per e8m0 block scale, if the preset takes block scales.
    pub fn scale_block(&self) -> Option<usize> {
        self.spec.scale_block.map(|s| s as usize)
    }
    /// Slow-accumulation chunk length.
    pub fn slow_chunk(&self) -> Option<usize> {
        self.spec.slow_chunk.map(|c| c as usize)
    }
    /// How far hardware recordings back the preset (validated, experimental, custom).
    pub fn maturity(&self) -> Maturity {
        self.spec.maturity
    }
    /// Which built-in preset this is, if any.
    pub fn builtin_kind(&self) -> Option<Builtin> {
        self.builtin
    }
    /// The parameters.
    pub fn spec(&self) -> &PresetSpec {
        &self.spec
    }

    /// Why an experimental preset is experimental (the text of its warning), None for the others.
    pub fn maturity_note(&self) -> Option<String> {
        let name = self.name();
        match (self.maturity(), self.builtin) {
            (Maturity::Experimental, Some(Builtin::B200Tcgen05 | Builtin::Rtx50MmaSync)) => Some(format!(
                "preset '{name}' is experimental: its parameters are MMA-Sim's published model (microsoft/MMA-Sim), \
                 not our own recordings, which do not exist for this GPU yet (split-K decisions unknown)"
            )),
            (Maturity::Experimental, _) => Some(format!(
                "preset '{name}' is experimental: it fits the toolbox's vectors only; NOT a model of sm_120, NOT B200 \
                 cuBLAS (slow accumulation and split-K raise)"
            )),
            (Maturity::Custom, _) => {
                Some(format!("preset '{name}' is custom (not validated): no hardware recording backs it"))
            }
            (Maturity::Validated, _) => None,
        }
    }

    /// The split schemes this preset's kernels use: ada {serial, pairwise}; hopper {contiguous};
    /// b200_mma_sync, b200_tcgen05, rtx50_mma_sync none; user-defined presets accept every scheme.
    pub fn allowed_schemes(&self) -> &'static [Scheme] {
        match self.builtin {
            Some(Builtin::Ada) => &[Scheme::Serial, Scheme::Pairwise],
            Some(Builtin::Hopper) => &[Scheme::Contiguous],
            Some(Builtin::B200MmaSync | Builtin::B200Tcgen05 | Builtin::Rtx50MmaSync) => &[],
            None => &[Scheme::Serial, Scheme::Pairwise, Scheme::Contiguous],
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
