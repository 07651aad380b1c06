//! Strided views and owned tensors (docs/reference.md R.2): shape, strides and storage offset in elements, a
//! dtype, and the storage bytes; torch's contiguity rule and the row-/column-major definitions of §5.2.

use crate::dtype::Dtype;
use crate::error::{Error, Result};

/// torch's contiguity rule for a 2-D view [r, c] with strides (s0, s1): empty, or (c = 1 or s1 = 1) and
/// (r = 1 or s0 = c). General rank: walking from the last dimension, every dimension of size != 1 has the
/// stride of the product of the sizes after it.
pub fn is_contiguous(shape: &[usize], strides: &[usize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1usize;
    for (&n, &s) in shape.iter().zip(strides).rev() {
        if n != 1 && s != expected {
            return false;
        }
        expected = expected.saturating_mul(n);
    }
    true
}

/// row-major(t) <=> contiguous(t) or (s1 = 1 and s0 >= max(1, C)), for a 2-D view.
pub fn is_row_major(shape: &[usize], strides: &[usize]) -> bool {
    is_contiguous(shape, strides) || (strides[1] == 1 && strides[0] >= shape[1].max(1))
}

/// column-major(t) <=> not contiguous(t) and s0 = 1 and s1 >= max(1, R), for a 2-D view.
pub fn is_col_major(shape: &[usize], strides: &[usize]) -> bool {
    !is_contiguous(shape, strides) && strides[0] == 1 && strides[1] >= shape[0].max(1)
}

/// Packed row-major strides of a shape.
pub fn packed_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(shape[i + 1].max(1));
    }
    s
}

/// A borrowed strided view over storage bytes.
#[derive(Clone, Debug)]
pub struct View<'a> {
    /// Element dtype.
    pub dtype: Dtype,
    /// The size of each dimension, outermost first.
    pub shape: Vec<usize>,
    /// Strides, in elements.
    pub strides: Vec<usize>,
    /// Storage offset, in elements.
    pub offset: usize,
    /// The storage's bytes (may be empty for `explain`, which reads no data).
    pub storage: &'a [u8],
}

impl<'a> View<'a> {
    /// A packed row-major view of `storage` with offset 0.
    pub fn packed(dtype: Dtype, shape: &[usize], storage: &'a [u8]) -> View<'a> {
        View { dtype, shape: shape.to_vec(), strides: packed_strides(shape), offset: 0, storage }
    }
    /// The transpose of a 2-D view (no copy).
    pub fn t(&self) -> View<'a> {
        let mut v = self.clone();
        v.shape.reverse();
        v.strides.reverse();
        v
    }
    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// torch's contiguity.
    pub fn is_contiguous(&self) -> bool {
        is_contiguous(&self.shape, &self.strides)
    }

    /// Read a 2-D view of a 1-byte dtype into a packed row-major [r, c] byte matrix. An element outside
    /// the storage is an invalid-value error.
    pub fn gather_bytes(&self, name: &str) -> Result<Vec<u8>> {
        let (r, c) = (self.shape[0], self.shape[1]);
        if r == 0 || c == 0 {
            return Ok(Vec::new());
        }
        let last =
            self.offset as u128 + (r as u128 - 1) * self.strides[0] as u128 + (c as u128 - 1) * self.strides[1] as u128;
        if last >= self.storage.len() as u128 {
            return Err(Error::invalid_value(format!(
                "{name}: the view [{r}, {c}] with strides ({}, {}) and offset {} reaches element {last}, beyond its \
                 storage of {} elements",
                self.strides[0],
                self.strides[1],
                self.offset,
                self.storage.len()
            )));
        }
        let mut out = Vec::with_capacity(r * c);
        for i in 0..r {
            let base = self.offset + i * self.strides[0];
            if self.strides[1] == 1 {
                out.extend_from_slice(&self.storage[base..base + c]);
            } else {
                out.extend((0..c).map(|j| self.storage[base + j * self.strides[1]]));
            }
        }
        Ok(out)
    }
}

/// An owned strided tensor: a result, or the caller's out= buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// Element dtype.
    pub dtype: Dtype,
    /// The size of each dimension, outermost first.
    pub shape: Vec<usize>,
    /// Strides, in elements.
    pub strides: Vec<usize>,
    /// Storage offset, in elements.
    pub offset: usize,
    /// Storage bytes (little-endian elements).
    pub storage: Vec<u8>,
}

impl Tensor {
    /// A packed row-major tensor of zero bytes.
    pub fn zeros(dtype: Dtype, shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor {
            storage: vec![0u8; n * dtype.size()],
            strides: packed_strides(shape),
            shape: shape.to_vec(),
            offset: 0,
            dtype,
        }
    }
    /// A 2-D tensor of `shape` filled with one element value given as little-endian bytes, row-major
    /// (contiguous) or column-major.
    pub fn filled(dtype: Dtype, shape: [usize; 2], col_major: bool, element: &[u8]) -> Tensor {
        let n = shape[0] * shape[1];
        let strides = if col_major { vec![1, shape[0].max(1)] } else { vec![shape[1].max(1), 1] };
        Tensor { storage: element.repeat(n), shape: shape.to_vec(), strides, offset: 0, dtype }
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// The borrowed view.
    pub fn view(&self) -> View<'_> {
        View {
            dtype: self.dtype.clone(),
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: self.offset,
            storage: &self.storage,
        }
    }
    /// Check that every element of the tensor lies inside its storage (an invalid-value error if not).
    pub fn check_extent(&self, name: &str) -> Result<()> {
        if self.numel() == 0 {
            return Ok(());
        }
        let last = self
            .shape
            .iter()
            .zip(&self.strides)
            .fold(self.offset as u128, |acc, (&n, &s)| acc + (n as u128 - 1) * s as u128);
        let have = (self.storage.len() / self.dtype.size().max(1)) as u128;
        if last >= have {
            return Err(Error::invalid_value(format!(
                "{name}: shape {:?} with strides {:?} and offset {} reaches element {last}, beyond its storage of \
                 {have} elements",
                self.shape, self.strides, self.offset
            )));
        }
        Ok(())
    }
    /// Byte position of element (i, j) of a 2-D tensor.
    fn pos(&self, i: usize, j: usize) -> usize {
        (self.offset + i * self.strides[0] + j * self.strides[1]) * self.dtype.size()
    }
    /// Write element (i, j) of a 2-D tensor from the low bytes of `bits`.
    pub fn set(&mut self, i: usize, j: usize, bits: u32) {
        let w = self.dtype.size().min(4);
        let p = self.pos(i, j);
        self.storage[p..p + w].copy_from_slice(&bits.to_le_bytes()[..w]);
    }
    /// Read element (i, j) of a 2-D tensor (up to 4 bytes) as bits.
    pub fn get(&self, i: usize, j: usize) -> u32 {
        let w = self.dtype.size().min(4);
        let p = self.pos(i, j);
        let mut b = [0u8; 4];
        b[..w].copy_from_slice(&self.storage[p..p + w]);
        u32::from_le_bytes(b)
    }
    /// The logical [r, c] elements in row-major order, as little-endian bytes of the dtype's width.
    pub fn logical_bytes(&self) -> Vec<u8> {
        let (r, c) = (self.shape[0], self.shape[1]);
        let w = self.dtype.size();
        let mut out = Vec::with_capacity(r * c * w);
        // No walk over the rows of an empty tensor, however many.
        let rows = if c > 0 { r } else { 0 };
        for i in 0..rows {
            for j in 0..c {
                let p = self.pos(i, j);
                out.extend_from_slice(&self.storage[p..p + w]);
            }
        }
        out
    }
}
