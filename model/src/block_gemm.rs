//! Block-scaled GEMMs (docs/reference.md §12.4 and §12.5, experimental): MXFP8 and NVFP4 on the B200 tcgen05 profile (the
//! block-scaled instruction chained over K, scales in torch's blocked layout) and DeepSeek-style 1x128 / 128x128
//! block-wise scaling on the hopper profile (per 128 of K the preset's chain, scaled and added in fp32).

// Operands: A is M x K row-major, B is given as N x K row-major (torch's column-major mat2), so that output (i, j)
// is the chain of row i of A with row j of B. Every output is one chain from +0: no split-K (cuBLASLt's MX
// heuristics offer one algorithm per shape on sm_100, and none of its block-scaled modes is recorded yet).
//
// Block-wise (cuBLASLt 12.9 `VEC128_32F` / `BLK128x128_32F`, documented as "the scaling factors are applied to the
// 128-element K blocks of the partial products in fp32"): for each 128-element K block kb the hopper chain of that
// block from +0 (the fp32-promoted partial of §3.4), then acc = acc + partial * (sa * sb), each operation one fp32
// round-to-nearest-even. The order of those three operations is not documented; it is this library's assumption
// until recordings decide it.

use crate::accumulate::{each_output, ChainEngine, Operands, ReferenceEngine};
use crate::blocked_layout::{blocked_len, from_blocked};
use crate::chain::Chain;
use crate::epilogue::{Epilogue, OutDtype};
use crate::error::{Error, Result};
use crate::format::Format;
use crate::group_scale::GroupChain;
use crate::preset::Preset;

/// The K extent of one block-wise scale (1x128 and 128x128).
pub const BLOCKWISE_K: usize = 128;

/// How one operand of a block-wise GEMM is scaled: one fp32 scale per row (or column of B) and 128 of K, or per
/// 128 x 128 tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockShape {
    /// `ScalingType.BlockWise1x128`.
    Vec1x128,
    /// `ScalingType.BlockWise128x128`.
    Blk128x128,
}

impl BlockShape {
    /// The rows of the logical scale matrix for an operand of `outer` rows (M for A, N for B).
    pub fn scale_rows(self, outer: usize) -> usize {
        match self {
            BlockShape::Vec1x128 => outer,
            BlockShape::Blk128x128 => outer.div_ceil(128),
        }
    }
    /// The scale row of operand row `i`.
    fn row_of(self, i: usize) -> usize {
        match self {
            BlockShape::Vec1x128 => i,
            BlockShape::Blk128x128 => i / 128,
        }
    }
}

/// The shape of a GEMM's operands: A is m x k, B is n x k (both row-major).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// Rows of A and of the output.
    pub m: usize,
    /// Columns of the output (rows of the N x K B).
    pub n: usize,
    /// The reduction length.
    pub k: usize,
}

impl Dims {
    /// Check the operands' lengths and the output's size before anything is allocated.
    fn check(self, a: usize, b: usize) -> Result<()> {
        let bytes = crate::limits::product(&[self.m as u64, self.n as u64, 4]);
        crate::limits::check_fixed("the block-scaled GEMM's output", bytes).map_err(Error::invalid_value)?;
        for (what, len, rows) in [("a", a, self.m), ("b", b, self.n)] {
            if rows.checked_mul(self.k) != Some(len) {
                return Err(Error::invalid_value(format!(
                    "{what} must hold {rows} x {} codes (one per element), got {len}",
                    self.k
                )));
            }
        }
        Ok(())
    }
}

/// The row-major scale matrices of two blocked scale tensors of `block`-element scales, with torch's message
/// for a wrong count ("For Blockwise scaling scale_a should have N elements, got: n").
fn unblock(scale_a: &[u8], scale_b: &[u8], d: Dims, block: usize) -> Result<(Vec<u8>, Vec<u8>)> {
    let cols = d.k.div_ceil(block);
    let mut out = Vec::with_capacity(2);
    for (name, s, rows) in [("scale_a", scale_a, d.m), ("scale_b", scale_b, d.n)] {
        let want = blocked_len(rows, cols).ok_or_else(|| Error::invalid_value("the scale size overflows"))?;
        if s.len() != want {
            return Err(Error::invalid_value(format!(
                "For Blockwise scaling {name} should have {want} elements, got: {}",
                s.len()
            )));
        }
        out.push(from_blocked(s, rows, cols)?);
    }
    let b = out.pop().unwrap_or_default();
    Ok((out.pop().unwrap_or_default(), b))
}

/// The fp32 accumulators of an MXFP8 GEMM (docs/reference.md §12.4): output (i, j) = the preset's block-scaled
/// chain ([`Chain::run_scaled`]) of row i of A and row j of B from +0, with the e8m0 scales of row i / row j.
/// `scale_a` and `scale_b` are in torch's blocked layout (round_up(M, 128) · round_up(ceil(K / 32), 4) codes).
#[allow(clippy::too_many_arguments)]
pub fn mx_gemm(
    preset: &Preset,
    fa: Format,
    fb: Format,
    a: &[u8],
    b: &[u8],
    d: Dims,
    scale_a: &[u8],
    scale_b: &[u8],
) -> Result<Vec<f32>> {
    mx_gemm_on(&ReferenceEngine, preset, fa, fb, a, b, d, scale_a, scale_b)
}

/// [`mx_gemm`] with the chains computed by `engine` ([`ChainEngine::scaled_chains`]): the same bits, at the
/// engine's speed.
#[allow(clippy::too_many_arguments)]
pub fn mx_gemm_on(
    engine: &dyn ChainEngine,
    preset: &Preset,
    fa: Format,
    fb: Format,
    a: &[u8],
    b: &[u8],
    d: Dims,
    scale_a: &[u8],
    scale_b: &[u8],
) -> Result<Vec<f32>> {
    let Some(block) = preset.scale_block().filter(|_| preset.group().is_none()) else {
        return Err(Error::invalid_value(format!(
            "preset '{}' takes no e8m0 block scales on FP8 operands (the MXFP8 preset: 'b200_tcgen05')",
            preset.name()
        )));
    };
    d.check(a.len(), b.len())?;
    let (sa, sb) = unblock(scale_a, scale_b, d, block)?;
    crate::fpenv::check()?;
    let ops = Operands { fa, fb, a, b, m: d.m, n: d.n, k: d.k };
    if d.m == 0 || d.n == 0 {
        return Ok(Vec::new());
    }
    let out = engine.scaled_chains(preset, &ops, &sa, &sb);
    crate::interrupt::Interrupt::current().check()?;
    Ok(out)
}

/// The fp32 accumulators of an NVFP4 GEMM (docs/reference.md §12.4): output (i, j) = the group-scaled chain
/// ([`GroupChain::run`]) of row i of A and row j of B from +0. `a` and `b` hold one e2m1 code per byte (unpack
/// torch's `float4_e2m1fn_x2` with [`crate::format::e2m1_unpack`]); the ue4m3 scales are in torch's blocked layout
/// (round_up(M, 128) · round_up(ceil(K / 16), 4) codes).
pub fn nvfp4_gemm(preset: &Preset, a: &[u8], b: &[u8], d: Dims, scale_a: &[u8], scale_b: &[u8]) -> Result<Vec<f32>> {
    nvfp4_gemm_on(&ReferenceEngine, preset, a, b, d, scale_a, scale_b)
}

/// [`nvfp4_gemm`] with the chains computed by `engine` ([`ChainEngine::group_chains`]): the same bits, at the
/// engine's speed.
pub fn nvfp4_gemm_on(
    engine: &dyn ChainEngine,
    preset: &Preset,
    a: &[u8],
    b: &[u8],
    d: Dims,
    scale_a: &[u8],
    scale_b: &[u8],
) -> Result<Vec<f32>> {
    let chain = GroupChain::new(preset)?;
    d.check(a.len(), b.len())?;
    let (sa, sb) = unblock(scale_a, scale_b, d, chain.scale_block())?;
    crate::fpenv::check()?;
    if d.m == 0 || d.n == 0 {
        return Ok(Vec::new());
    }
    // The formats are not read: the codes are e2m1.
    let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a, b, m: d.m, n: d.n, k: d.k };
    let out = engine.group_chains(preset, &ops, &sa, &sb);
    crate::interrupt::Interrupt::current().check()?;
    Ok(out)
}

/// The fp32 accumulators of a block-wise GEMM on a preset's chain (docs/reference.md §12.5; see the comment at the
/// top of this file). `scale_a` is the row-major (shape_a.scale_rows(M), ceil(K / 128)) fp32 matrix, `scale_b` the
/// row-major (shape_b.scale_rows(N), ceil(K / 128)) one: the logical scales, whatever strides torch held them in.
#[allow(clippy::too_many_arguments)]
pub fn blockwise_gemm(
    preset: &Preset,
    fa: Format,
    fb: Format,
    a: &[u8],
    b: &[u8],
    d: Dims,
    scale_a: (&[f32], BlockShape),
    scale_b: (&[f32], BlockShape),
) -> Result<Vec<f32>> {
    blockwise_gemm_on(&ReferenceEngine, preset, fa, fb, a, b, d, scale_a, scale_b)
}

/// [`blockwise_gemm`] with the block-wise chains computed by `engine` ([`ChainEngine::blockwise_chains`], given
/// every output's row of scales): the same bits at the engine's speed.
#[allow(clippy::too_many_arguments)]
pub fn blockwise_gemm_on(
    engine: &dyn ChainEngine,
    preset: &Preset,
    fa: Format,
    fb: Format,
    a: &[u8],
    b: &[u8],
    d: Dims,
    scale_a: (&[f32], BlockShape),
    scale_b: (&[f32], BlockShape),
) -> Result<Vec<f32>> {
    d.check(a.len(), b.len())?;
    let kb = d.k.div_ceil(BLOCKWISE_K);
    for (name, (s, shape), outer) in [("scale_a", scale_a, d.m), ("scale_b", scale_b, d.n)] {
        let rows = shape.scale_rows(outer);
        if rows.checked_mul(kb) != Some(s.len()) {
            return Err(Error::invalid_value(format!(
                "{name} must hold {rows} x {kb} fp32 scales for {shape:?} scaling, got {}",
                s.len()
            )));
        }
    }
    crate::fpenv::check()?;
    if d.m == 0 || d.n == 0 {
        return Ok(Vec::new());
    }
    let ops = Operands { fa, fb, a, b, m: d.m, n: d.n, k: d.k };
    let (sa, sb) = (per_row(scale_a, d.m, kb), per_row(scale_b, d.n, kb));
    let acc = engine.blockwise_chains(preset, &ops, BLOCKWISE_K, &sa, &sb);
    crate::interrupt::Interrupt::current().check()?;
    Ok(acc.into_iter().map(crate::round::canonical_f32).collect())
}

/// The row-major [rows, kb] scales of every row of an operand (a 128 x 128 tile's row of scales repeated for each of
/// its rows); at most as many as the operand has codes.
fn per_row(scale: (&[f32], BlockShape), rows: usize, kb: usize) -> std::borrow::Cow<'_, [f32]> {
    match scale.1 {
        BlockShape::Vec1x128 => scale.0.into(),
        shape => (0..rows).flat_map(|i| &scale.0[shape.row_of(i) * kb..][..kb]).copied().collect::<Vec<_>>().into(),
    }
}

/// [`ChainEngine::blockwise_chains`] one block at a time: per block of K the chains of every output from +0, through
/// the engine's [`ChainEngine::chains`] where both operands are finite, by the model's chain otherwise; then per
/// output acc = acc + partial · (sa · sb) in fp32, block after block (see the comment at the top of this file).
pub fn blockwise_chains_by_blocks<E: ChainEngine + ?Sized>(
    engine: &E,
    preset: &Preset,
    ops: &Operands<'_>,
    block: usize,
    scale_a: &[f32],
    scale_b: &[f32],
) -> Vec<f32> {
    let (m, n, k) = (ops.m, ops.n, ops.k);
    let mut acc = vec![0.0f32; m * n];
    if n == 0 || block == 0 {
        return acc;
    }
    let nb = k.div_ceil(block);
    let finite = !engine.any_nonfinite(ops.fa, ops.a) && !engine.any_nonfinite(ops.fb, ops.b);
    let chain = Chain::new(preset, ops.fa, ops.fb);
    for t in 0..nb {
        let cols = t * block..((t + 1) * block).min(k);
        let (ga, gb) = (columns(ops.a, m, k, &cols), columns(ops.b, n, k, &cols));
        let one = Operands { a: &ga, b: &gb, k: cols.len(), ..*ops };
        let partial =
            if finite { engine.chains(preset, &one) } else { each_output(&one, |ra, rb| chain.run(ra, rb, 0.0)) };
        for (i, (acc, p)) in acc.chunks_exact_mut(n).zip(partial.chunks_exact(n)).enumerate() {
            let sa = scale_a[i * nb + t];
            for (j, (acc, &p)) in acc.iter_mut().zip(p).enumerate() {
                *acc += p * (sa * scale_b[j * nb + t]);
            }
        }
    }
    acc
}

/// The columns `cols` of a row-major [rows, k] matrix, as a row-major [rows, cols.len()] one.
fn columns(x: &[u8], rows: usize, k: usize, cols: &std::ops::Range<usize>) -> Vec<u8> {
    (0..rows).flat_map(|r| &x[r * k + cols.start..r * k + cols.end]).copied().collect()
}

/// The output of block-scaled accumulators: y = RN32(acc · alpha) then the out dtype, as the tensor-wise epilogue
/// (§4) with alpha = RN32(global_a · global_b) — NVFP4's tensor scales, 1 for MXFP8 and block-wise.
pub fn block_epilogue(acc: &[f32], global_a: f32, global_b: f32, out: OutDtype) -> Vec<u32> {
    Epilogue { scale_a: global_a, scale_b: global_b, scale_result: None, out }.apply(acc)
}
