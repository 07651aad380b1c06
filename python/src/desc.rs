//! Tensors as the Python layer describes them (dtype, shape, strides and storage offset in elements, the
//! address of storage element 0, the element size): model views over that memory, read where it lies
//! (docs/reference.md R.2), and the writes of results into it.

use mmaemu_model::dtype::Dtype;
use mmaemu_model::scaled_mm::ScaleTensor;
use mmaemu_model::tensor::{is_contiguous, Tensor, View};
use pyo3::prelude::*;

/// One tensor or array: `(dtype, shape, strides, offset, base, itemsize)`. `base` is the address of the
/// storage's element 0 (the tensor's own data pointer minus `offset` elements); 0 for tensors without
/// host data (meta tensors), which only `explain` accepts.
#[derive(Clone, Debug)]
pub struct Desc {
    /// torch's dtype name (`float8_e4m3fn`, `float32`, ...).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Strides, in elements.
    pub strides: Vec<usize>,
    /// Storage offset, in elements.
    pub offset: usize,
    /// Address of storage element 0.
    pub base: usize,
    /// Element size in bytes.
    pub itemsize: usize,
}

impl<'a, 'py> FromPyObject<'a, 'py> for Desc {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Desc> {
        let (dtype, shape, strides, offset, base, itemsize) = obj.extract()?;
        Ok(Desc { dtype, shape, strides, offset, base, itemsize })
    }
}

impl Desc {
    /// The model's dtype.
    pub fn model_dtype(&self) -> Dtype {
        Dtype::from_name(&self.dtype)
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// One past the largest element index the view reaches (0 for an empty view).
    fn extent(&self) -> usize {
        if self.numel() == 0 || self.shape.len() != self.strides.len() {
            return 0;
        }
        self.offset + 1 + self.shape.iter().zip(&self.strides).map(|(&n, &s)| (n - 1) * s).sum::<usize>()
    }

    /// The storage bytes the view can reach, read where they lie; empty without host data.
    ///
    /// # Safety
    /// `base` must point to at least `extent() * itemsize` readable bytes that stay alive and are not
    /// written by anyone else while the slice is used (the Python caller keeps the tensor referenced).
    pub unsafe fn storage<'a>(&self) -> &'a [u8] {
        let len = self.extent() * self.itemsize;
        if self.base == 0 || len == 0 {
            return &[];
        }
        // SAFETY: the caller's contract above.
        unsafe { std::slice::from_raw_parts(self.base as *const u8, len) }
    }

    /// A model view of the tensor.
    ///
    /// # Safety
    /// As [`Desc::storage`].
    pub unsafe fn view<'a>(&self) -> View<'a> {
        View {
            dtype: self.model_dtype(),
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: self.offset,
            // SAFETY: forwarded.
            storage: unsafe { self.storage() },
        }
    }

    /// The element values in row-major order, as f64 (float32 and float64 tensors; any other dtype reads
    /// as 0, it is refused by its dtype before a value matters).
    ///
    /// # Safety
    /// As [`Desc::storage`].
    pub unsafe fn values(&self) -> Vec<f64> {
        // SAFETY: forwarded.
        let storage = unsafe { self.storage() };
        let read = |i: usize| -> f64 {
            let p = i * self.itemsize;
            match (self.model_dtype(), storage.get(p..p + self.itemsize)) {
                (Dtype::Float32, Some(b)) => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                (Dtype::Float64, Some(b)) => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
                _ => 0.0,
            }
        };
        self.indices().into_iter().map(read).collect()
    }

    /// The storage index of every element, in row-major order.
    pub fn indices(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.numel());
        if self.numel() == 0 {
            return out;
        }
        let mut idx = vec![0usize; self.shape.len()];
        loop {
            out.push(self.offset + idx.iter().zip(&self.strides).map(|(&i, &s)| i * s).sum::<usize>());
            let mut d = self.shape.len();
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// A scale argument (`scale_a`, `scale_b`, `scale_result`).
    ///
    /// # Safety
    /// As [`Desc::storage`].
    pub unsafe fn scale(&self) -> ScaleTensor {
        ScaleTensor {
            dtype: self.model_dtype(),
            shape: self.shape.clone(),
            // SAFETY: forwarded.
            values: unsafe { self.values() },
            contiguous: self.shape.len() == self.strides.len() && is_contiguous(&self.shape, &self.strides),
        }
    }

    /// The out= argument as the model sees it: the same dtype, shape and strides over a zeroed storage of
    /// its own (offset 0). The model decides with shape and strides only and writes every element of a
    /// result into it; [`Desc::write_logical`] then puts them where out= lies.
    pub fn shadow(&self) -> Tensor {
        let dtype = self.model_dtype();
        let extent = self.extent().saturating_sub(self.offset);
        Tensor {
            storage: vec![0u8; extent * dtype.size()],
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: 0,
            dtype,
        }
    }

    /// Write `bytes`, the tensor's elements in row-major order (`itemsize` bytes each), where they lie.
    /// `None` writes zero bytes.
    ///
    /// # Safety
    /// `base` must point to at least `extent() * itemsize` writable bytes that nobody else reads or writes
    /// meanwhile.
    pub unsafe fn write_logical(&self, bytes: Option<&[u8]>) -> Result<(), String> {
        let w = self.itemsize;
        if let Some(b) = bytes {
            if b.len() != self.numel() * w {
                return Err(format!("{} bytes for {} elements of {} bytes", b.len(), self.numel(), w));
            }
        }
        if self.numel() == 0 {
            return Ok(());
        }
        if self.base == 0 {
            return Err("the tensor has no host data".into());
        }
        let base = self.base as *mut u8;
        let packed = self.shape.len() == self.strides.len() && is_contiguous(&self.shape, &self.strides);
        if packed {
            // SAFETY: a contiguous view covers elements offset .. offset + numel, inside the allocation.
            unsafe {
                let dst = base.add(self.offset * w);
                match bytes {
                    Some(b) => std::ptr::copy_nonoverlapping(b.as_ptr(), dst, b.len()),
                    None => std::ptr::write_bytes(dst, 0, self.numel() * w),
                }
            }
            return Ok(());
        }
        for (e, idx) in self.indices().into_iter().enumerate() {
            // SAFETY: every index is below extent(), inside the allocation.
            unsafe {
                let dst = base.add(idx * w);
                match bytes {
                    Some(b) => std::ptr::copy_nonoverlapping(b.as_ptr().add(e * w), dst, w),
                    None => std::ptr::write_bytes(dst, 0, w),
                }
            }
        }
        Ok(())
    }
}
