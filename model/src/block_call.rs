//! A block-scaled call described without its data (docs/reference.md §12.7, experimental): the scaling modes' names,
//! torch's checks of a block-scaled call in the order the Python layer applies them, the opt-in, and the kernel, plan
//! and sources `explain` names. `scaled_mm_v2`, replay and `explain` all check and describe a call through it.

use crate::accumulate::ChainEngine;
use crate::block_gemm::{block_epilogue, blockwise_gemm_on, mx_gemm_on, nvfp4_gemm, BlockShape, Dims};
use crate::dtype::Dtype;
use crate::epilogue::OutDtype;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::preset::Preset;
use crate::profile::Profile;
use crate::scaled_mm::{CallPlan, Validation};
use crate::warning::{Warning, WarningKind};

/// Every scaling mode's word, as `--scales` (explain, trace, bench) takes it: tensor-wise, row-wise, then the
/// block-scaled modes of [`BlockMode`] in its order.
pub const SCALING_NAMES: [&str; 6] = ["tensorwise", "rowwise", "block128", "block128x128", "mx", "nvfp4"];

/// A block-scaled mode: the pair of torch `ScalingType`s a call passes, as cuBLASLt runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockMode {
    /// BlockWise1x128 x BlockWise1x128 (cuBLASLt `VEC128_32F` on both operands), sm_90.
    Block128,
    /// BlockWise1x128 x BlockWise128x128 (`VEC128_32F` x `BLK128x128_32F`; torch also takes the swapped pair), sm_90.
    Block128x128,
    /// MXFP8: BlockWise1x32 x BlockWise1x32 (`VEC32_UE8M0`), sm_100.
    Mx,
    /// NVFP4: BlockWise1x16 x BlockWise1x16 (`VEC16_UE4M3`, e2m1 operands), sm_100.
    Nvfp4,
}

impl BlockMode {
    /// Every mode, in table order.
    pub const ALL: [BlockMode; 4] = [BlockMode::Block128, BlockMode::Block128x128, BlockMode::Mx, BlockMode::Nvfp4];

    /// Its word in [`SCALING_NAMES`].
    pub fn name(self) -> &'static str {
        SCALING_NAMES[2 + self as usize]
    }

    /// The mode of a word of [`SCALING_NAMES`] (None: tensor-wise, row-wise or unknown).
    pub fn from_name(name: &str) -> Option<BlockMode> {
        BlockMode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The mode of two torch `ScalingType` names (`BlockWise1x128`, ...), as a recording's call object or a
    /// `scaled_mm_v2` call gives them; None for any other pair.
    pub fn of_scalings(a: &str, b: &str) -> Option<BlockMode> {
        match (a, b) {
            ("BlockWise1x128", "BlockWise1x128") => Some(BlockMode::Block128),
            ("BlockWise1x128", "BlockWise128x128") | ("BlockWise128x128", "BlockWise1x128") => {
                Some(BlockMode::Block128x128)
            }
            ("BlockWise1x32", "BlockWise1x32") => Some(BlockMode::Mx),
            ("BlockWise1x16", "BlockWise1x16") => Some(BlockMode::Nvfp4),
            _ => None,
        }
    }

    /// What the mode is called in messages and in the status table.
    pub fn label(self) -> &'static str {
        match self {
            BlockMode::Block128 => "block-wise 1x128 scales",
            BlockMode::Block128x128 => "block-wise 128x128 scales",
            BlockMode::Mx => "MXFP8 scales",
            BlockMode::Nvfp4 => "NVFP4 scales",
        }
    }

    /// cuBLASLt's scale modes of A and B (`CUBLASLT_MATMUL_MATRIX_SCALE_*`).
    pub fn scale_modes(self) -> (&'static str, &'static str) {
        match self {
            BlockMode::Block128 => ("VEC128_32F", "VEC128_32F"),
            BlockMode::Block128x128 => ("VEC128_32F", "BLK128x128_32F"),
            BlockMode::Mx => ("VEC32_UE8M0", "VEC32_UE8M0"),
            BlockMode::Nvfp4 => ("VEC16_UE4M3", "VEC16_UE4M3"),
        }
    }

    /// Elements of K per scale.
    pub fn block(self) -> usize {
        match self {
            BlockMode::Block128 | BlockMode::Block128x128 => crate::block_gemm::BLOCKWISE_K,
            BlockMode::Mx => 32,
            BlockMode::Nvfp4 => 16,
        }
    }

    /// The block-wise shapes of A and B's scales (None for MX and NVFP4).
    pub fn shapes(self) -> Option<(BlockShape, BlockShape)> {
        match self {
            BlockMode::Block128 => Some((BlockShape::Vec1x128, BlockShape::Vec1x128)),
            BlockMode::Block128x128 => Some((BlockShape::Vec1x128, BlockShape::Blk128x128)),
            BlockMode::Mx | BlockMode::Nvfp4 => None,
        }
    }

    /// The built-in profile the mode runs on when a call names none (`scaled_mm_v2`).
    pub fn default_profile(self) -> &'static str {
        match self {
            BlockMode::Block128 | BlockMode::Block128x128 => "hopper",
            BlockMode::Mx | BlockMode::Nvfp4 => "b200-tcgen05-experimental",
        }
    }

    /// Can `profile`'s GPU run the mode? Block-wise: an sm_90 GPU (torch's `_check_deepseek_support`); MX and
    /// NVFP4: the block-scaled tcgen05.mma of sm_100 (a preset with e8m0 block scales, `b200_tcgen05`).
    pub fn runs_on(self, profile: &Profile) -> bool {
        match self {
            BlockMode::Block128 | BlockMode::Block128x128 => profile.capability.0 == 9,
            BlockMode::Mx | BlockMode::Nvfp4 => {
                profile.capability.0 == 10 && profile.preset.scale_block().is_some() && profile.preset.group().is_none()
            }
        }
    }

    /// The preset the mode computes with on `profile` (NVFP4: `b200_tcgen05_mxf4nvf4`, the e2m1 instruction of the
    /// same tensor core); ReferenceRejectsError where the profile's GPU cannot run the mode.
    pub fn preset(self, profile: &Profile) -> Result<Preset> {
        if !self.runs_on(profile) {
            return Err(Error::rejects(match self {
                BlockMode::Block128 | BlockMode::Block128x128 => format!(
                    "DeepSeek style (1x128, 128x128) scaling only supported in CUDA for SM90 (profile '{}' is sm_{}{})",
                    profile.name, profile.capability.0, profile.capability.1
                ),
                BlockMode::Mx | BlockMode::Nvfp4 => format!(
                    "{} needs cuBLASLt's {} scale mode, which only the block-scaled tcgen05.mma of sm_100 runs \
                     (profile '{}': sm_{}{}, preset '{}'; the MX profile: 'b200-tcgen05-experimental')",
                    self.label(),
                    self.scale_modes().0,
                    profile.name,
                    profile.capability.0,
                    profile.capability.1,
                    profile.preset.name()
                ),
            }));
        }
        Ok(match self {
            BlockMode::Nvfp4 => crate::group_scale::b200_tcgen05_mxf4nvf4(),
            _ => profile.preset.clone(),
        })
    }

    /// The sources the mode is modelled from (docs/reference.md §12).
    pub fn sources(self) -> &'static str {
        match self {
            BlockMode::Block128 | BlockMode::Block128x128 => {
                "cuBLAS 12.9 documentation (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F / BLK128x128_32F: the scaling \
                 factors are applied to the 128-element K blocks of the partial products in fp32); pytorch \
                 aten/src/ATen/native/cuda/ScaledBlas.cpp (torch 2.10: _check_deepseek_support, \
                 _scaled_block1x128_block1x128, _scaled_block1x128_block128x128); the order of the fp32 operations \
                 is this library's assumption until recordings decide it"
            }
            BlockMode::Mx => {
                "MMA-Sim 2.1.1 (microsoft/MMA-Sim, PyPI mmasim; mmasim/nv_ptx/sim.py TCGen05MMABlockScale, \
                 kind::mxf8f6f4 st_fdpa, validated on hardware by its authors); cuBLAS documentation (VEC32_UE8M0, \
                 compute capability 10.0); torch's to_blocked (torch/testing/_internal/common_quantized.py) for the \
                 scale layout; pytorch aten/src/ATen/native/cuda/ScaledBlas.cpp (_scaled_mxfp8_mxfp8)"
            }
            BlockMode::Nvfp4 => {
                "MMA-Sim 2.1.1 (PyPI mmasim, mmasim/nv_ptx/sim.py TCGen05MMABlockScale: MMA_GST_FDPA(G=16, F=35, \
                 RZ-FP32, L_max=64, e_zero=-139), gst_fdpa in mmasim/arithmetic/fdpa.py; microsoft/MMA-Sim commit \
                 c78513835c8b2ae61b35062afce4c4255bc6901c mmasim/simulator/nv_ptx.py); cuBLAS documentation \
                 (VEC16_UE4M3, the tensor scale as alpha); torch's to_blocked and pack_uint4 (test/test_matmul_cuda.py)"
            }
        }
    }
}

/// The scales of a block-scaled call as its mode takes them.
#[derive(Clone, Debug, PartialEq)]
pub enum BlockScales {
    /// MXFP8 and NVFP4: A's and B's codes in torch's blocked layout (§12.3), and NVFP4's fp32 global scales (1, 1
    /// otherwise).
    Blocked { a: Vec<u8>, b: Vec<u8>, global: (f32, f32) },
    /// Block-wise 1x128 / 128x128: A's and B's logical fp32 scales with their shapes.
    Logical { a: (Vec<f32>, BlockShape), b: (Vec<f32>, BlockShape) },
}

/// A block-scaled call without its data: what torch checks before it reads the scales, and what explain describes.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockScaledCall {
    /// The mode.
    pub mode: BlockMode,
    /// The logical shape (K in elements, also for NVFP4's packed operands).
    pub dims: Dims,
    /// The dtypes of mat_a and mat_b for the FP8 modes; None for NVFP4, whose packed e2m1 operands the caller
    /// checks (torch's `float4_e2m1fn_x2` has no model dtype).
    pub dtypes: Option<(Dtype, Dtype)>,
    /// The out dtype (torch's default for these calls: bfloat16).
    pub out: Dtype,
    /// use_fast_accum.
    pub fast: bool,
    /// A bias is passed (not modelled with block scales).
    pub bias: bool,
    /// The opt-in to the experimental modes.
    pub experimental: bool,
}

impl BlockScaledCall {
    /// torch's checks of the call before its scales, in the order the Python layer (`_v2.py`) applies them: no
    /// bias (UnsupportedFeatureError: not modelled), the out dtype, K and N multiples of 16, use_fast_accum refused, the profile's GPU able to run the mode, the
    /// operands FP8. Returns the out dtype and the preset the call computes with.
    pub fn check(&self, profile: &Profile) -> Result<(OutDtype, Preset)> {
        if self.bias {
            return Err(Error::unsupported("bias with block-scaled scaled_mm_v2 is not modelled"));
        }
        let out = match self.out {
            Dtype::Float32 | Dtype::BFloat16 | Dtype::Float16 => self.out.out_dtype(),
            _ => None,
        }
        .ok_or_else(|| {
            Error::invalid_value(format!(
                "out_dtype must be float32, bfloat16 or float16 for block-scaled calls, got torch.{}",
                self.out.name()
            ))
        })?;
        let Dims { m, n, k } = self.dims;
        if k % 16 != 0 {
            return Err(Error::invalid_value(format!(
                "Expected trailing dimension of mat1 to be divisible by 16 but got mat1 shape: ({m}x{k})."
            )));
        }
        if n % 16 != 0 {
            let rows = if self.mode == BlockMode::Nvfp4 { k / 2 } else { k };
            return Err(Error::invalid_value(format!("mat2 shape ({rows}x{n}) must be divisible by 16")));
        }
        if self.fast {
            return Err(Error::invalid_value(match self.mode {
                BlockMode::Nvfp4 => {
                    "`use_fast_accum` is not supported when `mat_a` or `mat_b` tensors have the `Float4_e2m1fn_x2` \
                     dtype."
                }
                BlockMode::Mx => "`use_fast_accum` is not supported with block-scaled (MX) scaling",
                BlockMode::Block128 | BlockMode::Block128x128 => {
                    "use_fast_accum is not supported with block-wise 1x128 / 128x128 scaling (cuBLASLt 12.9)"
                }
            }));
        }
        let preset = self.mode.preset(profile)?;
        if let Some((a, b)) = &self.dtypes {
            for (name, d) in [("mat_a", a), ("mat_b", b)] {
                if !matches!(d, Dtype::Float8E4m3fn | Dtype::Float8E5m2) {
                    return Err(Error::wrong_type(format!(
                        "Expected {name} to be Float8 or Float4_x2 matrix got torch.{}",
                        d.name()
                    )));
                }
            }
        }
        Ok((out, preset))
    }

    /// The call on `profile` with its data: the checks and the opt-in, then the mode's GEMM (§12.4, §12.5) by
    /// `engine` and the epilogue. `formats` are the FP8 operands' (ignored for NVFP4, whose `a` and `b` hold one
    /// e2m1 code per byte); `scales` must be the mode's kind. Returns the output's bits in the out dtype. The one
    /// composition replay and the simulated device compute with.
    pub fn compute(
        &self,
        profile: &Profile,
        engine: &dyn ChainEngine,
        formats: (Format, Format),
        (a, b): (&[u8], &[u8]),
        scales: &BlockScales,
    ) -> Result<(Vec<u32>, OutDtype)> {
        let (out, preset) = self.check(profile)?;
        self.check_opt_in()?;
        let (fa, fb) = formats;
        let d = self.dims;
        let mismatch =
            || Error::invalid_value(format!("the scales of a {} call are of another mode", self.mode.label()));
        let (acc, global) = match (self.mode, scales) {
            (BlockMode::Mx, BlockScales::Blocked { a: sa, b: sb, .. }) => {
                (mx_gemm_on(engine, &preset, fa, fb, a, b, d, sa, sb)?, (1.0, 1.0))
            }
            (BlockMode::Nvfp4, BlockScales::Blocked { a: sa, b: sb, global }) => {
                (nvfp4_gemm(&preset, a, b, d, sa, sb)?, *global)
            }
            (BlockMode::Block128 | BlockMode::Block128x128, BlockScales::Logical { a: (sa, ha), b: (sb, hb) }) => {
                (blockwise_gemm_on(engine, &preset, fa, fb, a, b, d, (sa, *ha), (sb, *hb))?, (1.0, 1.0))
            }
            _ => return Err(mismatch()),
        };
        Ok((block_epilogue(&acc, global.0, global.1, out), out))
    }

    /// The scope step after torch's checks (docs/reference.md §5.2 step 7): without the opt-in a block-scaled call
    /// is UnsupportedFeatureError.
    pub fn check_opt_in(&self) -> Result<()> {
        if self.experimental {
            return Ok(());
        }
        Err(Error::unsupported(format!(
            "{} ({}) are not supported in mmaemu 0.1 without opting in to experimental modes: they are modelled from \
             published sources and not yet validated by a recording; opt in with experimental=True or \
             mmaemu.experimental() in Python, --experimental on the command line, or MMAEMU_EXPERIMENTAL=1",
            self.mode.label(),
            self.mode.scale_modes().0
        )))
    }

    /// The experimental warning every block-scaled call carries.
    pub fn warning(&self, preset: &Preset) -> Warning {
        Warning::new(
            WarningKind::ExperimentalPreset,
            format!(
                "{} ({}) are experimental: modelled on preset '{}' from their published sources (docs/reference.md \
                 §12), not validated by recordings of a GPU",
                self.mode.label(),
                self.mode.scale_modes().0,
                preset.name()
            ),
        )
    }

    /// The kernel: cuBLASLt's scale modes, the preset and its block, the order of fp32 promotion and the epilogue.
    pub fn kernel(&self, preset: &Preset) -> String {
        let (sa, sb) = self.mode.scale_modes();
        let block = self.mode.block();
        let accumulation = match self.mode {
            BlockMode::Block128 | BlockMode::Block128x128 => format!(
                "per {block}-element K block the {} chain from +0 (its fp32-promoted partial), then acc = RN32(acc + \
                 RN32(partial * RN32(sa * sb))) block after block",
                preset.name()
            ),
            BlockMode::Mx => format!(
                "the block-scaled tcgen05.mma kind::mxf8f6f4 ({} of K per instruction, each {block}-element block's \
                 products scaled by 2^(sa + sb) inside the instruction) chained over K from +0, fp32 between \
                 instructions",
                preset.nfma()
            ),
            BlockMode::Nvfp4 => format!(
                "tcgen05.mma kind::mxf4nvf4 ({} of K per instruction, each {block}-element group summed exactly and \
                 scaled by sa * sb inside the instruction, truncated to 2^(E - {})) chained over K from +0, fp32 \
                 between instructions",
                preset.nfma(),
                preset.frac()
            ),
        };
        let alpha = if self.mode == BlockMode::Nvfp4 { "RN32(global_a * global_b)" } else { "1" };
        format!(
            "cuBLASLt {sa} x {sb} on preset {} (block {block} of K): {accumulation}; epilogue {}(RN32(acc * alpha)), \
             alpha = {alpha}",
            preset.name(),
            self.out.name()
        )
    }

    /// The plan: chains per output, scale blocks and instructions per chain, the scale tensors.
    pub fn plan(&self, preset: &Preset) -> String {
        let Dims { m, n, k } = self.dims;
        let blocks = k.div_ceil(self.mode.block());
        let per_chain = match self.mode {
            BlockMode::Block128 | BlockMode::Block128x128 => format!("{blocks} blocks of 128, each one chain"),
            BlockMode::Mx | BlockMode::Nvfp4 => {
                format!("{blocks} scale blocks, {} instructions", k.div_ceil(preset.nfma().max(1)))
            }
        };
        let scales = match self.mode.shapes() {
            Some((a, b)) => {
                format!("fp32 scales {} x {blocks} (A) and {} x {blocks} (B)", a.scale_rows(m), b.scale_rows(n))
            }
            None => {
                let len = |rows: usize| crate::blocked_layout::blocked_len(rows, blocks).unwrap_or(usize::MAX);
                format!("blocked scales of {} (A) and {} (B) codes", len(m), len(n))
            }
        };
        format!("{} outputs, one chain each over K = {k}, no split-K: {per_chain}; {scales}", m * n)
    }

    /// What the call would do (docs/reference.md §8.1) on `profile` (Err: the profile did not resolve): the first
    /// error, or the kernel, the plan and the sources in `kernel`, the experimental warning, backend `reference`.
    pub fn explain(&self, profile: Result<Profile>) -> CallPlan {
        let fail = |e: Error, p: Option<&Profile>, preset: Option<&Preset>| CallPlan {
            validation: Validation::Error { name: e.category().name().into(), message: e.message().into() },
            profile: p.map(|p| p.name.clone()).unwrap_or_default(),
            preset: preset.map(|p| p.name().to_string()).unwrap_or_default(),
            preset_maturity: preset.map(|p| p.maturity().name().to_string()).unwrap_or_default(),
            split: None,
            backend: String::new(),
            fallbacks: vec![],
            warnings: vec![],
            kernel: None,
        };
        let profile = match profile {
            Ok(p) => p,
            Err(e) => return fail(e, None, None),
        };
        let preset = match self.check(&profile) {
            Ok((_, preset)) => preset,
            Err(e) => return fail(e, Some(&profile), Some(&profile.preset)),
        };
        if let Err(e) = self.check_opt_in() {
            return fail(e, Some(&profile), Some(&preset));
        }
        CallPlan {
            validation: Validation::Ok,
            profile: profile.name.clone(),
            preset: preset.name().to_string(),
            preset_maturity: preset.maturity().name().to_string(),
            split: None,
            backend: "reference".into(),
            fallbacks: vec![],
            warnings: vec![self.warning(&preset)],
            kernel: Some(format!(
                "{}; plan: {}; modelled from {}",
                self.kernel(&preset),
                self.plan(&preset),
                self.mode.sources()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_scaling_pairs() {
        for mode in BlockMode::ALL {
            assert_eq!(BlockMode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(BlockMode::from_name("rowwise"), None);
        // torch takes 1x128 x 128x128 and 128x128 x 1x128, not 128x128 x 128x128 (§12.5).
        assert_eq!(BlockMode::of_scalings("BlockWise128x128", "BlockWise1x128"), Some(BlockMode::Block128x128));
        assert_eq!(BlockMode::of_scalings("BlockWise128x128", "BlockWise128x128"), None);
        assert_eq!(BlockMode::of_scalings("BlockWise1x32", "BlockWise1x16"), None);
        assert_eq!(BlockMode::of_scalings("RowWise", "RowWise"), None);
    }
}
