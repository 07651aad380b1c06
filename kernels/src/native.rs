//! The native fp32 GEMM the benchmarks compare with: matrixmultiply's tuned sgemm (through ndarray's safe
//! `general_mat_mul`), the rows of the output split over the rayon pool, so that it uses the same threads
//! as the emulation.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use rayon::prelude::*;

/// `c = a x b^T` in fp32: `a` is [m, k], `b` is [n, k] (the weight layout of the emulated GEMMs), `c` is
/// [m, n], all row-major. Panics if a buffer does not match its shape.
pub fn sgemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() == m * k && b.len() == n * k && c.len() == m * n, "sgemm: buffer sizes do not match the shape");
    if m == 0 || n == 0 {
        return;
    }
    let bt = match ArrayView2::from_shape((n, k), b) {
        Ok(v) => v.reversed_axes(),
        Err(e) => panic!("sgemm: {e}"),
    };
    let threads = rayon::current_num_threads().max(1);
    let rows = m.div_ceil(threads).max(1);
    c.par_chunks_mut(rows * n).zip(a.par_chunks(rows * k.max(1))).for_each(|(cc, aa)| {
        let r = cc.len() / n;
        let (Ok(av), Ok(mut cv)) =
            (ArrayView2::from_shape((r, k), &aa[..r * k]), ArrayViewMut2::from_shape((r, n), cc))
        else {
            unreachable!("row blocks match their shapes")
        };
        general_mat_mul(1.0, &av, &bt, 0.0, &mut cv);
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn small_product() {
        // [[1, 2], [3, 4]] x [[5, 6], [7, 8]]^T = [[17, 23], [39, 53]]
        let mut c = [0f32; 4];
        super::sgemm(2, 2, 2, &[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], &mut c);
        assert_eq!(c, [17.0, 23.0, 39.0, 53.0]);
    }
}
