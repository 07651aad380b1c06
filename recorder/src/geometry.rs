//! Operand layouts of a call: where mat1's and mat2's elements sit in their storage (padded leading
//! dimension, storage offset, transposed view), whether torch refuses the layout before cuBLASLt, the
//! leading dimensions and pointer offsets it passes (`docs/reference.md` §5.2 steps 5.2–5.7), the storage a
//! device uploads, and the call object a recorded row replays with (`docs/recording-format.md`, "The call
//! object").

use mmaemu_datasets::{Call, MatSpec};
use std::borrow::Cow;

/// How an operand's storage is laid out: the call object's `layout` word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Storage {
    /// `std`: mat1 row-major [m, k]; mat2 the transpose of a row-major [n, k] (column-major [k, n]).
    #[default]
    Std,
    /// mat1 `col` (the transpose of a row-major [k, m]); mat2 `row` (row-major [k, n]).
    Transposed,
}

/// One operand's layout, in elements (FP8: one byte each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OperandLayout {
    /// Std or transposed.
    pub storage: Storage,
    /// Extra elements in the leading dimension.
    pub ld_pad: usize,
    /// Elements before the operand's first element in its storage.
    pub offset: usize,
}

/// The layouts of mat1 and mat2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Geometry {
    /// mat1 (the recording's A, [m, k]).
    pub mat1: OperandLayout,
    /// mat2 (the transpose of the recording's B, [k, n]).
    pub mat2: OperandLayout,
}

/// Row-major in torch's sense (reference §5.2 step 5.2): contiguous, or unit stride along the columns
/// and a leading dimension of at least max(1, cols).
fn row_major(shape: [usize; 2], strides: [usize; 2]) -> bool {
    contiguous(shape, strides) || (strides[1] == 1 && strides[0] >= shape[1].max(1))
}

/// Column-major in torch's sense: not contiguous, unit stride along the rows, leading dimension at least
/// max(1, rows).
fn column_major(shape: [usize; 2], strides: [usize; 2]) -> bool {
    !contiguous(shape, strides) && strides[0] == 1 && strides[1] >= shape[0].max(1)
}

/// Contiguous (reference R.2): (C = 1 or s1 = 1) and (R = 1 or s0 = C); an empty view is contiguous.
fn contiguous(shape: [usize; 2], strides: [usize; 2]) -> bool {
    let [r, c] = shape;
    r * c == 0 || ((c == 1 || strides[1] == 1) && (r == 1 || strides[0] == c))
}

/// Lays out a logical row-major [rows, cols] matrix into a buffer whose element (i, j) sits at
/// `offset + i * s0 + j * s1`; the bytes the buffer has besides the elements are zero.
fn lay_out(data: &[u8], rows: usize, cols: usize, offset: usize, s0: usize, s1: usize) -> Vec<u8> {
    let extent = if rows == 0 || cols == 0 { 0 } else { (rows - 1) * s0 + (cols - 1) * s1 + 1 };
    let mut buf = vec![0u8; offset + extent];
    for i in 0..rows {
        let src = &data[i * cols..(i + 1) * cols];
        if s1 == 1 {
            // A contiguous row: one copy.
            buf[offset + i * s0..offset + i * s0 + cols].copy_from_slice(src);
        } else {
            for (j, &x) in src.iter().enumerate() {
                buf[offset + i * s0 + j * s1] = x;
            }
        }
    }
    buf
}

impl Geometry {
    /// The standard call: both operands `std`, no padding, no offset.
    pub const STANDARD: Geometry = Geometry {
        mat1: OperandLayout { storage: Storage::Std, ld_pad: 0, offset: 0 },
        mat2: OperandLayout { storage: Storage::Std, ld_pad: 0, offset: 0 },
    };

    /// Is this the standard call?
    pub fn is_standard(&self) -> bool {
        *self == Geometry::STANDARD
    }

    /// Are both operands contiguous (`std`, no padding), whatever their offsets?
    pub fn is_contiguous(&self) -> bool {
        [self.mat1, self.mat2].iter().all(|o| o.storage == Storage::Std && o.ld_pad == 0)
    }

    /// mat1's strides for [m, k]: `std` (k + pad, 1), `col` (1, m + pad).
    pub fn mat1_strides(&self, m: usize, k: usize) -> [usize; 2] {
        match self.mat1.storage {
            Storage::Std => [k + self.mat1.ld_pad, 1],
            Storage::Transposed => [1, m + self.mat1.ld_pad],
        }
    }

    /// mat2's strides for [k, n]: `std` (1, k + pad), `row` (n + pad, 1).
    pub fn mat2_strides(&self, n: usize, k: usize) -> [usize; 2] {
        match self.mat2.storage {
            Storage::Std => [1, k + self.mat2.ld_pad],
            Storage::Transposed => [n + self.mat2.ld_pad, 1],
        }
    }

    /// torch's layout check before cuBLASLt (reference §5.2 step 5.2, torch's "Only multiplication of
    /// row-major and column-major matrices is supported by cuBLASLt"): mat1 column-major, or mat2ᵀ not
    /// row-major, is refused. A mat1 that is neither would be copied (step 5.3); the call object cannot
    /// express one, and it is refused here as well.
    pub fn torch_rejects(&self, m: usize, n: usize, k: usize) -> Option<String> {
        let s1 = self.mat1_strides(m, k);
        let s2 = self.mat2_strides(n, k);
        if column_major([m, k], s1) {
            return Some(
                "mat1 is column-major: torch refuses it before cuBLASLt (only row-major x column-major)".into(),
            );
        }
        if !row_major([m, k], s1) {
            return Some("mat1 is neither row- nor column-major (torch would copy it)".into());
        }
        if !row_major([n, k], [s2[1], s2[0]]) {
            return Some(
                "mat2 is not column-major (mat2ᵀ not row-major): torch refuses it before cuBLASLt (only row-major \
                 x column-major)"
                    .into(),
            );
        }
        None
    }

    /// The leading dimension of cuBLASLt's A (mat2), as torch passes it (reference §5.2 step 5.7): mat2's
    /// stride 1 when N > 1, else K.
    pub fn lda(&self, n: usize, k: usize) -> i64 {
        if n > 1 {
            self.mat2_strides(n, k)[1] as i64
        } else {
            k as i64
        }
    }

    /// The leading dimension of cuBLASLt's B (mat1): mat1's stride 0 when M > 1, else K.
    pub fn ldb(&self, m: usize, k: usize) -> i64 {
        if m > 1 {
            self.mat1_strides(m, k)[0] as i64
        } else {
            k as i64
        }
    }

    /// mat1's storage (offset included) from the recording's A ([m, k] row-major, one byte per element);
    /// A itself when mat1 is contiguous and starts its storage.
    pub fn mat1_storage<'a>(&self, a: &'a [u8], m: usize, k: usize) -> Cow<'a, [u8]> {
        if self.mat1 == OperandLayout::default() {
            return Cow::Borrowed(a);
        }
        let [s0, s1] = self.mat1_strides(m, k);
        Cow::Owned(lay_out(a, m, k, self.mat1.offset, s0, s1))
    }

    /// mat2's storage (offset included) from the recording's B ([n, k] row-major): element (kk, j) of mat2
    /// is B[j, kk].
    pub fn mat2_storage<'a>(&self, b: &'a [u8], n: usize, k: usize) -> Cow<'a, [u8]> {
        if self.mat2 == OperandLayout::default() {
            return Cow::Borrowed(b);
        }
        let [s0, s1] = self.mat2_strides(n, k);
        // B's (j, kk) goes where mat2's (kk, j) lives: B laid out with strides (s1, s0).
        Cow::Owned(lay_out(b, n, k, self.mat2.offset, s1, s0))
    }

    /// The call object of a row recorded with this geometry; None for the standard call.
    pub fn call(&self) -> Option<Call> {
        if self.is_standard() {
            return None;
        }
        let spec = |o: &OperandLayout, other: &str| MatSpec {
            dtype: None,
            layout: match o.storage {
                Storage::Std => "std".into(),
                Storage::Transposed => other.into(),
            },
            ld_pad: o.ld_pad as i64,
            offset: o.offset as i64,
        };
        Some(Call { mat1: spec(&self.mat1, "col"), mat2: spec(&self.mat2, "row"), ..Call::default() })
    }

    /// A short description (`mat1 std+8@16, mat2 row`), for notes and error messages.
    pub fn describe(&self) -> String {
        let one = |name: &str, o: &OperandLayout, other: &str| {
            let mut s = format!("{name} {}", if o.storage == Storage::Std { "std" } else { other });
            if o.ld_pad > 0 {
                s.push_str(&format!(" ld_pad {}", o.ld_pad));
            }
            if o.offset > 0 {
                s.push_str(&format!(" offset {}", o.offset));
            }
            s
        };
        format!("{}, {}", one("mat1", &self.mat1, "col"), one("mat2", &self.mat2, "row"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(m1: Storage, p1: usize, o1: usize, m2: Storage, p2: usize, o2: usize) -> Geometry {
        Geometry {
            mat1: OperandLayout { storage: m1, ld_pad: p1, offset: o1 },
            mat2: OperandLayout { storage: m2, ld_pad: p2, offset: o2 },
        }
    }

    #[test]
    fn torch_accepts_row_major_by_column_major_only() {
        use Storage::*;
        // Padded and offset standard layouts reach cuBLASLt.
        assert_eq!(g(Std, 16, 32, Std, 8, 16).torch_rejects(32, 64, 128), None);
        // A column-major mat1 or a row-major mat2 never does.
        assert!(g(Transposed, 0, 0, Std, 0, 0).torch_rejects(32, 64, 128).is_some());
        assert!(g(Std, 0, 0, Transposed, 0, 0).torch_rejects(32, 64, 128).is_some());
        assert!(g(Std, 0, 0, Transposed, 16, 0).torch_rejects(32, 64, 128).is_some());
        // One row: mat1 `col` without padding has strides (1, 1), contiguous, so it is row-major too.
        assert_eq!(g(Transposed, 0, 0, Std, 0, 0).torch_rejects(1, 64, 128), None);
        assert!(g(Transposed, 16, 0, Std, 0, 0).torch_rejects(1, 64, 128).is_some());
    }

    #[test]
    fn leading_dimensions_follow_the_strides() {
        use Storage::*;
        let x = g(Std, 16, 0, Std, 32, 0);
        // cuBLASLt's A is mat2 (ld = k + pad), its B is mat1 (ld = k + pad); M = 1 passes K (§5.2 step 5.7).
        assert_eq!((x.lda(64, 128), x.ldb(32, 128)), (160, 144));
        assert_eq!(x.ldb(1, 128), 128);
        assert_eq!(Geometry::STANDARD.lda(64, 128), 128);
    }

    #[test]
    fn storage_places_every_element() {
        use Storage::*;
        // A [2, 3] = 1..6, padded by 2, offset 1: rows at 1 and 6.
        let x = g(Std, 2, 1, Std, 1, 2);
        assert_eq!(*x.mat1_storage(&[1, 2, 3, 4, 5, 6], 2, 3), [0, 1, 2, 3, 0, 0, 4, 5, 6]);
        // B [2, 3] (n = 2, k = 3) = 1..6: mat2 = Bᵀ column-major with ld 4, offset 2.
        assert_eq!(*x.mat2_storage(&[1, 2, 3, 4, 5, 6], 2, 3), [0, 0, 1, 2, 3, 0, 4, 5, 6]);
        // mat1 `col`: [2, 3] stored as the transpose of a row-major [3, 2 + 1].
        let c = g(Transposed, 1, 0, Std, 0, 0);
        assert_eq!(*c.mat1_storage(&[1, 2, 3, 4, 5, 6], 2, 3), [1, 4, 0, 2, 5, 0, 3, 6]);
    }

    #[test]
    fn call_objects() {
        assert_eq!(Geometry::STANDARD.call(), None);
        let x = g(Storage::Std, 16, 0, Storage::Transposed, 0, 32);
        let call = x.call().unwrap();
        assert_eq!((call.mat1.layout.as_str(), call.mat1.ld_pad), ("std", 16));
        assert_eq!((call.mat2.layout.as_str(), call.mat2.offset), ("row", 32));
        assert_eq!(x.describe(), "mat1 std ld_pad 16, mat2 row offset 32");
    }
}
