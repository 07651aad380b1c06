//! The scale recipes a sweep records (`scaling`): tensor-wise, and the cuBLASLt scale modes of row-wise,
//! block-wise 1 x 128 / 128 x 128 and MXFP8 calls. Each recipe owns its two scale modes, the call object's
//! scale tensors (docs/recording-format.md, revision 2), their bytes as a scale pointer sees them, and what
//! the loaded cuBLASLt and the GPU must be to take it.

use crate::device::Platform;
use mmaemu_datasets::{ScaleLayout, ScaleSpec, ScaleValue, Scaling};
use mmaemu_model::block_call::BlockMode;
use mmaemu_model::SplitKey;
use serde::Deserialize;

/// `cublasLtMatmulMatrixScale_t` (cublasLt.h; 3 to 5 added in cuBLAS 12.9, 1 and 2 in 12.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScaleMode {
    /// `CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F` = 0: one fp32 scale.
    Scalar32F,
    /// `CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3` = 1: one e4m3 scale per 16 elements of K (NVFP4).
    Vec16Ue4m3,
    /// `CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0` = 2: one e8m0 scale per 32 elements of K (MXFP8).
    Vec32Ue8m0,
    /// `CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F` = 3: one fp32 scale per row of the outer dimension.
    OuterVec32F,
    /// `CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F` = 4: one fp32 scale per 128 elements of K.
    Vec128_32F,
    /// `CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F` = 5: one fp32 scale per 128 x 128 block.
    Blk128x128_32F,
}

impl ScaleMode {
    /// Every mode.
    pub const ALL: [ScaleMode; 6] = [
        ScaleMode::Scalar32F,
        ScaleMode::Vec16Ue4m3,
        ScaleMode::Vec32Ue8m0,
        ScaleMode::OuterVec32F,
        ScaleMode::Vec128_32F,
        ScaleMode::Blk128x128_32F,
    ];

    /// The value in cublasLt.h.
    pub fn value(self) -> u32 {
        match self {
            ScaleMode::Scalar32F => 0,
            ScaleMode::Vec16Ue4m3 => 1,
            ScaleMode::Vec32Ue8m0 => 2,
            ScaleMode::OuterVec32F => 3,
            ScaleMode::Vec128_32F => 4,
            ScaleMode::Blk128x128_32F => 5,
        }
    }

    /// The mode of a value, if the recorder knows it.
    pub fn from_value(v: u32) -> Option<ScaleMode> {
        ScaleMode::ALL.into_iter().find(|m| m.value() == v)
    }

    /// The name in cublasLt.h.
    pub fn name(self) -> &'static str {
        match self {
            ScaleMode::Scalar32F => "CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F",
            ScaleMode::Vec16Ue4m3 => "CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3",
            ScaleMode::Vec32Ue8m0 => "CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0",
            ScaleMode::OuterVec32F => "CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F",
            ScaleMode::Vec128_32F => "CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F",
            ScaleMode::Blk128x128_32F => "CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F",
        }
    }

    /// The first cuBLASLt (major, minor) that has the mode.
    pub fn since(self) -> (u32, u32) {
        match self {
            ScaleMode::Scalar32F => (0, 0),
            ScaleMode::Vec16Ue4m3 | ScaleMode::Vec32Ue8m0 => (12, 8),
            ScaleMode::OuterVec32F | ScaleMode::Vec128_32F | ScaleMode::Blk128x128_32F => (12, 9),
        }
    }

    /// The lowest compute capability major the mode runs on: the block-scaled tcgen05 instructions
    /// (sm_100) for the e8m0 / e4m3 block scales, Hopper for the fp32 vector and block scales.
    pub fn min_major(self) -> u32 {
        match self {
            ScaleMode::Scalar32F => 0,
            ScaleMode::Vec16Ue4m3 | ScaleMode::Vec32Ue8m0 => 10,
            ScaleMode::OuterVec32F | ScaleMode::Vec128_32F | ScaleMode::Blk128x128_32F => 9,
        }
    }
}

/// A sweep's `scaling` entry: how mat1 and mat2 are scaled (the words of the torch-level recorder's specs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScaleRecipe {
    /// One fp32 scale each (`scales`; no scale mode attribute is set, as torch 2.7 calls).
    #[default]
    Tensorwise,
    /// fp32 scales per row of mat1 ([m, 1]) and per column of mat2 ([1, n]): `OUTER_VEC_32F`.
    Rowwise,
    /// fp32 scales per 1 x 128 of mat1 and of mat2, column-major: `VEC128_32F` each.
    #[serde(rename = "blockwise_1x128")]
    Blockwise1x128,
    /// mat1 1 x 128 (`VEC128_32F`), mat2 128 x 128 (`BLK128x128_32F`): DeepSeek's recipe.
    #[serde(rename = "blockwise_1x128_128x128")]
    Blockwise1x128x128x128,
    /// e8m0 scales per 32 of K in cuBLAS's blocked layout: `VEC32_UE8M0` each.
    Mxfp8,
    /// e2m1 operands with e4m3 scales per 16 (`VEC16_UE4M3`): not recorded here (the operands are FP8).
    Nvfp4,
}

impl ScaleRecipe {
    /// The spec word.
    pub fn word(self) -> &'static str {
        match self {
            ScaleRecipe::Tensorwise => "tensorwise",
            ScaleRecipe::Rowwise => "rowwise",
            ScaleRecipe::Blockwise1x128 => "blockwise_1x128",
            ScaleRecipe::Blockwise1x128x128x128 => "blockwise_1x128_128x128",
            ScaleRecipe::Mxfp8 => "mxfp8",
            ScaleRecipe::Nvfp4 => "nvfp4",
        }
    }

    /// The scale modes of cuBLASLt's (A, B) = (mat2, mat1): None for tensor-wise (no mode attribute).
    pub fn modes(self) -> Option<(ScaleMode, ScaleMode)> {
        match self {
            ScaleRecipe::Tensorwise => None,
            ScaleRecipe::Rowwise => Some((ScaleMode::OuterVec32F, ScaleMode::OuterVec32F)),
            ScaleRecipe::Blockwise1x128 => Some((ScaleMode::Vec128_32F, ScaleMode::Vec128_32F)),
            ScaleRecipe::Blockwise1x128x128x128 => Some((ScaleMode::Blk128x128_32F, ScaleMode::Vec128_32F)),
            ScaleRecipe::Mxfp8 => Some((ScaleMode::Vec32Ue8m0, ScaleMode::Vec32Ue8m0)),
            ScaleRecipe::Nvfp4 => Some((ScaleMode::Vec16Ue4m3, ScaleMode::Vec16Ue4m3)),
        }
    }

    /// The model's block-scaled mode of the recipe (None: tensor-wise and row-wise, which `scaled_mm` computes).
    pub fn block_mode(self) -> Option<BlockMode> {
        match self {
            ScaleRecipe::Tensorwise | ScaleRecipe::Rowwise => None,
            ScaleRecipe::Blockwise1x128 => Some(BlockMode::Block128),
            ScaleRecipe::Blockwise1x128x128x128 => Some(BlockMode::Block128x128),
            ScaleRecipe::Mxfp8 => Some(BlockMode::Mx),
            ScaleRecipe::Nvfp4 => Some(BlockMode::Nvfp4),
        }
    }

    /// Why a spec cannot record the recipe at all (None: it can).
    pub fn refusal(self) -> Option<String> {
        (self == ScaleRecipe::Nvfp4).then(|| {
            "scaling \"nvfp4\" needs float4_e2m1fn_x2 operands, which the cuBLASLt recorder does not generate \
             (its operands are e4m3 / e5m2): record NVFP4 with `python -m mmaemu.record`"
                .to_string()
        })
    }

    /// Why torch would not make this call with this recipe (None: it would).
    pub fn precheck(self, p: &SplitKey) -> Option<String> {
        match self {
            ScaleRecipe::Mxfp8 if !p.k.is_multiple_of(32) => {
                Some(format!("K = {} is not a multiple of 32, as MXFP8's per-32 scales need", p.k))
            }
            ScaleRecipe::Blockwise1x128 | ScaleRecipe::Blockwise1x128x128x128 if !p.k.is_multiple_of(128) => {
                Some(format!("K = {} is not a multiple of 128, as the 1 x 128 block scales need", p.k))
            }
            _ => None,
        }
    }

    /// Why the loaded cuBLASLt or the GPU cannot take the recipe's scale modes (None: it can). An unknown
    /// cuBLASLt version is refused too: the gate is the version, never a guess.
    pub fn unsupported(self, platform: &Platform) -> Option<String> {
        let (a, b) = self.modes()?;
        let need = a.since().max(b.since());
        let major = a.min_major().max(b.min_major());
        let version = match platform.cublaslt.as_deref() {
            None => {
                return Some(format!(
                    "scaling {:?} needs cuBLASLt >= {}.{}: the loaded version is unknown",
                    self.word(),
                    need.0,
                    need.1
                ))
            }
            Some(v) => v,
        };
        let have = parse_version(version);
        if have.is_none_or(|h| h < need) {
            return Some(format!(
                "scaling {:?} needs {} and {} (cuBLASLt >= {}.{}); the loaded cuBLASLt is {version}",
                self.word(),
                a.name(),
                b.name(),
                need.0,
                need.1
            ));
        }
        if platform.capability.0 < major {
            return Some(format!(
                "scaling {:?} needs compute capability {major}.0 or above ({}); this GPU is {}.{}",
                self.word(),
                a.name(),
                platform.capability.0,
                platform.capability.1
            ));
        }
        None
    }

    /// Why the recipe is not recorded at the spec's scale pair `pair` (None: it is). Every recipe records the pair
    /// [1, 1] as its pattern; MXFP8 also records any other pair of powers of two that e8m0 holds (2^-127 to 2^127)
    /// as constant block scales (mat1's all `pair[0]`, mat2's all `pair[1]`): the calls whose products sit near the
    /// ends of fp32's range, where a block-scaled instruction's floor shows.
    pub fn scale_pair(self, pair: [f64; 2]) -> Option<String> {
        if self == ScaleRecipe::Tensorwise || pair == [1.0, 1.0] {
            return None;
        }
        if self != ScaleRecipe::Mxfp8 {
            return Some(format!(
                "scales {pair:?} apply to tensor-wise and mxfp8 cases only (scaling {:?} is recorded at [1.0, 1.0])",
                self.word()
            ));
        }
        let e8m0 = |x: f64| x > 0.0 && x.log2().fract() == 0.0 && (-127.0..=127.0).contains(&x.log2());
        (!pair.iter().all(|&x| e8m0(x))).then(|| {
            format!("scales {pair:?} are not both powers of two from 2^-127 to 2^127, as e8m0 block scales must be")
        })
    }

    /// The call object's `scale_a` (mat1's) and `scale_b` (mat2's) of an m x n x k call: the tensors torch
    /// takes for the recipe, filled with the `rowwise` (fp32) or `pow2` (e8m0, e4m3) pattern, or for MXFP8 at a
    /// scale pair other than [1, 1] with that pair's constants ([`ScaleRecipe::scale_pair`]). None for
    /// tensor-wise (the row's scale columns hold the scalars).
    pub fn call_scales(self, m: usize, n: usize, k: usize, pair: [f64; 2]) -> Option<(ScaleSpec, ScaleSpec)> {
        let d = |x: usize, b: usize| x.div_ceil(b) as i64;
        let (m_, n_) = (m as i64, n as i64);
        let spec = |dtype: &str, shape: Vec<i64>, value, scaling, layout| ScaleSpec {
            scaling: Some(scaling),
            layout,
            ..ScaleSpec::plain(dtype, shape, value)
        };
        let f32 = |shape, scaling, layout| spec("float32", shape, ScaleValue::Rowwise, scaling, layout);
        let k128 = d(k, 128);
        let col128 = |rows: i64| f32(vec![rows, k128], Scaling::BlockWise1x128, ScaleLayout::Col);
        Some(match self {
            ScaleRecipe::Tensorwise => return None,
            ScaleRecipe::Rowwise => (
                f32(vec![m_, 1], Scaling::RowWise, ScaleLayout::Std),
                f32(vec![1, n_], Scaling::RowWise, ScaleLayout::Std),
            ),
            ScaleRecipe::Blockwise1x128 => (col128(m_), col128(n_)),
            ScaleRecipe::Blockwise1x128x128x128 => {
                (col128(m_), f32(vec![d(n, 128), k128], Scaling::BlockWise128x128, ScaleLayout::Std))
            }
            ScaleRecipe::Mxfp8 => {
                let value = |x: f64| if pair == [1.0, 1.0] { ScaleValue::Pow2 } else { ScaleValue::Number(x) };
                let e8 = |rows: i64, x: f64| {
                    spec("float8_e8m0fnu", vec![rows, d(k, 32)], value(x), Scaling::BlockWise1x32, ScaleLayout::Blocked)
                };
                (e8(m_, pair[0]), e8(n_, pair[1]))
            }
            ScaleRecipe::Nvfp4 => {
                let e4 = |rows: i64| {
                    spec(
                        "float8_e4m3fn",
                        vec![rows, d(k, 16)],
                        ScaleValue::Pow2,
                        Scaling::BlockWise1x16,
                        ScaleLayout::Blocked,
                    )
                };
                (e4(m_), e4(n_))
            }
        })
    }
}

/// A recipe's scale tensors for one call: the call object's `scale_a` (mat1) and `scale_b` (mat2) and
/// their bytes as the scale pointers see them.
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeScales {
    /// The recipe.
    pub recipe: ScaleRecipe,
    /// mat1's scale (cuBLASLt's B scale).
    pub a: ScaleSpec,
    /// mat2's scale (cuBLASLt's A scale).
    pub b: ScaleSpec,
    /// `a`'s bytes.
    pub a_bytes: Vec<u8>,
    /// `b`'s bytes.
    pub b_bytes: Vec<u8>,
}

impl RecipeScales {
    /// The scales of `recipe` for an m x n x k call at the spec's scale pair `pair` (None for tensor-wise).
    pub fn new(
        recipe: ScaleRecipe,
        m: usize,
        n: usize,
        k: usize,
        pair: [f64; 2],
    ) -> Result<Option<RecipeScales>, String> {
        let Some((a, b)) = recipe.call_scales(m, n, k, pair) else { return Ok(None) };
        let (a_bytes, b_bytes) = (storage_bytes(&a)?, storage_bytes(&b)?);
        Ok(Some(RecipeScales { recipe, a, b, a_bytes, b_bytes }))
    }
}

/// `major.minor[.patch]` as (major, minor).
fn parse_version(v: &str) -> Option<(u32, u32)> {
    let mut it = v.split('.');
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The logical values of a scale tensor, row-major over its shape (the datasets crate's one builder).
pub fn logical_values(s: &ScaleSpec) -> Result<Vec<f64>, String> {
    s.logical_values()
}

/// The bytes of a scale tensor as its scale pointer sees them (the datasets crate's one builder).
pub fn storage_bytes(s: &ScaleSpec) -> Result<Vec<u8>, String> {
    s.storage_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ONE: [f64; 2] = [1.0, 1.0];

    fn platform(cublaslt: Option<&str>, cap: (u32, u32)) -> Platform {
        Platform {
            json: json!({}),
            gpu_short: "x".into(),
            capability: cap,
            cublaslt: cublaslt.map(str::to_string),
            simulated: false,
        }
    }

    #[test]
    fn gates_name_the_version() {
        let h = |v| platform(Some(v), (9, 0));
        assert_eq!(ScaleRecipe::Tensorwise.unsupported(&platform(None, (8, 9))), None);
        let e = ScaleRecipe::Rowwise.unsupported(&h("12.8.3")).unwrap();
        assert!(e.contains("OUTER_VEC_32F") && e.contains("12.9") && e.contains("12.8.3"), "{e}");
        assert_eq!(ScaleRecipe::Rowwise.unsupported(&h("12.9.0")), None);
        assert_eq!(ScaleRecipe::Blockwise1x128x128x128.unsupported(&h("13.0.0")), None);
        let e = ScaleRecipe::Mxfp8.unsupported(&h("13.0.0")).unwrap();
        assert!(e.contains("10.0") && e.contains("9.0"), "{e}");
        assert_eq!(ScaleRecipe::Mxfp8.unsupported(&platform(Some("12.8.0"), (10, 0))), None);
        assert!(ScaleRecipe::Rowwise.unsupported(&platform(None, (9, 0))).unwrap().contains("unknown"));
        assert!(ScaleRecipe::Rowwise.unsupported(&platform(Some("12.9.0"), (8, 9))).is_some());
    }

    #[test]
    fn storage_follows_the_layout() {
        let (a, b) = ScaleRecipe::Blockwise1x128.call_scales(3, 16, 256, ONE).unwrap();
        assert_eq!((a.shape.clone(), b.shape.clone()), (vec![3, 2], vec![16, 2]));
        // Column-major: logical (r, c) at c * rows + r.
        let bytes = storage_bytes(&a).unwrap();
        let at = |i: usize| f32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap()) as f64;
        let v = logical_values(&a).unwrap();
        assert_eq!((at(0), at(1), at(3)), (v[0], v[2], v[1]));
        // Blocked: [130, 2] pads to [256, 4]; padding is zero.
        let (ma, _) = ScaleRecipe::Mxfp8.call_scales(130, 16, 64, ONE).unwrap();
        let bytes = storage_bytes(&ma).unwrap();
        assert_eq!(bytes.len(), 256 * 4);
        let v = logical_values(&ma).unwrap();
        let p = ScaleSpec::position(ScaleLayout::Blocked, 130, 2, 129, 1) as usize;
        // e8m0 of a power of two 2^e is the biased exponent e + 127.
        assert_eq!(bytes[p], (v[129 * 2 + 1].log2() as i32 + 127) as u8);
        assert_eq!(bytes.iter().filter(|&&x| x != 0).count(), 260);
        // Row-wise: [m, 1] and [1, n], plain.
        let (ra, rb) = ScaleRecipe::Rowwise.call_scales(5, 32, 64, ONE).unwrap();
        assert_eq!((storage_bytes(&ra).unwrap().len(), storage_bytes(&rb).unwrap().len()), (20, 128));
        assert!(ScaleRecipe::Tensorwise.call_scales(5, 32, 64, ONE).is_none());
    }

    /// Every pair but [1, 1] and e8m0's powers of two is refused with the reason: zero, negatives, non-powers,
    /// out of e8m0's range, non-finite; other recipes take [1, 1] only.
    #[test]
    fn hostile_scale_pairs_are_skips_with_a_reason() {
        let two = |e: i32| 2f64.powi(e);
        assert_eq!(ScaleRecipe::Mxfp8.scale_pair([two(-127), two(127)]), None);
        assert_eq!(ScaleRecipe::Tensorwise.scale_pair([0.3, f64::NAN]), None);
        for pair in [
            [0.0, 1.0],
            [-0.5, 1.0],
            [1.0, -2.0],
            [3.0, 1.0],
            [two(-128), 1.0],
            [1.0, two(128)],
            [f64::NAN, 1.0],
            [f64::INFINITY, 1.0],
            [f64::MIN_POSITIVE / 4.0, 1.0],
        ] {
            let why = ScaleRecipe::Mxfp8.scale_pair(pair).unwrap_or_else(|| panic!("{pair:?} taken"));
            assert!(why.contains("powers of two from 2^-127 to 2^127"), "{why}");
        }
        let why = ScaleRecipe::Rowwise.scale_pair([0.5, 2.0]).unwrap();
        assert!(why.contains("tensor-wise and mxfp8 cases only"), "{why}");
    }

    #[test]
    fn modes_match_the_header() {
        for m in ScaleMode::ALL {
            assert_eq!(ScaleMode::from_value(m.value()), Some(m));
        }
        assert_eq!(
            ScaleRecipe::Blockwise1x128x128x128.modes(),
            Some((ScaleMode::Blk128x128_32F, ScaleMode::Vec128_32F))
        );
        assert!(ScaleRecipe::Nvfp4.refusal().is_some() && ScaleRecipe::Mxfp8.refusal().is_none());
    }
}
