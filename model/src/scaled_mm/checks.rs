//! The ordered checks of `scaled_mm` (docs/reference.md §5.2): the argument structure the Rust types leave
//! open (step 1), torch's own checks, and the cuBLASLt checks that decide the formats and the out dtype.

use super::*;

impl ScaledMm<'_> {
    /// §5.2 step 1: what the Rust types leave open — a view whose strides do not match its shape, or an
    /// out= whose storage does not hold it — is an invalid argument, before every other check. `explain`
    /// (`dry`) reads no data, so it does not look at storage sizes.
    pub(super) fn argument_checks(&self, dry: bool) -> Result<()> {
        for (name, shape, strides) in
            [("input", &self.input.shape, &self.input.strides), ("mat2", &self.mat2.shape, &self.mat2.strides)]
        {
            if shape.len() != strides.len() {
                return Err(Error::wrong_type(format!(
                    "{name}: a view needs one stride per dimension (shape {shape:?}, strides {strides:?})"
                )));
            }
        }
        if let Some(out) = &self.out {
            if out.shape.len() != out.strides.len() {
                return Err(Error::wrong_type(format!(
                    "out: a tensor needs one stride per dimension (shape {:?}, strides {:?})",
                    out.shape, out.strides
                )));
            }
            if !dry {
                out.check_extent("out")?;
            }
        }
        for (name, s) in [
            ("scale_a", Some(&self.scale_a)),
            ("scale_b", Some(&self.scale_b)),
            ("scale_result", self.scale_result.as_ref()),
        ] {
            if let Some(s) = s {
                // A scale of more than one element may come without its values: no check reads them (it is
                // refused or unsupported by its shape), and a caller need not gather a huge broadcast one.
                if s.values.len() != s.numel() && !(s.values.is_empty() && s.numel() != 1) {
                    return Err(Error::wrong_type(format!(
                        "{name}: {} values for a tensor of shape {:?}",
                        s.values.len(),
                        s.shape
                    )));
                }
            }
        }
        if let Some(bias) = &self.bias {
            if !bias.values.is_empty() && bias.values.len() != bias.numel {
                return Err(Error::wrong_type(format!(
                    "bias: {} values for {} elements",
                    bias.values.len(),
                    bias.numel
                )));
            }
        }
        Ok(())
    }

    /// §5.2 step 2: torch 2.7.1's argument checks, in order.
    pub(super) fn torch_checks(&self) -> Result<()> {
        let (a, b) = (&self.input, &self.mat2);
        if a.dim() != 2 {
            return Err(r("mat1 must be a matrix".into()));
        }
        if b.dim() != 2 {
            return Err(r("mat2 must be a matrix".into()));
        }
        let (m, k) = (a.shape[0], a.shape[1]);
        let (k2, n) = (b.shape[0], b.shape[1]);
        if k != k2 {
            return Err(r(format!("mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})")));
        }
        if self.scale_a.dtype != Dtype::Float32 || self.scale_b.dtype != Dtype::Float32 {
            return Err(r(format!(
                "Both scale_a and scale_b must be float (fp32) tensors (got {} and {}).",
                self.scale_a.dtype, self.scale_b.dtype
            )));
        }
        if self.is_rowwise() {
            let (sa, sb) = (&self.scale_a, &self.scale_b);
            if sa.shape.len() != 2 || sb.shape.len() != 2 {
                return Err(r("For non-TensorWise scaling, scale tensors must be 2-dimensional".into()));
            }
            if sa.shape == [m, 1] && sb.shape == [1, n] {
                if !sa.contiguous || !sb.contiguous {
                    return Err(r("Both scale_a and scale_b must be contiguous for RowWise scaling.".into()));
                }
            } else {
                return Err(r(format!(
                    "Invalid scaling configuration: for TensorWise scaling both scales must have one element, for \
                     RowWise scaling scale_a must be ({m}, 1) and scale_b (1, {n}); got {:?} and {:?}",
                    sa.shape, sb.shape
                )));
            }
        }
        if let Some(sr) = &self.scale_result {
            if sr.numel() != 1 || sr.dtype != Dtype::Float32 {
                return Err(r(format!(
                    "scale_result must be a float scalar (got dtype {} with {} elements)",
                    sr.dtype,
                    sr.numel()
                )));
            }
        }
        if let Some(bias) = &self.bias {
            if bias.numel != n {
                return Err(r(format!("Bias must be size {n} but got {}", bias.numel)));
            }
        }
        if k % 16 != 0 {
            return Err(r(format!(
                "Expected trailing dimension of mat1 to be divisible by 16 but got mat1 shape: ({m}x{k})."
            )));
        }
        if k2 % 16 != 0 || n % 16 != 0 {
            return Err(r(format!("mat2 shape ({k2}x{n}) must be divisible by 16")));
        }
        if let (Some(out), Some(od)) = (&self.out, &self.out_dtype) {
            if &out.dtype != od {
                return Err(r(format!("out_dtype must match output matrix type (out_dtype {od}, out {})", out.dtype)));
            }
        }
        let od = self.effective_out_dtype();
        if !a.dtype.is_float8() {
            return Err(r(format!("Expected mat1 to be Float8 matrix got {}", a.dtype)));
        }
        if !b.dtype.is_float8() {
            return Err(r(format!("Expected mat2 to be Float8 matrix got {}", b.dtype)));
        }
        if a.dtype == Dtype::Float8E5m2 && b.dtype == Dtype::Float8E5m2 {
            return Err(r("Multiplication of two Float8_e5m2 matrices is not supported".into()));
        }
        if let Some(bias) = &self.bias {
            if od == Dtype::Float32 {
                return Err(r("Bias is not supported when out_dtype is set to Float32".into()));
            }
            if bias.dtype != Dtype::BFloat16 && bias.dtype != Dtype::Float16 {
                return Err(r(format!("Bias must be either Half or BFloat16, but got {}", bias.dtype)));
            }
            if od == Dtype::BFloat16 && bias.dtype != Dtype::BFloat16 {
                return Err(r(format!(
                    "Bias must be BFloat16 to compute BFloat16 matmul output, but got {}",
                    bias.dtype
                )));
            }
            if od == Dtype::Float16 && bias.dtype != Dtype::Float16 {
                return Err(r(format!(
                    "Bias must be Float16 to compute Float16 matmul output, but got {}",
                    bias.dtype
                )));
            }
        }
        // (Step 2.14, the same-device check, never fires on host views.)
        Ok(())
    }

    /// §5.2 step 5: cuBLAS-level checks. Returns the formats, the out dtype, and whether the input must be
    /// copied to a contiguous view.
    pub(super) fn cublas_checks(&self, od: &Dtype) -> Result<(Format, Format, OutDtype, bool)> {
        let (a, b) = (&self.input, &self.mat2);
        let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
        if self.is_rowwise() {
            // torch 2.7.1 sends row-wise scales to CUTLASS before any cuBLASLt check.
            let (fa, fb, odt) = self.rowwise_checks(od)?;
            return Ok((fa, fb, odt, false));
        }
        let bt = b.t();
        let a_row = is_row_major(&a.shape, &a.strides);
        let a_col = is_col_major(&a.shape, &a.strides);
        if a_col || !is_row_major(&bt.shape, &bt.strides) {
            return Err(r(format!(
                "Only multiplication of row-major and column-major matrices is supported by cuBLASLt (mat1 strides \
                 {:?}, mat2 strides {:?})",
                a.strides, b.strides
            )));
        }
        // Step 5.3: an input that is neither row- nor column-major is copied to a contiguous view.
        let copied = !a_row && !a_col;
        let (fa, fb) = match (a.dtype.format(), b.dtype.format()) {
            (Some(fa), Some(fb)) => (fa, fb),
            _ => {
                return Err(r(format!(
                    "{} x {}: torch 2.7.1 fails on CUDA for FP8 formats other than float8_e4m3fn and float8_e5m2 \
                     (the reference has no cuBLASLt kernel for them)",
                    a.dtype, b.dtype
                )))
            }
        };
        let Some(odt) = od.out_dtype() else {
            return Err(r(format!(
                "out dtype {od} is not supported by cuBLASLt FP8 GEMMs (CUBLAS_STATUS_NOT_SUPPORTED)"
            )));
        };
        let a_offset = if copied { 0 } else { a.offset };
        for (name, off) in [("mat1", a_offset), ("mat2", b.offset)] {
            if off % 16 != 0 {
                return Err(r(format!(
                    "{name} storage offset {off} makes the cuBLASLt operand pointer not 16-byte aligned \
                     (CUBLAS_STATUS_NOT_SUPPORTED)"
                )));
            }
        }
        let lda = if m > 1 {
            if copied {
                k
            } else {
                a.strides[0]
            }
        } else {
            k
        };
        let ldb = if n > 1 { b.strides[1] } else { k };
        if lda % 16 != 0 || ldb % 16 != 0 {
            return Err(r(format!(
                "cuBLASLt FP8 GEMMs need leading dimensions that are multiples of 16: the operand leading dimension \
                 not a multiple of 16 (lda {lda}, ldb {ldb})"
            )));
        }
        Ok((fa, fb, odt, copied))
    }
}
