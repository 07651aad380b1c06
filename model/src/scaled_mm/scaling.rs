//! The scaling kind of a `scaled_mm` call (docs/reference.md §5.2 step 2.4): how its scale tensors apply to the
//! product. Tensor-wise and row-wise are modelled; the block-wise kinds of later torch versions join here.

/// How `scale_a` and `scale_b` scale the product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scaling {
    /// One fp32 value each: cuBLASLt's alpha (§4.1).
    TensorWise,
    /// scale_a (M, 1) and scale_b (1, N), fp32: torch 2.7.1 runs CUTLASS f8f8bf16_rowwise (§4.2).
    RowWise,
}

impl Scaling {
    /// `tensorwise` or `rowwise`.
    pub fn name(self) -> &'static str {
        match self {
            Scaling::TensorWise => "tensorwise",
            Scaling::RowWise => "rowwise",
        }
    }
}
