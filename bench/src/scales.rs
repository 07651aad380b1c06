//! The scaling modes of the GEMM benchmark (`mmaemu bench gemm --scales`): the call each mode times — tensor-wise
//! (the plan's accumulator), row-wise with or without a bias (the accumulator through the CUTLASS row-wise
//! epilogue), block-wise 1x128 and 128x128, MXFP8 and NVFP4 — over seeded scales, on an engine or on the model.

use mmaemu_model::block_call::SCALING_NAMES;
use mmaemu_model::block_gemm::{blockwise_gemm_on, mx_gemm_on, nvfp4_gemm_on, BlockShape, Dims, BLOCKWISE_K};
use mmaemu_model::blocked_layout::to_blocked;
use mmaemu_model::cutlass_rowwise::{RowwiseEpilogue, RowwiseKernel};
use mmaemu_model::{b200_tcgen05_mxf4nvf4, execute, ChainEngine, Operands, Plan, Preset};
use rand::rngs::ChaCha8Rng;
use rand::RngExt;

/// How the benchmarked call scales its product.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scales {
    /// One scale per operand: the plan's accumulator (docs/reference.md §3.5).
    #[default]
    TensorWise,
    /// fp32 scales per row of A and per column of the result, through torch 2.7.1's CUTLASS row-wise epilogue on
    /// sm_90 (§4.2), the operand order of its swap heuristic.
    RowWise,
    /// DeepSeek-style 1x128 fp32 scales on both operands: per 128 of K the preset's chain, scaled and added in fp32
    /// (§12.5).
    Block128,
    /// DeepSeek-style 1x128 fp32 scales on A and 128x128 ones on B (activations and weights), as [`Scales::Block128`]
    /// otherwise.
    Block128x128,
    /// MXFP8: e8m0 scales per 32 of K in torch's blocked layout, the block-scaled preset's chain (§12.4).
    Mx,
    /// NVFP4: the operands' low nibbles as e2m1 codes, ue4m3 scales per 16 of K in torch's blocked layout, the
    /// group-scaled chain of the B200 tcgen05 profile's e2m1 instruction (`b200_tcgen05_mxf4nvf4`, §12.2) or of a
    /// preset with a group.
    Nvfp4,
}

impl Scales {
    /// Every mode's name, as `--scales` takes it: the words of the model's one list.
    pub const NAMES: [&'static str; 6] = SCALING_NAMES;

    /// The mode of a name.
    pub fn from_name(name: &str) -> Option<Scales> {
        let all =
            [Scales::TensorWise, Scales::RowWise, Scales::Block128, Scales::Block128x128, Scales::Mx, Scales::Nvfp4];
        Scales::NAMES.iter().position(|&n| n == name).map(|i| all[i])
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Scales::NAMES[self as usize]
    }
}

/// One benchmarked call: its mode, its plan and the seeded scales (and bias) it applies.
pub struct ScaledCall {
    preset: Preset,
    plan: Plan,
    dims: Dims,
    scales: Scales,
    rowwise: Option<RowwiseEpilogue>,
    /// Block-wise: (scale_a, scale_b) fp32, row-major [scale rows, ceil(K / 128)], and their shapes.
    block: (Vec<f32>, Vec<f32>),
    shapes: (BlockShape, BlockShape),
    /// MXFP8: (scale_a, scale_b) e8m0 codes in torch's blocked layout; NVFP4: ue4m3 codes.
    mx: (Vec<u8>, Vec<u8>),
    /// NVFP4: the group-scaled preset.
    group: Option<Preset>,
}

/// Positive normal fp32 scales between 2^-11 and 2^5, as the tests of the block-wise GEMM draw them.
fn fp32_scales(n: usize, rng: &mut ChaCha8Rng) -> Vec<f32> {
    (0..n).map(|_| f32::from_bits(rng.random_range(0x3A00_0000..0x4200_0000u32))).collect()
}

impl ScaledCall {
    /// The call of `scales` (with a bias when `bias`, row-wise only) for a plan of `preset`; the scales drawn from
    /// `rng`. Errors: a bias without row-wise scales, a split with block-wise or MX scales, MX on a preset without
    /// e8m0 block scales.
    pub fn new(
        preset: &Preset,
        plan: &Plan,
        dims: Dims,
        scales: Scales,
        bias: bool,
        rng: &mut ChaCha8Rng,
    ) -> Result<ScaledCall, String> {
        let Dims { m, n, k } = dims;
        if bias && scales != Scales::RowWise {
            return Err(format!("--bias needs --scales rowwise (got {})", scales.name()));
        }
        if matches!(scales, Scales::Block128 | Scales::Block128x128 | Scales::Mx | Scales::Nvfp4)
            && plan.splits().len() > 1
        {
            return Err(format!("--scales {} runs one chain per output: --splitk must be 1", scales.name()));
        }
        let mut call = ScaledCall {
            preset: preset.clone(),
            plan: plan.clone(),
            dims,
            scales,
            rowwise: None,
            block: (Vec::new(), Vec::new()),
            shapes: (BlockShape::Vec1x128, BlockShape::Vec1x128),
            mx: (Vec::new(), Vec::new()),
            group: None,
        };
        match scales {
            Scales::TensorWise => {}
            Scales::RowWise => {
                let order = RowwiseKernel::sm90(m, n, plan.fast(), 132).order();
                let (scale_a, scale_b) = (fp32_scales(m, rng), fp32_scales(n, rng));
                // bf16 values in [-4, 4): the high half of an fp32.
                let bias = bias.then(|| {
                    (0..n).map(|_| f32::from_bits((rng.random::<f32>() * 8.0 - 4.0).to_bits() & 0xFFFF_0000)).collect()
                });
                call.rowwise = Some(RowwiseEpilogue { scale_a, scale_b, bias, order });
            }
            Scales::Block128 | Scales::Block128x128 => {
                let kb = k.div_ceil(BLOCKWISE_K);
                let b = if scales == Scales::Block128 { BlockShape::Vec1x128 } else { BlockShape::Blk128x128 };
                call.shapes = (BlockShape::Vec1x128, b);
                call.block = (fp32_scales(m * kb, rng), fp32_scales(b.scale_rows(n) * kb, rng));
            }
            Scales::Mx => {
                let Some(block) = preset.scale_block().filter(|_| preset.group().is_none()) else {
                    return Err(format!(
                        "--scales mx needs a preset with e8m0 block scales (b200_tcgen05), not '{}'",
                        preset.name()
                    ));
                };
                let nb = k.div_ceil(block);
                // Exponents within 2^±8 of 1, as MX quantisation of unit-scale data gives them.
                let mut e8m0 = |rows: usize| -> Result<Vec<u8>, String> {
                    let s: Vec<u8> = (0..rows * nb).map(|_| rng.random_range(119..=135u8)).collect();
                    to_blocked(&s, rows, nb, 127).map_err(|e| e.to_string())
                };
                call.mx = (e8m0(m)?, e8m0(n)?);
            }
            Scales::Nvfp4 => {
                let group = if preset.group().is_some() {
                    preset.clone()
                } else if preset.name() == Preset::b200_tcgen05().name() {
                    b200_tcgen05_mxf4nvf4()
                } else {
                    return Err(format!(
                        "--scales nvfp4 needs the B200 tcgen05 profile's preset (b200_tcgen05, whose e2m1 instruction \
                         it runs) or a preset with a group, not '{}'",
                        preset.name()
                    ));
                };
                let nb = k.div_ceil(group.scale_block().unwrap_or(16));
                // ue4m3 codes of 2^-2 to 2^1 (0x30 to 0x48), as NVFP4 quantisation of unit-scale data gives them.
                let mut ue4m3 = |rows: usize| -> Result<Vec<u8>, String> {
                    let s: Vec<u8> = (0..rows * nb).map(|_| rng.random_range(0x30..=0x48u8)).collect();
                    to_blocked(&s, rows, nb, 0).map_err(|e| e.to_string())
                };
                call.mx = (ue4m3(m)?, ue4m3(n)?);
                call.group = Some(group);
            }
        }
        Ok(call)
    }

    /// The call's mode.
    pub fn scales(&self) -> Scales {
        self.scales
    }

    /// The call's output bits on `engine`: the fp32 accumulator (tensor-wise, block-wise, MX, NVFP4) or the bf16 output
    /// (row-wise). The same bits on every engine.
    pub fn run(&self, ops: &Operands<'_>, engine: &dyn ChainEngine) -> Result<Vec<u32>, String> {
        let (p, d) = (&self.preset, self.dims);
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect();
        let acc = match self.scales {
            Scales::TensorWise | Scales::RowWise => execute(p, &self.plan, ops, engine),
            Scales::Block128 | Scales::Block128x128 => {
                let (sa, sb) = ((&self.block.0[..], self.shapes.0), (&self.block.1[..], self.shapes.1));
                blockwise_gemm_on(engine, p, ops.fa, ops.fb, ops.a, ops.b, d, sa, sb)
            }
            Scales::Mx => mx_gemm_on(engine, p, ops.fa, ops.fb, ops.a, ops.b, d, &self.mx.0, &self.mx.1),
            Scales::Nvfp4 => {
                let g = self.group.as_ref().unwrap_or(p);
                nvfp4_gemm_on(engine, g, ops.a, ops.b, d, &self.mx.0, &self.mx.1)
            }
        }
        .map_err(|e| e.to_string())?;
        Ok(match &self.rowwise {
            Some(e) => e.apply(&acc, d.m, d.n),
            None => bits(acc),
        })
    }
}
