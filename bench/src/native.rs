//! The native fp32 GEMM the benchmarks compare with: OpenBLAS's `cblas_sgemm` when the system has the library
//! (`libopenblas.so.0`, loaded at run time, so the build needs nothing), else matrixmultiply's sgemm (through
//! ndarray's safe `general_mat_mul`) with the rows of the output split over the rayon pool.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use rayon::prelude::*;
use std::ffi::{c_char, c_float, c_int, CStr};
use std::sync::OnceLock;

/// `cblas_sgemm`, argument by argument as cblas.h declares it.
#[rustfmt::skip]
type Sgemm = unsafe extern "C" fn(
    c_int, c_int, c_int,                                // order, transa, transb
    c_int, c_int, c_int, c_float,                       // m, n, k, alpha
    *const c_float, c_int, *const c_float, c_int,       // a, lda, b, ldb
    c_float, *mut c_float, c_int,                       // beta, c, ldc
);

/// `cblas_sgemv`, likewise.
#[rustfmt::skip]
type Sgemv = unsafe extern "C" fn(
    c_int, c_int,                                       // order, trans
    c_int, c_int, c_float,                              // m, n, alpha
    *const c_float, c_int, *const c_float, c_int,       // a, lda, x, incx
    c_float, *mut c_float, c_int,                       // beta, y, incy
);

/// OpenBLAS, loaded: its sgemm and sgemv, its thread setter and its build description.
struct OpenBlas {
    sgemm: Sgemm,
    sgemv: Sgemv,
    set_threads: unsafe extern "C" fn(c_int),
    config: String,
    /// The core this process asked OpenBLAS for (see `strongest_core`); None where the user named one or the CPU
    /// implies none.
    asked: Option<&'static str>,
    // Keeps the library mapped while the function pointers above are used.
    _lib: libloading::Library,
}

const ROW_MAJOR: c_int = 101;
const NO_TRANS: c_int = 111;
const TRANS: c_int = 112;

/// The variable through which OpenBLAS (built with DYNAMIC_ARCH, as distributions build it) takes its kernels'
/// core instead of detecting one, read once when the library is loaded.
const CORETYPE: &str = "OPENBLAS_CORETYPE";

/// The OpenBLAS core whose sgemm this CPU runs fastest, by the instructions it has: `SkylakeX` (AVX-512 F, CD,
/// BW, DQ and VL), `Haswell` (AVX2 and FMA), else none (OpenBLAS's own choice). OpenBLAS picks its core from the
/// CPU's family and model numbers and falls back to its SSE3 kernels (`Prescott`) on models its release does not
/// know: Debian's 0.3.21 on an Intel Xeon of model 207 (2 vCPUs) ran 1024^3 at 20 GMAC/s so, against 111 as
/// `SkylakeX` (`mmaemu bench gemm --m 1024 --n 1024 --k 1024` without and with `OPENBLAS_CORETYPE=SkylakeX`),
/// which would have made the native side of every ratio five times too slow.
fn strongest_core() -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        let avx512 = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512cd")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl");
        if avx512 {
            return Some("SkylakeX");
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Some("Haswell");
        }
    }
    None
}

fn openblas() -> Option<&'static OpenBlas> {
    static LIB: OnceLock<Option<OpenBlas>> = OnceLock::new();
    LIB.get_or_init(|| {
        // A bad value is refused before a benchmark runs (`bench::gemm_planted`).
        if mmaemu_api::env::native_matrixmultiply().unwrap_or(false) {
            return None;
        }
        // The strongest core for this CPU unless the user named one (see `strongest_core`). Set once, here,
        // before the library is loaded (it reads the variable then); the benchmarks' other threads, rayon's,
        // read no environment while this runs.
        let asked = if std::env::var_os(CORETYPE).is_none() { strongest_core() } else { None };
        if let Some(core) = asked {
            std::env::set_var(CORETYPE, core);
        }
        ["libopenblas.so.0", "libopenblas.so"].iter().find_map(|name| {
            // SAFETY: loading OpenBLAS runs its initialisers, which only set up its thread pool; the symbols are
            // looked up with the C signatures OpenBLAS's cblas.h declares for them.
            unsafe {
                let lib = libloading::Library::new(*name).ok()?;
                let sgemm = *lib.get::<Sgemm>(b"cblas_sgemm\0").ok()?;
                let sgemv = *lib.get::<Sgemv>(b"cblas_sgemv\0").ok()?;
                let set_threads = *lib.get::<unsafe extern "C" fn(c_int)>(b"openblas_set_num_threads\0").ok()?;
                let config = match lib.get::<unsafe extern "C" fn() -> *const c_char>(b"openblas_get_config\0") {
                    Ok(f) => CStr::from_ptr(f()).to_string_lossy().trim().to_string(),
                    Err(_) => "OpenBLAS".to_string(),
                };
                Some(OpenBlas { sgemm, sgemv, set_threads, config, asked, _lib: lib })
            }
        })
    })
    .as_ref()
}

impl OpenBlas {
    /// The core this process asked for where OpenBLAS runs another (its build description ends with the core it
    /// runs; a build without DYNAMIC_ARCH ignores the request).
    fn ignored(&self) -> Option<&'static str> {
        self.asked.filter(|core| !self.config.split_whitespace().any(|w| w == *core))
    }
}

/// The native GEMM in use: `OpenBLAS <its build description>` (which ends with the core it runs, followed by
/// `(asked for <core>)` where OpenBLAS ignored the core asked for) or `matrixmultiply`.
pub fn name() -> String {
    match openblas() {
        Some(o) => match o.ignored() {
            Some(core) => format!("{} (asked for {core})", o.config),
            None => o.config.clone(),
        },
        None => "matrixmultiply".to_string(),
    }
}

/// `c = a x b^T` in fp32 on `threads` threads: `a` is [m, k], `b` is [n, k] (the weight layout of the emulated
/// GEMMs), `c` is [m, n], all row-major. Panics if a buffer does not match its shape or a dimension exceeds
/// the C interface's `int`.
pub fn sgemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32], threads: usize) {
    assert!(a.len() == m * k && b.len() == n * k && c.len() == m * n, "sgemm: buffer sizes do not match the shape");
    if m == 0 || n == 0 {
        return;
    }
    if let Some(o) = openblas() {
        let dim = |x: usize| c_int::try_from(x).expect("sgemm: a dimension exceeds the C int of cblas_sgemm");
        let (mi, ni, ki) = (dim(m), dim(n), dim(k.max(1)));
        // SAFETY: the buffers hold m*k, n*k and m*n floats (checked above), which is what row-major A [m, k],
        // B [n, k] read transposed, and C [m, n] with leading dimensions k, k and n address.
        unsafe {
            (o.set_threads)(dim(threads.max(1)));
            (o.sgemm)(
                ROW_MAJOR,
                NO_TRANS,
                TRANS,
                mi,
                ni,
                dim(k),
                1.0,
                a.as_ptr(),
                ki,
                b.as_ptr(),
                ki,
                0.0,
                c.as_mut_ptr(),
                ni,
            );
        }
        return;
    }
    let bt = match ArrayView2::from_shape((n, k), b) {
        Ok(v) => v.reversed_axes(),
        Err(e) => panic!("sgemm: {e}"),
    };
    let rows = m.div_ceil(threads.max(1)).max(1);
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

/// For one row (M = 1), the matrix-vector product `c = b a` (OpenBLAS's `cblas_sgemv`, which a decode step
/// would call) on `threads` threads; None without OpenBLAS. Panics like [`sgemm`].
pub fn sgemv(n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32], threads: usize) -> Option<()> {
    assert!(a.len() == k && b.len() == n * k && c.len() == n, "sgemv: buffer sizes do not match the shape");
    let o = openblas()?;
    let dim = |x: usize| c_int::try_from(x).expect("sgemv: a dimension exceeds the C int of cblas_sgemv");
    // SAFETY: B is row-major [n, k] with leading dimension k, x holds k floats and y n (checked above).
    unsafe {
        (o.set_threads)(dim(threads.max(1)));
        (o.sgemv)(
            ROW_MAJOR,
            NO_TRANS,
            dim(n),
            dim(k),
            1.0,
            b.as_ptr(),
            dim(k.max(1)),
            a.as_ptr(),
            1,
            0.0,
            c.as_mut_ptr(),
            1,
        );
    }
    Some(())
}

#[cfg(test)]
mod tests {
    /// Where OpenBLAS is installed and the user named no core, it runs the strongest core for this CPU, the one
    /// `strongest_core` asked for.
    #[test]
    fn openblas_runs_the_strongest_core() {
        match super::openblas() {
            Some(o) if o.asked.is_some() => {
                assert_eq!(o.ignored(), None, "OpenBLAS runs another core than it was asked for: {}", super::name())
            }
            _ => eprintln!("OpenBLAS absent, no core to ask for, or a core named by the user: nothing to check"),
        }
    }

    #[test]
    fn small_product() {
        // [[1, 2], [3, 4]] x [[5, 6], [7, 8]]^T = [[17, 23], [39, 53]]
        let mut c = [0f32; 4];
        super::sgemm(2, 2, 2, &[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], &mut c, 1);
        assert_eq!(c, [17.0, 23.0, 39.0, 53.0]);
        // The same first row through sgemv, where OpenBLAS is installed.
        let mut y = [0f32; 2];
        if super::sgemv(2, 2, &[1.0, 2.0], &[5.0, 6.0, 7.0, 8.0], &mut y, 1).is_some() {
            assert_eq!(y, [17.0, 23.0]);
        }
    }
}
