//! Tensors as the Python layer describes them (dtype, shape, strides and storage offset in elements, the
//! address of storage element 0, the element size): model views over that memory, read where it lies
//! (docs/reference.md R.2), and the writes of results into it.

use mmaemu_api::model::dtype::Dtype;
use mmaemu_api::model::scaled_mm::ScaleTensor;
use mmaemu_api::model::tensor::{is_contiguous, Tensor, View};
use mmaemu_api::model::{Error, OutDtype};
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

    /// Number of elements (the geometry is checked by [`Desc::geometry`] first: no overflow).
    pub fn numel(&self) -> usize {
        self.shape.iter().fold(1usize, |acc, &n| acc.saturating_mul(n))
    }

    /// One past the largest element index the view reaches (0 for an empty view).
    fn extent(&self) -> usize {
        self.checked_extent().unwrap_or(usize::MAX)
    }

    /// [`Desc::extent`] in checked arithmetic: None when it overflows.
    fn checked_extent(&self) -> Option<usize> {
        if self.shape.contains(&0) || self.shape.len() != self.strides.len() {
            return Some(0);
        }
        self.shape
            .iter()
            .zip(&self.strides)
            .try_fold(self.offset.checked_add(1)?, |acc, (&n, &s)| acc.checked_add((n - 1).checked_mul(s)?))
    }

    /// Ok when the element count, the extent and their bytes fit 64 bits; else the ValueError naming
    /// `name` (a shape or strides no tensor can have, checked before anything is sized from them).
    pub fn geometry(&self, name: &str) -> Result<(), Error> {
        let numel = self.shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n));
        let bytes = self.checked_extent().and_then(|e| e.checked_mul(self.itemsize.max(1)));
        match (numel, bytes) {
            (Some(_), Some(_)) => Ok(()),
            _ => Err(Error::invalid_value(format!(
                "{name}: shape {:?} with strides {:?} and offset {} has a size that overflows 64 bits",
                self.shape, self.strides, self.offset
            ))),
        }
    }

    /// Bytes of the described storage the view reaches (its extent in bytes), for budgets.
    pub fn reach_bytes(&self) -> u64 {
        (self.extent().saturating_sub(self.offset) as u64).saturating_mul(self.model_dtype().size() as u64)
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
        let mut out = Vec::with_capacity(self.numel());
        self.each_index(|_, i| out.push(read(i)));
        out
    }

    /// Call `f(e, i)` for every element in row-major order: `e` its logical position, `i` its storage
    /// index (nothing is allocated per element).
    pub fn each_index(&self, mut f: impl FnMut(usize, usize)) {
        if self.numel() == 0 || self.shape.len() != self.strides.len() {
            return;
        }
        let mut idx = vec![0usize; self.shape.len()];
        let mut e = 0;
        loop {
            f(e, self.offset + idx.iter().zip(&self.strides).map(|(&i, &s)| i * s).sum::<usize>());
            e += 1;
            let mut d = self.shape.len();
            loop {
                if d == 0 {
                    return;
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

    /// A scale argument (`scale_a`, `scale_b`, `scale_result`). Only a one-element scale's value is read:
    /// every larger scale is refused or unsupported by its shape, so none is gathered (a broadcast
    /// `expand(2**16, 2**16)` costs nothing).
    ///
    /// # Safety
    /// As [`Desc::storage`].
    pub unsafe fn scale(&self) -> ScaleTensor {
        ScaleTensor {
            dtype: self.model_dtype(),
            shape: self.shape.clone(),
            // SAFETY: forwarded.
            values: if self.numel() == 1 || self.rowwise_vector() { unsafe { self.values() } } else { Vec::new() },
            contiguous: self.shape.len() == self.strides.len() && is_contiguous(&self.shape, &self.strides),
        }
    }

    /// A float32 (M, 1) or (1, N) contiguous scale: a row-wise scale, whose values the kernel reads (one per
    /// row or column of the result, so no larger than the result).
    fn rowwise_vector(&self) -> bool {
        self.model_dtype() == Dtype::Float32
            && self.shape.len() == 2
            && (self.shape[0] == 1 || self.shape[1] == 1)
            && self.shape.len() == self.strides.len()
            && is_contiguous(&self.shape, &self.strides)
    }

    /// The element values of a bf16, fp16 or fp32 tensor (a bias) as f32, exactly; other dtypes read as 0 (they
    /// are refused by their dtype before a value matters).
    ///
    /// # Safety
    /// As [`Desc::storage`].
    pub unsafe fn values_f32(&self) -> Vec<f32> {
        // SAFETY: forwarded.
        let storage = unsafe { self.storage() };
        let dtype = self.model_dtype();
        let mut out = Vec::with_capacity(self.numel());
        self.each_index(|_, i| {
            let p = i * self.itemsize;
            let v = match (&dtype, storage.get(p..p + self.itemsize)) {
                (Dtype::BFloat16, Some(b)) => f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16),
                (Dtype::Float16, Some(b)) => OutDtype::Float16.to_f64(u16::from_le_bytes([b[0], b[1]]) as u32) as f32,
                (Dtype::Float32, Some(b)) => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                _ => 0.0,
            };
            out.push(v);
        });
        out
    }

    /// The out= argument as the model sees it: the same dtype, shape and strides over a zeroed storage of
    /// its own (offset 0). The model decides with shape and strides only and writes every element of a
    /// result into it; [`Desc::write_logical`] then puts them where out= lies. `dry` (explain, which
    /// writes nothing): no storage at all. The storage is allocated fallibly (its size is the caller's).
    pub fn shadow(&self, dry: bool) -> Result<Tensor, Error> {
        let dtype = self.model_dtype();
        let bytes = if dry { 0 } else { self.reach_bytes() };
        Ok(Tensor {
            storage: zeroed(bytes, "the out= copy")?,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: 0,
            dtype,
        })
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
        self.each_index(|e, idx| {
            // SAFETY: every index is below extent(), inside the allocation.
            unsafe {
                let dst = base.add(idx * w);
                match bytes {
                    Some(b) => std::ptr::copy_nonoverlapping(b.as_ptr().add(e * w), dst, w),
                    None => std::ptr::write_bytes(dst, 0, w),
                }
            }
        });
        Ok(())
    }
}

/// `bytes` zero bytes, allocated fallibly: a size the allocator refuses is the ValueError of `what`, not
/// an abort of the process.
pub fn zeroed(bytes: u64, what: &str) -> Result<Vec<u8>, Error> {
    let refused = || Error::invalid_value(format!("{what} needs {bytes} bytes, which cannot be allocated"));
    let n = usize::try_from(bytes).map_err(|_| refused())?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused())?;
    v.resize(n, 0);
    Ok(v)
}
