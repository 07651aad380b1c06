//! The CUTLASS kernel torch 2.7.1 runs for row-wise scaled FP8 GEMMs (`f8f8bf16_rowwise`, docs/reference.md §4.2):
//! which kernel a shape gets on sm_90 and sm_89 (schedule, tile, operand swap), the accumulation plan it implies,
//! and its epilogue (two fp32 scale multiplies in the kernel's order, the fp32 bias add, one bf16 rounding).

// Sources (read, not copied):
// - pytorch/pytorch aten/src/ATen/native/cuda/RowwiseScaledMM.cu (read at commit 01386a0dab6f, whose sm_90 and
//   sm_89 paths are those of the v2.7.1 tag e2d141dbde55 as far as the 2.7.1 wheel's kernel names show; the file
//   of the tag itself was not read): `dispatch_fp8_rowwise_kernel_on_cluster_size_and_transpose` (the swap),
//   `dispatch_fp8_rowwise_kernel_on_tile_size` (the tile), `Schedule<LargeTile, FastAccum>`, the epilogue
//   visitor tree `Cast(Add(Bias, Multiply(WScale, Multiply(XScale, Accum))))` (sm_90) and
//   `Output(ApplyBias(ApplyWScale(ApplyXScale(Accum, XScale), WScale), Bias))` (sm_89), `check_inputs`.
// - NVIDIA/cutlass include/cutlass/gemm/collective/fp8_accumulation.hpp (commit 03a62b4143f4):
//   `GmmaFP8Accumulation::promote_core` adds the tensor-core accumulator to the main fp32 accumulator
//   (`accum_(i) += accum_temp_(i)`) every `mma_promotion_interval` (default 4) MMAs of K = 32, i.e. every 128
//   of K with the 128-deep k-tile; the FastAccum schedules never promote.

use crate::epilogue::f32_to_bf16;
use crate::error::{Error, Result};
use crate::plan::SplitK;
use crate::profile::Profile;

/// Where the kernel's description comes from (named by `explain` and the docs).
pub const SOURCE: &str = "pytorch aten/src/ATen/native/cuda/RowwiseScaledMM.cu (f8f8bf16_rowwise, torch 2.7.1) and \
                          cutlass include/cutlass/gemm/collective/fp8_accumulation.hpp";

/// The GPU architecture a row-wise kernel is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// sm_90 (H100, H200): CUTLASS 3.x, TMA warp-specialized, wgmma `MMA_64x128x32_F32E4M3E4M3`.
    Sm90,
    /// sm_89 (Ada): CUTLASS 2.x, mma.sync m16n8k32, stream-K threadblock swizzle.
    Sm89,
}

/// The order of the two scale multiplies of the sm_90 epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleOrder {
    /// RN32(ws · RN32(xs · acc)): the kernel runs on (mat1, mat2) as given.
    XThenW,
    /// RN32(xs · RN32(ws · acc)): the kernel runs on the swapped problem (mat2ᵀ, mat1ᵀ), whose "x" scale is
    /// scale_b.
    WThenX,
}

/// The kernel a row-wise call gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowwiseKernel {
    /// The architecture.
    pub arch: Arch,
    /// The kernel schedule (CUTLASS's name).
    pub schedule: &'static str,
    /// The threadblock tile (M, N, K) of the problem the kernel runs (the swapped one when swapped).
    pub tile: [usize; 3],
    /// The cluster shape (M, N), sm_90 only ([1, 1] on sm_89).
    pub cluster: [usize; 2],
    /// Does the kernel run on (mat2ᵀ, mat1ᵀ)?
    pub swapped: bool,
    /// Fast accumulation (no promotion; on sm_89 the same instruction either way).
    pub fast: bool,
}

fn ceil_div(a: usize, b: usize) -> usize {
    a.div_ceil(b)
}

impl RowwiseKernel {
    /// The kernel of a profile's architecture (capability 9.x or 8.9), or UnsupportedFeatureError.
    pub fn for_profile(profile: &Profile, m: usize, n: usize, fast: bool) -> Result<RowwiseKernel> {
        match profile.capability {
            (9, _) => Ok(RowwiseKernel::sm90(m, n, fast, profile.sm_count.unwrap_or(132) as usize)),
            (8, 9) => Ok(RowwiseKernel::sm89(m, fast)),
            (major, minor) => Err(Error::unsupported(format!(
                "row-wise scales are modelled on sm_90 and sm_89 only (torch 2.7.1's CUTLASS f8f8bf16_rowwise); \
                 profile '{}' is sm_{major}{minor}",
                profile.name
            ))),
        }
    }

    /// sm_90: the swap and cluster of `dispatch_fp8_rowwise_kernel_on_cluster_size_and_transpose`, then the tile
    /// of `dispatch_fp8_rowwise_kernel_on_tile_size` for `sms` SMs, then `Schedule<LargeTile, FastAccum>`.
    pub fn sm90(m: usize, n: usize, fast: bool, sms: usize) -> RowwiseKernel {
        let (mr, nr) = (m.div_ceil(64) * 64, n.div_ceil(64) * 64);
        let (c12, c21) = ([1, 2], [2, 1]);
        // (applies, cluster, swapped), in the source's order: the first that applies decides.
        let rules = [
            (mr == 64 && nr >= 3072, c12, false),
            (nr == 64 && mr >= 3072, c12, true),
            (mr == 192 && nr >= 4096, c12, true),
            (nr == 192 && mr >= 4096, c12, false),
            (mr * nr <= 4096 * 4096 && mr % 256 > 0 && nr % 256 == 0, c21, true),
            (mr * nr <= 4096 * 4096 && nr % 256 > 0 && mr % 256 == 0, c21, false),
            (mr % 256 > 0 && nr % 256 > 0, c21, (mr <= nr) ^ (mr * nr <= 1024 * 1024)),
            (mr >= 4096 && nr >= 4096, c21, mr < nr),
            ((mr <= nr) ^ (mr >= 2048 && nr >= 2048), c12, true),
        ];
        let (cluster, swapped) = rules.iter().find(|r| r.0).map_or((c21, true), |r| (r.1, r.2));
        // The tile heuristic sees the (possibly swapped) problem's M and N.
        let (pm, pn) = if swapped { (n, m) } else { (m, n) };
        let small = ceil_div(pm, 64 * cluster[0]) * ceil_div(pn, 128 * cluster[1]) <= sms / (cluster[0] * cluster[1]);
        let tile = if small { [64, 128, 128] } else { [128, 128, 128] };
        let schedule = match (small, fast) {
            (true, false) => "KernelTmaWarpSpecialized (MainloopSm90TmaGmmaWarpSpecializedFP8)",
            (false, false) => "KernelTmaWarpSpecializedCooperative (MainloopSm90TmaGmmaWarpSpecializedFP8)",
            (true, true) => "KernelTmaWarpSpecializedFP8FastAccum",
            (false, true) => "KernelTmaWarpSpecializedPingpongFP8FastAccum",
        };
        RowwiseKernel { arch: Arch::Sm90, schedule, tile, cluster, swapped, fast }
    }

    /// sm_89: the threadblock tile of `dispatch_fp8_rowwise_kernel_sm89` (never swapped).
    pub fn sm89(m: usize, fast: bool) -> RowwiseKernel {
        let tile = match m {
            0..=16 => [16, 64, 128],
            17..=32 => [32, 64, 128],
            33..=64 => [64, 64, 128],
            65..=256 => [64, 128, 128],
            _ => [128, 128, 64],
        };
        let schedule = "CUTLASS 2.x GemmUniversal with visitor epilogue, ThreadblockSwizzleStreamK";
        RowwiseKernel { arch: Arch::Sm89, schedule, tile, cluster: [1, 1], swapped: false, fast }
    }

    /// The scale order of the epilogue.
    pub fn order(&self) -> ScaleOrder {
        if self.swapped {
            ScaleOrder::WThenX
        } else {
            ScaleOrder::XThenW
        }
    }

    /// Does the accumulation promote every 128 of K into an fp32 accumulator (sm_90 without fast accumulation)?
    /// On sm_89 `OpMultiplyAdd` and `OpMultiplyAddFastAccum` issue the same mma.sync: one chain over K.
    pub fn promotes(&self) -> bool {
        self.arch == Arch::Sm90 && !self.fast
    }

    /// The accumulation plan's split: sm_90 never splits K (no split-K, no stream-K); sm_89's stream-K order is
    /// not public, so the caller's explicit split (`given`) is required.
    pub fn split(&self, given: Option<SplitK>, profile: &Profile) -> Result<SplitK> {
        match (self.arch, given) {
            (Arch::Sm90, None) => Ok(SplitK::NONE),
            (Arch::Sm90, Some(s)) if s.s() == 1 => Ok(s),
            (Arch::Sm90, Some(s)) => Err(Error::invalid_value(format!(
                "splitk={s}: the CUTLASS row-wise kernel on sm_90 never splits K (profile '{}'); pass splitk=1 or \
                 'auto'",
                profile.name
            ))),
            (Arch::Sm89, Some(s)) => Ok(s),
            (Arch::Sm89, None) => unreachable_split(profile),
        }
    }

    /// A one-line description for `explain`.
    pub fn describe(&self) -> String {
        let arch = match self.arch {
            Arch::Sm90 => "sm_90",
            Arch::Sm89 => "sm_89",
        };
        let order = match self.order() {
            ScaleOrder::XThenW => "bf16(RN32(bias + RN32(scale_b * RN32(scale_a * acc))))",
            ScaleOrder::WThenX => "bf16(RN32(bias + RN32(scale_a * RN32(scale_b * acc))))",
        };
        let accumulation = if self.promotes() {
            "fp32 promotion every 128 of K (4 MMAs of K = 32)"
        } else {
            "one tensor-core chain over K"
        };
        format!(
            "CUTLASS f8f8bf16_rowwise {arch}: {}, tile {}x{}x{}, cluster {}x{}, operands {}, {accumulation}, \
             epilogue {order}",
            self.schedule,
            self.tile[0],
            self.tile[1],
            self.tile[2],
            self.cluster[0],
            self.cluster[1],
            if self.swapped { "swapped (mat2^T x mat1^T)" } else { "as given" },
        )
    }
}

/// The SplitKUnknownError of a row-wise call on sm_89 without an explicit split.
fn unreachable_split(profile: &Profile) -> Result<SplitK> {
    Err(Error::new(
        crate::error::Category::SplitKUnknown,
        format!(
            "splitk='auto' cannot be resolved for a row-wise call on profile '{}': torch 2.7.1 runs CUTLASS \
             f8f8bf16_rowwise on sm_89 with a stream-K threadblock swizzle, whose division of K and order of \
             reduction are not public. Ways out: (1) pass splitk=1 if the call is known to run unsplit (one \
             chain over K per output); (2) pass splitk=(S, scheme) if the split and its order are known; (3) \
             record the call on the GPU with the torch-level recorder",
            profile.name
        ),
    ))
}

/// The row-wise epilogue: per-row scale_a, per-column scale_b, optional bias (its elements' exact values), and
/// the kernel's scale order. The result is bfloat16.
#[derive(Clone, Debug, PartialEq)]
pub struct RowwiseEpilogue {
    /// scale_a, one fp32 value per row of the result.
    pub scale_a: Vec<f32>,
    /// scale_b, one fp32 value per column.
    pub scale_b: Vec<f32>,
    /// The bias, one value per column (bf16 values widened to fp32, exactly); None: the kernel's null bias, +0.
    pub bias: Option<Vec<f32>>,
    /// Which scale multiplies first.
    pub order: ScaleOrder,
}

/// The steps of the row-wise epilogue for one element (for traces).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowwiseSteps {
    /// The scale applied first (scale_a for [`ScaleOrder::XThenW`]) and RN32(it · acc).
    pub first: (f32, f32),
    /// The scale applied second and RN32(it · first).
    pub second: (f32, f32),
    /// The bias value (+0 without a bias) and RN32(bias + second).
    pub biased: (f32, f32),
    /// The bf16 bits.
    pub bits: u16,
}

impl RowwiseEpilogue {
    /// One element step by step: two fp32 multiplies in the kernel's order, the bias add (+0 without a bias:
    /// CUTLASS's broadcast of a null pointer reads 0), each rounded to nearest even in fp32 (Rust's f32 `*` and
    /// `+`), then bf16 round to nearest even with a canonical NaN.
    pub fn steps(&self, acc: f32, i: usize, j: usize) -> RowwiseSteps {
        let (xs, ws) = (self.scale_a[i], self.scale_b[j]);
        let (s1, s2) = match self.order {
            ScaleOrder::XThenW => (xs, ws),
            ScaleOrder::WThenX => (ws, xs),
        };
        let t = s1 * acc;
        let u = s2 * t;
        let bias = self.bias.as_ref().map_or(0.0, |b| b[j]);
        let v = bias + u;
        RowwiseSteps { first: (s1, t), second: (s2, u), biased: (bias, v), bits: f32_to_bf16(v) }
    }

    /// One element's bf16 bits ([`RowwiseEpilogue::steps`]).
    pub fn apply_one(&self, acc: f32, i: usize, j: usize) -> u16 {
        self.steps(acc, i, j).bits
    }

    /// The [m, n] row-major accumulator through the epilogue: bf16 bits.
    pub fn apply(&self, acc: &[f32], m: usize, n: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(m * n);
        for i in 0..m {
            out.extend((0..n).map(|j| self.apply_one(acc[i * n + j], i, j) as u32));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_heuristic_examples() {
        // Written from dispatch_fp8_rowwise_kernel_on_cluster_size_and_transpose, case by case.
        assert!(!RowwiseKernel::sm90(64, 4096, false, 132).swapped); // M == 64, N >= 3072
        assert!(RowwiseKernel::sm90(4096, 64, false, 132).swapped); // N == 64, M >= 3072
        assert!(RowwiseKernel::sm90(192, 4096, false, 132).swapped);
        assert!(RowwiseKernel::sm90(128, 512, false, 132).swapped); // M % 256 > 0, N % 256 == 0
        assert!(!RowwiseKernel::sm90(512, 128, false, 132).swapped);
        // Both odd multiples of 128, small: (M <= N) ^ (M N <= 2^20) = true ^ true = false.
        assert!(!RowwiseKernel::sm90(128, 384, false, 132).swapped);
        assert!(RowwiseKernel::sm90(8192, 4096, false, 132).order() == ScaleOrder::XThenW); // M >= N
        assert!(RowwiseKernel::sm90(4096, 8192, false, 132).swapped);
        assert!(RowwiseKernel::sm90(256, 512, false, 132).swapped); // (M <= N) ^ false
        assert!(RowwiseKernel::sm90(2048, 2048, false, 132).swapped); // true ^ true = false -> cluster 2x1, swapped
    }

    #[test]
    fn tile_heuristic() {
        // 64 x 128 tiles while the grid fits the SMs: M = 64, N = 4096, cluster 1x2: 1 * 16 <= 66.
        assert_eq!(RowwiseKernel::sm90(64, 4096, false, 132).tile, [64, 128, 128]);
        assert_eq!(RowwiseKernel::sm90(8192, 8192, true, 132).tile, [128, 128, 128]);
    }

    #[test]
    fn epilogue_orders_and_zero() {
        let e = RowwiseEpilogue { scale_a: vec![3.0], scale_b: vec![1.0 / 3.0], bias: None, order: ScaleOrder::XThenW };
        // 1/3 rounds to 0x3EAAAAAB; 3 * (1/3)_f32 = 1.0000000298 -> 1.0 in fp32.
        assert_eq!(e.apply_one(1.0, 0, 0), 0x3F80);
        // A -0 accumulator scaled stays -0; the null bias adds +0: +0.
        assert_eq!(e.apply_one(-0.0, 0, 0), 0x0000);
        let b = RowwiseEpilogue { bias: Some(vec![-1.0]), ..e.clone() };
        assert_eq!(b.apply_one(1.0, 0, 0), 0x0000);
    }
}
