//! Plan execution (docs/reference.md §3.5): the fp32 accumulator of A x B^T — gather each chunk, run its chains through
//! a [`ChainEngine`], add slow chunks, combine the splits, and patch non-finite outputs (§3.7).

mod nonfinite;

use crate::chain::Chain;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::group_scale::GroupChain;
use crate::interrupt::Interrupt;
use crate::plan::{Chunk, Plan};
use crate::preset::Preset;

/// The operands of one GEMM: A is [m, k] and B is [n, k] (mat2 transposed, the weight layout), both
/// row-major FP8 codes.
#[derive(Clone, Copy, Debug)]
pub struct Operands<'a> {
    /// Format of A.
    pub fa: Format,
    /// Format of B.
    pub fb: Format,
    /// A's codes, [m, k] row-major.
    pub a: &'a [u8],
    /// B's codes, [n, k] row-major.
    pub b: &'a [u8],
    /// Rows of A.
    pub m: usize,
    /// Rows of B.
    pub n: usize,
    /// The reduction length.
    pub k: usize,
}

impl Operands<'_> {
    /// Check the buffer sizes against the shape.
    pub fn check(&self) -> Result<()> {
        let (ma, nb) = (self.m.checked_mul(self.k), self.n.checked_mul(self.k));
        if ma != Some(self.a.len()) || nb != Some(self.b.len()) {
            return Err(Error::invalid_value(format!(
                "operand sizes do not match the shape: A has {} codes for [{}, {}], B has {} codes for [{}, {}]",
                self.a.len(),
                self.m,
                self.k,
                self.b.len(),
                self.n,
                self.k
            )));
        }
        Ok(())
    }
}

/// Computes chains from +0: `out[i * n + j]` = the chain of the preset over `a[i, 0..l] * b[j, 0..l]`.
/// Inputs are finite codes (non-finite codes were replaced by zero). Every engine must return exactly the
/// bits of [`ReferenceEngine`].
///
/// The hook the fast backends plug into: an engine computes many chains from +0 at once ([`ChainEngine::chains`]),
/// and may run a whole plan in one pass ([`ChainEngine::run_plan`]); the model's own [`ReferenceEngine`] runs
/// [`Chain::run`] for every output.
pub trait ChainEngine: Sync {
    /// A short name for reports (`reference`, `cpu-avx2`, ...).
    fn name(&self) -> String;
    /// Run `ops.m * ops.n` chains of length `ops.k` from +0: `out[i * n + j]` over `a[i, ..]` and `b[j, ..]`
    /// (`a` is [m, k], `b` is [n, k], row-major, finite codes).
    fn chains(&self, preset: &Preset, ops: &Operands<'_>) -> Vec<f32>;

    /// Run every split and chunk of `plan` over finite codes (docs/reference.md §3.5 steps 4–5): the combined
    /// partials [m, n], before the non-finite patch. `ops.k` equals `plan.k()` and m, n, k are nonzero.
    /// The default gathers each chunk and runs [`ChainEngine::chains`] ([`run_plan_by_chunks`]); an engine
    /// may override it to do the same work in one pass, and must return the same bits.
    fn run_plan(&self, preset: &Preset, plan: &Plan, ops: &Operands<'_>) -> Vec<f32> {
        run_plan_by_chunks(self, preset, plan, ops)
    }

    /// Whether the engine computes the chains of this preset and format pair itself. An engine that does
    /// not (a GPU engine outside its kernels' domain) still returns the right bits, from the engine it
    /// falls back to, so a comparison of engines skips it there.
    fn serves(&self, _preset: &Preset, _fa: Format, _fb: Format) -> bool {
        true
    }

    /// The block-scaled chains of a preset that takes e8m0 block scales (docs/reference.md §2.8), from +0:
    /// `out[i * n + j]` = [`Chain::run_scaled`] over `a[i, ..]` and `b[j, ..]` with the scales `scale_a[i, ..]` and
    /// `scale_b[j, ..]` (row-major [m, ceil(k / block)] and [n, ceil(k / block)] e8m0 codes, block = the preset's
    /// scale block). Any codes, non-finite ones and the NaN scale included. The default runs the model's chain for
    /// every output; an engine may compute them faster and must return the same bits.
    fn scaled_chains(&self, preset: &Preset, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8]) -> Vec<f32> {
        scaled_chains_by_model(preset, ops, scale_a, scale_b)
    }

    /// The group-scaled chains of an e2m1 preset (docs/reference.md §12.2: NVFP4, MXFP4), from +0: `out[i * n + j]`
    /// = [`GroupChain::run`] over `a[i, ..]` and `b[j, ..]` with the scales `scale_a[i, ..]` and `scale_b[j, ..]`
    /// (row-major [m, ceil(k / block)] and [n, ceil(k / block)] codes of the preset's scale format). `ops` holds one
    /// e2m1 code per byte (low nibble); its `fa` and `fb` are not read. The default runs the model's chain for every
    /// output; an engine may compute them faster and must return the same bits. A preset without a group has no
    /// such chains: empty (the callers check it first, [`GroupChain::new`]).
    fn group_chains(&self, preset: &Preset, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8]) -> Vec<f32> {
        GroupChain::new(preset).map(|c| group_chains_by_model(&c, ops, scale_a, scale_b)).unwrap_or_default()
    }

    /// The block-wise scaled chains of docs/reference.md §12.5, from +0: `out[i * n + j]` = ((+0 + c_0 · (sa_i0 ·
    /// sb_j0)) + c_1 · (sa_i1 · sb_j1)) + ..., each operation one fp32 round-to-nearest-even, where c_t is the
    /// preset's chain from +0 of `a[i, ..]` and `b[j, ..]` over positions t · block..min((t + 1) · block, k), and
    /// sa_it = `scale_a[i * nb + t]`, sb_jt = `scale_b[j * nb + t]` (row-major [m, nb] and [n, nb] fp32, nb =
    /// ceil(k / block), `block` > 0). Any codes and scales, non-finite ones included (an operand with a non-finite
    /// code runs the model's chain). The default runs the blocks one by one through [`ChainEngine::chains`]
    /// ([`crate::block_gemm::blockwise_chains_by_blocks`]); an engine may run them in one pass and must return the
    /// same bits, a NaN for a NaN (which payload a product of two NaNs keeps is the compiler's choice; the
    /// block-wise GEMM returns the canonical NaN).
    fn blockwise_chains(
        &self,
        preset: &Preset,
        ops: &Operands<'_>,
        block: usize,
        scale_a: &[f32],
        scale_b: &[f32],
    ) -> Vec<f32> {
        crate::block_gemm::blockwise_chains_by_blocks(self, preset, ops, block, scale_a, scale_b)
    }

    /// Whether any of `codes` is non-finite in format `f`, as [`Format::any_nonfinite`] answers: the executor
    /// asks it of both operands of every call, before the plan runs. An engine may scan in parallel (at one
    /// row of A the scan of B is a large part of a call); it must give the same answer.
    fn any_nonfinite(&self, f: Format, codes: &[u8]) -> bool {
        f.any_nonfinite(codes)
    }

    /// [`ChainEngine::run_plan`] over operands as the caller gave them: the combined partials, or None when an
    /// operand holds a non-finite code (the executor then replaces those codes and runs `run_plan`, §3.5 step 3).
    /// The default asks [`ChainEngine::any_nonfinite`] of both operands first. An engine whose kernels read every
    /// code of an operand may find the non-finite ones as it computes instead, so that a large operand is read
    /// once (a decode step's B); it must answer None exactly when the scan would have found one.
    fn run_plan_checked(&self, preset: &Preset, plan: &Plan, ops: &Operands<'_>) -> Option<Vec<f32>> {
        if self.any_nonfinite(ops.fa, ops.a) || self.any_nonfinite(ops.fb, ops.b) {
            return None;
        }
        Some(self.run_plan(preset, plan, ops))
    }
}

/// A reference to an engine is an engine: registries hand out `&'static dyn ChainEngine`, and lists of
/// engines can hold them next to owned ones.
impl<E: ChainEngine + ?Sized> ChainEngine for &E {
    fn name(&self) -> String {
        (**self).name()
    }
    fn chains(&self, preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        (**self).chains(preset, ops)
    }
    fn run_plan(&self, preset: &Preset, plan: &Plan, ops: &Operands<'_>) -> Vec<f32> {
        (**self).run_plan(preset, plan, ops)
    }
    fn serves(&self, preset: &Preset, fa: Format, fb: Format) -> bool {
        (**self).serves(preset, fa, fb)
    }
    fn any_nonfinite(&self, f: Format, codes: &[u8]) -> bool {
        (**self).any_nonfinite(f, codes)
    }
    fn run_plan_checked(&self, preset: &Preset, plan: &Plan, ops: &Operands<'_>) -> Option<Vec<f32>> {
        (**self).run_plan_checked(preset, plan, ops)
    }
    fn scaled_chains(&self, preset: &Preset, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8]) -> Vec<f32> {
        (**self).scaled_chains(preset, ops, scale_a, scale_b)
    }
    fn group_chains(&self, preset: &Preset, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8]) -> Vec<f32> {
        (**self).group_chains(preset, ops, scale_a, scale_b)
    }

    fn blockwise_chains(
        &self,
        preset: &Preset,
        ops: &Operands<'_>,
        block: usize,
        scale_a: &[f32],
        scale_b: &[f32],
    ) -> Vec<f32> {
        (**self).blockwise_chains(preset, ops, block, scale_a, scale_b)
    }
}

/// The model itself as an engine: one [`Chain::run`] per output.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceEngine;

impl ChainEngine for ReferenceEngine {
    fn name(&self) -> String {
        "reference".into()
    }
    fn chains(&self, preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        let chain = Chain::new(preset, ops.fa, ops.fb);
        each_output(ops, |ra, rb| chain.run(ra, rb, 0.0))
    }
}

/// `out[i * n + j] = f(a[i, ..], b[j, ..])` for row-major a [m, k] and b [n, k]: the output order of
/// [`ChainEngine::chains`], shared by the engines that compute one output at a time.
/// Rows are skipped (left +0) once the call is interrupted ([`Interrupt`]).
pub fn each_output(ops: &Operands<'_>, f: impl Fn(&[u8], &[u8]) -> f32) -> Vec<f32> {
    let Operands { a, b, m, n, k: l, .. } = *ops;
    let interrupt = Interrupt::current();
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        if interrupt.requested() {
            out.resize(m * n, 0.0);
            break;
        }
        let ra = &a[i * l..(i + 1) * l];
        out.extend((0..n).map(|j| f(ra, &b[j * l..(j + 1) * l])));
    }
    out
}

/// [`ChainEngine::scaled_chains`] by the model: [`Chain::run_scaled`] for every output (a preset without block
/// scales has one scale block per instruction).
pub fn scaled_chains_by_model(preset: &Preset, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8]) -> Vec<f32> {
    let chain = Chain::new(preset, ops.fa, ops.fb);
    let nb = ops.k.div_ceil(preset.scale_block().unwrap_or(preset.nfma()));
    per_output(ops, nb, scale_a, scale_b, |a, b, sa, sb| chain.run_scaled(a, b, sa, sb, 0.0))
}

/// [`ChainEngine::group_chains`] by the model: [`GroupChain::run`] for every output.
pub fn group_chains_by_model(chain: &GroupChain, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8]) -> Vec<f32> {
    let nb = ops.k.div_ceil(chain.scale_block());
    per_output(ops, nb, scale_a, scale_b, |a, b, sa, sb| chain.run(a, b, sa, sb, 0.0))
}

/// `run(a_i, b_j, scale_a_i, scale_b_j)` for every output, row by row (rows of `nb` scale codes), stopping with
/// zeros when an interrupt is requested.
fn per_output(
    ops: &Operands<'_>,
    nb: usize,
    scale_a: &[u8],
    scale_b: &[u8],
    run: impl Fn(&[u8], &[u8], &[u8], &[u8]) -> f32,
) -> Vec<f32> {
    let (a, b, l) = (ops.a, ops.b, ops.k);
    let interrupt = Interrupt::current();
    let mut out = Vec::with_capacity(ops.m * ops.n);
    for i in 0..ops.m {
        if interrupt.requested() {
            out.resize(ops.m * ops.n, 0.0);
            break;
        }
        let (ra, sa) = (&a[i * l..(i + 1) * l], &scale_a[i * nb..(i + 1) * nb]);
        out.extend((0..ops.n).map(|j| run(ra, &b[j * l..(j + 1) * l], sa, &scale_b[j * nb..(j + 1) * nb])));
    }
    out
}

/// Gather a chunk's columns of a [rows, k] matrix into a [rows, chunk.len] matrix, padding with 0x00.
pub fn gather(x: &[u8], rows: usize, k: usize, chunk: &Chunk) -> Vec<u8> {
    let mut out = vec![0u8; rows * chunk.len];
    for r in 0..rows {
        let src = &x[r * k..(r + 1) * k];
        let dst = &mut out[r * chunk.len..(r + 1) * chunk.len];
        let mut pos = 0;
        for range in &chunk.ranges {
            dst[pos..pos + range.len()].copy_from_slice(&src[range.clone()]);
            pos += range.len();
        }
    }
    out
}

/// Copy of `x` with every non-finite code replaced by 0x00 (§3.5 step 3), or None if it has none.
fn sanitised(x: &[u8], f: Format, engine: &dyn ChainEngine) -> Option<Vec<u8>> {
    if !engine.any_nonfinite(f, x) {
        return None;
    }
    Some(x.iter().map(|&c| if f.is_nonfinite(c) { 0 } else { c }).collect())
}

/// §3.5 steps 4–5 with [`ChainEngine::chains`]: for each split, for each chunk, gather the chunk's columns
/// and run its chains; a split's partial is ((+0 + c_0) + c_1) + ... in fp32 (a fast split's single chain,
/// as it is), an empty split's is +0; then the partials are combined by the plan's scheme (S = 1: as is).
pub fn run_plan_by_chunks<E: ChainEngine + ?Sized>(
    engine: &E,
    preset: &Preset,
    plan: &Plan,
    ops: &Operands<'_>,
) -> Vec<f32> {
    let (m, n, k) = (ops.m, ops.n, ops.k);
    let interrupt = Interrupt::current();
    let mut partials: Vec<Vec<f32>> = Vec::with_capacity(plan.splits().len());
    for split in plan.splits() {
        let mut partial = vec![0.0f32; m * n];
        for chunk in &split.chunks {
            if interrupt.requested() {
                // The caller discards the result ([`execute`] returns the interruption).
                break;
            }
            let ga = gather(ops.a, m, k, chunk);
            let gb = gather(ops.b, n, k, chunk);
            let chains = engine.chains(preset, &Operands { a: &ga, b: &gb, k: chunk.len, ..*ops });
            // ((+0 + c_0) + c_1) + ... in fp32, one chunk at a time. A fast split has one chunk, and its
            // partial +0 + c_0 is c_0 itself: a chain from +0 never returns -0 (a zero block result is +0).
            for (p, c) in partial.iter_mut().zip(chains) {
                *p += c;
            }
        }
        partials.push(partial);
    }
    if partials.len() == 1 {
        return partials.pop().unwrap_or_default();
    }
    let mut p = vec![0.0f32; partials.len()];
    (0..m * n)
        .map(|o| {
            for (x, partial) in p.iter_mut().zip(&partials) {
                *x = partial[o];
            }
            plan.combine(&p)
        })
        .collect()
}

/// Execute a plan (docs/reference.md §3.5): the fp32 accumulator [m, n] of A x B^T, before any epilogue.
pub fn execute(preset: &Preset, plan: &Plan, ops: &Operands<'_>, engine: &dyn ChainEngine) -> Result<Vec<f32>> {
    ops.check()?;
    if ops.k != plan.k() {
        return Err(Error::invalid_value(format!("the plan is for K = {}, the operands have K = {}", plan.k(), ops.k)));
    }
    let (m, n, k) = (ops.m, ops.n, ops.k);
    if m == 0 || n == 0 || k == 0 {
        return Ok(vec![0.0; m * n]);
    }
    // docs/reference.md §5.2 step 12: no result is computed while the calling thread flushes subnormals or
    // rounds other than to nearest.
    crate::fpenv::check()?;
    // The engines stop early when the caller interrupts the call (their output is then incomplete).
    let interrupt = Interrupt::current();
    // Finite operands (the common case) run as they are; the engine tells whether they were.
    if let Some(out) = engine.run_plan_checked(preset, plan, ops) {
        interrupt.check()?;
        return Ok(out);
    }
    interrupt.check()?;
    let sa = sanitised(ops.a, ops.fa, engine);
    let sb = sanitised(ops.b, ops.fb, engine);
    let a = sa.as_deref().unwrap_or(ops.a);
    let b = sb.as_deref().unwrap_or(ops.b);
    let mut out = engine.run_plan(preset, plan, &Operands { a, b, ..*ops });
    interrupt.check()?;

    // §3.7: patch outputs whose row of A or row of B holds a non-finite code, after the combination.
    nonfinite::patch(&mut out, ops);
    Ok(out)
}

/// The fp32 accumulator of A x B^T for a preset, fast or slow accumulation and a split (docs/reference.md §5.6
/// without the profile: the split is given). Builds the plan (§3.4) and executes it with the model.
pub fn accumulate(preset: &Preset, ops: &Operands<'_>, fast: bool, split: crate::plan::SplitK) -> Result<Vec<f32>> {
    let plan = Plan::new(preset, ops.k, fast, split)?;
    execute(preset, &plan, ops, &ReferenceEngine)
}
