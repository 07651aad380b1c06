//! Presets (docs/reference.md §2.1): the parameters of one tensor-core arithmetic — block size, fraction bits,
//! minimum exponent, how the block result is rounded, how the accumulator enters the block, optional block scales,
//! the slow-accumulation chunk — and their maturity; validated user-defined presets. The built-in presets are
//! documents (datasets/presets) read by the same reader as a lab's (`preset_document.rs`).

use crate::error::{Error, Result};
use std::fmt;

/// How the running accumulator c enters a block step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CEntry {
    /// c takes part in the block maximum and is aligned and truncated with the products (ada, hopper).
    Early,
    /// c is added after the block sum with an fp32 round-to-nearest-even addition (b200_mma_sync).
    Late,
}

impl CEntry {
    /// `early`, `late`: its name in preset documents and reports.
    pub fn name(self) -> &'static str {
        match self {
            CEntry::Early => "early",
            CEntry::Late => "late",
        }
    }
    /// The entry of a name ([`CEntry::name`]).
    pub fn from_name(s: &str) -> Option<CEntry> {
        [CEntry::Early, CEntry::Late].into_iter().find(|c| c.name() == s)
    }
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

/// The encoding of a preset's block scales (docs/reference.md §2.8, §12.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ScaleFormat {
    /// `ue8m0`: a power of two 2^(code - 127), 0xFF NaN (MXFP8, MXFP4).
    #[default]
    Ue8m0,
    /// `ue4m3`: an e4m3 code read without its sign bit, 0x7F NaN (NVFP4).
    Ue4m3,
}

impl ScaleFormat {
    /// `ue8m0`, `ue4m3`: its name in preset documents.
    pub fn name(self) -> &'static str {
        match self {
            ScaleFormat::Ue8m0 => "ue8m0",
            ScaleFormat::Ue4m3 => "ue4m3",
        }
    }
    /// The format of a name ([`ScaleFormat::name`]).
    pub fn from_name(s: &str) -> Option<ScaleFormat> {
        [ScaleFormat::Ue8m0, ScaleFormat::Ue4m3].into_iter().find(|f| f.name() == s)
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
    /// The encoding of the block scales (default ue8m0).
    pub scale_format: ScaleFormat,
    /// Products summed exactly per group of the group-scaled step (docs/reference.md §12.2: e2m1 operands,
    /// `tcgen05.mma kind::mxf4nvf4`), or None for the FP8 block step.
    pub group: Option<u32>,
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
            scale_format: ScaleFormat::Ue8m0,
            group: None,
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

    /// The same parameters as a group-scaled step (docs/reference.md §12.2): `group` products summed exactly per
    /// group, scales of `scale_format` (None: the FP8 block step, e8m0 scales).
    pub fn with_group_scale(self, group: Option<u32>, scale_format: ScaleFormat) -> PresetSpec {
        PresetSpec { group, scale_format, ..self }
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
    /// Why the preset is experimental (its document's `[builtin] note`, or that of the built-in preset whose
    /// arithmetic it shares).
    note: Option<String>,
    /// Whether it is one of the library's own preset documents (datasets/presets).
    builtin: bool,
}

/// Where a GPU without a preset or profile is brought up.
pub const BRING_UP: &str =
    "docs/bring-up.md (record the GPU with mmaemu-record, fit its split-K rules, build and check a platform bundle)";

/// The lowest exponent sum of two nonzero FP8 codes: e5m2's subnormals read as exponent −14 (e4m3's as −6).
pub const LOWEST_PRODUCT_EXP: i32 = -28;

impl Preset {
    /// The built-in preset `name` (or alias), from its document in datasets/presets; None for other names.
    pub fn builtin(name: &str) -> Option<Preset> {
        crate::catalogue::builtin_presets()
            .iter()
            .find(|b| b.preset.name() == name || b.is_alias(name))
            .map(|b| b.preset.clone())
    }

    fn named_builtin(name: &str) -> Preset {
        Preset::builtin(name).unwrap_or_else(|| unreachable!("datasets/presets holds {name}.toml"))
    }

    /// The `ada` preset: 16-product blocks, 13/13 fraction bits, c early, validated.
    pub fn ada() -> Preset {
        Preset::named_builtin("ada")
    }
    /// The `hopper` preset: 32-product blocks, 13/13 fraction bits, c early, validated.
    pub fn hopper() -> Preset {
        Preset::named_builtin("hopper")
    }
    /// The `b200_mma_sync` preset (alias `blackwell`): 32-product blocks, 25/23 bits, c late, experimental.
    pub fn b200_mma_sync() -> Preset {
        Preset::named_builtin("b200_mma_sync")
    }
    /// The `b200_tcgen05` preset: 32-product blocks, 25/23 bits truncated, c early, e8m0 scales per 32,
    /// experimental (MMA-Sim's model of sm_100 tcgen05.mma kind::f8f6f4).
    pub fn b200_tcgen05() -> Preset {
        Preset::named_builtin("b200_tcgen05")
    }
    /// The `rtx50_mma_sync` preset: the arithmetic of `b200_tcgen05`, experimental (MMA-Sim's model of sm_120
    /// mma.sync m16n8k32).
    pub fn rtx50_mma_sync() -> Preset {
        Preset::named_builtin("rtx50_mma_sync")
    }

    /// A preset of the library's own documents (datasets/presets), with its declared maturity and note.
    pub(crate) fn from_builtin_spec(spec: PresetSpec, note: Option<String>) -> Result<Preset> {
        let p = Preset::custom(spec)?;
        Ok(Preset { note, builtin: true, ..p })
    }

    /// A user-defined preset, validated (docs/reference.md §2.1): nfma >= 1, slow_chunk None or >= 1,
    /// 1 <= frac <= 40, 1 <= frac_out <= 23, -1000 <= min_exp <= 1000; nearest-even rounding only with
    /// frac_out = 23; a scale block only equal to nfma,
    /// or, with a group, a multiple of the group that divides nfma; a ue4m3 scale format only with a group. Violations are invalid-value errors.
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
        if let Some(g) = spec.group {
            let ok = g >= 1
                && spec.scale_block.is_some_and(|s| s >= g && s.is_multiple_of(g) && spec.nfma.is_multiple_of(s));
            if !ok {
                return Err(Error::invalid_value(format!(
                    "preset '{}': group = {g} needs a scale_block that is a multiple of it and divides nfma ({})",
                    spec.name, spec.nfma
                )));
            }
            // The group-scaled step (docs/reference.md §12.2) counts c in its block exponent: it has no late form.
            if spec.c_entry == CEntry::Late {
                return Err(Error::invalid_value(format!(
                    "preset '{}': the group-scaled step (group = {g}) takes c early; c_entry = 'late' is outside it",
                    spec.name
                )));
            }
        } else if spec.scale_format != ScaleFormat::Ue8m0 {
            return Err(Error::invalid_value(format!(
                "preset '{}': scale_format '{}' needs the group-scaled step (a 'group'); the FP8 block step takes \
                 ue8m0 scales",
                spec.name,
                spec.scale_format.name()
            )));
        } else if let Some(s) = spec.scale_block {
            if s != spec.nfma {
                return Err(Error::invalid_value(format!(
                    "preset '{}': scale_block must equal nfma ({}), got {s}",
                    spec.name, spec.nfma
                )));
            }
        }
        Ok(Preset { spec, note: None, builtin: false })
    }

    /// The sorted canonical names of the built-in presets (datasets/presets).
    pub fn list() -> Vec<&'static str> {
        let mut names: Vec<&'static str> =
            crate::catalogue::builtin_presets().iter().map(|b| b.preset.name()).collect();
        names.sort_unstable();
        names
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
    /// Whether a block of zero products leaves every accumulator of a chain from +0 unchanged (docs/reference.md
    /// §2.4): a late c (the block result is +0, and c + 0 = c, as c is never −0), or an early c with frac ≥ frac_out
    /// (c has at most frac_out + 1 significant bits, so aligning it to its own exponent is exact) and min_exp at or
    /// below [`LOWEST_PRODUCT_EXP`] − frac (the lowest exponent of a nonzero accumulator, so the block's exponent is
    /// c's own). True for the built-in presets.
    pub fn zero_block_is_identity(&self) -> bool {
        let (frac, frac_out) = (self.frac() as i32, self.frac_out().min(23) as i32);
        self.c_entry() == CEntry::Late || (frac >= frac_out && self.min_exp() <= LOWEST_PRODUCT_EXP - frac)
    }
    /// Elements per e8m0 block scale, if the preset takes block scales.
    pub fn scale_block(&self) -> Option<usize> {
        self.spec.scale_block.map(|s| s as usize)
    }
    /// The encoding of the block scales.
    pub fn scale_format(&self) -> ScaleFormat {
        self.spec.scale_format
    }
    /// The exact-sum group of the group-scaled step (docs/reference.md §12.2), None for the FP8 block step.
    pub fn group(&self) -> Option<usize> {
        self.spec.group.map(|g| g as usize)
    }
    /// Slow-accumulation chunk length.
    pub fn slow_chunk(&self) -> Option<usize> {
        self.spec.slow_chunk.map(|c| c as usize)
    }
    /// How far hardware recordings back the preset (validated, experimental, custom).
    pub fn maturity(&self) -> Maturity {
        self.spec.maturity
    }
    /// Whether this is one of the library's own presets (a document of datasets/presets).
    pub fn is_builtin(&self) -> bool {
        self.builtin
    }
    /// The parameters.
    pub fn spec(&self) -> &PresetSpec {
        &self.spec
    }

    /// Why an experimental preset is experimental (the text of its warning), None for the others.
    pub fn maturity_note(&self) -> Option<String> {
        let name = self.name();
        match (self.maturity(), &self.note) {
            (Maturity::Experimental, Some(note)) => Some(format!("preset '{name}' is experimental: {note}")),
            (Maturity::Experimental, None) => Some(format!("preset '{name}' is experimental")),
            (Maturity::Custom, _) => {
                Some(format!("preset '{name}' is custom (not validated): no hardware recording backs it"))
            }
            (Maturity::Validated, _) => None,
        }
    }

    /// The same preset with another name and maturity, keeping a built-in preset's note (a user's document with
    /// a built-in arithmetic).
    pub(crate) fn renamed(&self, spec: PresetSpec) -> Preset {
        Preset { spec, note: self.note.clone(), builtin: false }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
