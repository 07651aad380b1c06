//! The one builder of a call object's scale tensors (docs/recording-format.md, revision 2): a scale's logical values,
//! its element codes in its dtype, and its bytes in its layout as a scale pointer sees them, each size checked
//! against the MMAEMU_MAX_BYTES ceiling before anything is allocated. The recorders and the replay share it.

use crate::call::ScaleSpec;
use crate::call::Scaling;
use mmaemu_model::block_call::{BlockMode, BlockScales};
use mmaemu_model::block_gemm::BlockShape;
use mmaemu_model::dtype::Dtype;
use mmaemu_model::scaled_mm::ScaleTensor;

impl ScaleSpec {
    /// The logical values, row-major over `shape` (element i of the value's pattern). Errors: a negative or
    /// overflowing shape, or more than the ceiling allows.
    pub fn logical_values(&self) -> Result<Vec<f64>, String> {
        let dims: Vec<u64> = self
            .shape
            .iter()
            .map(|&d| u64::try_from(d).map_err(|_| format!("scale shape {:?} has a negative dimension", self.shape)))
            .collect::<Result<_, _>>()?;
        let count = crate::limits::product(&dims);
        crate::limits::check_in_force("a scale tensor", count.and_then(|c| c.checked_mul(8)))?;
        Ok((0..count.unwrap_or(0) as usize).map(|i| self.value.element(i)).collect())
    }

    /// The model's tensor of the scale (what `scaled_mm` gets): the logical values, row-major, in the scale's dtype.
    pub fn model_tensor(&self) -> Result<ScaleTensor, String> {
        let values = self.logical_values()?;
        Ok(ScaleTensor {
            dtype: Dtype::from_name(&self.dtype),
            shape: self.shape.iter().map(|&d| d as usize).collect(),
            values,
            contiguous: true,
        })
    }

    /// The logical values as codes of the scale's dtype: fp32 little-endian (4 bytes each), or one e8m0 / e4m3 code
    /// per element.
    pub fn logical_bytes(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        for x in self.logical_values()? {
            out.extend(encode(&self.dtype, x)?);
        }
        Ok(out)
    }

    /// The bytes of the tensor as its scale pointer sees them: the logical values in the tensor's layout (row-major,
    /// column-major, or cuBLAS's blocked layout with all-zero padding).
    pub fn storage_bytes(&self) -> Result<Vec<u8>, String> {
        let width = crate::dtype_width(&self.dtype).ok_or_else(|| format!("unknown scale dtype {}", self.dtype))?;
        let elements = self.storage_elements().ok_or_else(|| format!("scale shape {:?} overflows", self.shape))?;
        let bytes = elements.checked_mul(width as u64);
        crate::limits::check_in_force("a scale tensor's storage", bytes)?;
        let values = self.logical_values()?;
        let (rows, cols) = match self.shape.as_slice() {
            [r, c] => (*r as u64, *c as u64),
            _ => (1, values.len() as u64),
        };
        let mut out = vec![0u8; bytes.unwrap_or(0) as usize];
        for (i, &x) in values.iter().enumerate() {
            let (r, c) = (i as u64 / cols.max(1), i as u64 % cols.max(1));
            let at = ScaleSpec::position(self.layout, rows, cols, r, c) as usize * width;
            out[at..at + width].copy_from_slice(&encode(&self.dtype, x)?);
        }
        Ok(out)
    }
}

/// A block-scaled call's two scale tensors (mat1's `a`, mat2's `b`) as the model's GEMM of `mode` takes them: the
/// blocked codes and NVFP4's global scales (MXFP8, NVFP4), or the logical fp32 values with their block shape
/// (block-wise 1x128 / 128x128). Replay and the simulated device both build them here.
pub fn block_scales(mode: BlockMode, a: &ScaleSpec, b: &ScaleSpec) -> Result<BlockScales, String> {
    Ok(match mode {
        BlockMode::Mx | BlockMode::Nvfp4 => {
            let global = |s: &ScaleSpec| s.global.as_ref().map_or(1.0, |g| g.element(0) as f32);
            BlockScales::Blocked { a: a.storage_bytes()?, b: b.storage_bytes()?, global: (global(a), global(b)) }
        }
        BlockMode::Block128 | BlockMode::Block128x128 => {
            let logical = |s: &ScaleSpec| -> Result<(Vec<f32>, BlockShape), String> {
                let shape = match s.scaling {
                    Some(Scaling::BlockWise128x128) => BlockShape::Blk128x128,
                    _ => BlockShape::Vec1x128,
                };
                Ok((s.logical_values()?.into_iter().map(|x| x as f32).collect(), shape))
            };
            BlockScales::Logical { a: logical(a)?, b: logical(b)? }
        }
    })
}

/// One scale element's bytes in the tensor's dtype: fp32 little-endian, or the e8m0 / e4m3 code of a power of two
/// (the only values the recipes' `pow2` pattern holds); anything else is an error.
fn encode(dtype: &str, x: f64) -> Result<Vec<u8>, String> {
    let pow2 = || (x > 0.0 && x.log2().fract() == 0.0).then(|| x.log2() as i32);
    match dtype {
        "float32" => Ok((x as f32).to_le_bytes().to_vec()),
        // e8m0: the biased exponent (bias 127).
        "float8_e8m0fnu" => match pow2() {
            Some(e) if (-127..=127).contains(&e) => Ok(vec![(e + 127) as u8]),
            _ => Err(format!("{x} is not a power of two e8m0 holds")),
        },
        // e4m3fn: a normal power of two is the biased exponent (bias 7) in bits 6..3, mantissa 0.
        "float8_e4m3fn" => match pow2() {
            Some(e) if (-6..=8).contains(&e) => Ok(vec![((e + 7) as u8) << 3]),
            _ => Err(format!("{x} is not a normal power of two of e4m3")),
        },
        other => Err(format!("scale dtype {other} is not float32, float8_e8m0fnu or float8_e4m3fn")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_of_powers_of_two() {
        // e8m0 1.0 = 127, 2^-3 = 124; e4m3 1.0 = 0x38, 8.0 = 0x50, 0.125 = 0x20 (OCP FP8 tables).
        assert_eq!(encode("float8_e8m0fnu", 1.0).unwrap(), [127]);
        assert_eq!(encode("float8_e8m0fnu", 0.125).unwrap(), [124]);
        assert_eq!(encode("float8_e4m3fn", 1.0).unwrap(), [0x38]);
        assert_eq!(encode("float8_e4m3fn", 8.0).unwrap(), [0x50]);
        assert_eq!(encode("float8_e4m3fn", 0.125).unwrap(), [0x20]);
        assert!(encode("float8_e4m3fn", 0.75).is_err());
        assert!(encode("float8_e8m0fnu", -1.0).is_err());
        assert_eq!(encode("float32", 0.3125).unwrap(), 0.3125f32.to_le_bytes());
    }
}
