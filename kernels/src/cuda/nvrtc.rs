//! NVRTC through cudarc: probing the library without panicking, and compiling the kernel source to PTX. cudarc loads
//! libnvrtc by its usual names (found through `LD_LIBRARY_PATH` and the system paths) and panics when it is missing, so
//! every entry here probes first and catches panics.

use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// The environment variable naming the NVRTC library file (for example the one of NVIDIA's `nvidia-cuda-nvrtc-cu12`
/// wheel): it is loaded first, globally, so that cudarc's lookup by soname finds it.
pub const NVRTC_LIB_ENV: &str = "MMAEMU_NVRTC_LIB";

/// Load `MMAEMU_NVRTC_LIB` (once, kept loaded for the life of the process) if it is set.
fn preload() -> Result<(), String> {
    static PRELOADED: OnceLock<Result<(), String>> = OnceLock::new();
    PRELOADED
        .get_or_init(|| {
            let Some(path) = std::env::var_os(NVRTC_LIB_ENV) else {
                return Ok(());
            };
            // SAFETY: loading NVRTC runs its initialisers, which have no preconditions.
            let lib = unsafe {
                libloading::os::unix::Library::open(
                    Some(&path),
                    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
                )
            };
            match lib {
                Ok(lib) => {
                    std::mem::forget(lib);
                    Ok(())
                }
                Err(e) => Err(format!("{NVRTC_LIB_ENV}={}: {e}", path.to_string_lossy())),
            }
        })
        .clone()
}

/// Whether NVRTC can be loaded, or why not.
pub fn probe() -> Result<(), String> {
    preload()?;
    // SAFETY: is_culib_present only tries to load the library by name.
    let present = catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false);
    if present {
        Ok(())
    } else {
        Err(format!(
            "the NVRTC library (libnvrtc.so) was not found: install it (CUDA toolkit or `pip install \
             nvidia-cuda-nvrtc-cu12`) and put it on LD_LIBRARY_PATH or name it in {NVRTC_LIB_ENV}"
        ))
    }
}

/// NVRTC's version (major, minor).
pub fn version() -> Result<(i32, i32), String> {
    probe()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints through valid pointers.
    let r = catch_unwind(AssertUnwindSafe(|| unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }))
        .map_err(|_| "NVRTC panicked".to_string())?;
    r.result().map_err(|e| format!("nvrtcVersion: {e:?}"))?;
    Ok((major, minor))
}

/// Compile the kernel source ([`super::source`]) for the virtual architecture `arch` (`compute_90`, ...)
/// to PTX. IEEE-exact options: no FMA contraction, no flush to zero, no fast math.
pub fn compile(arch: &'static str) -> Result<cudarc::nvrtc::Ptx, String> {
    probe()?;
    let opts = CompileOptions {
        ftz: Some(false),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        fmad: Some(false),
        use_fast_math: Some(false),
        arch: Some(arch),
        name: Some("mmaemu_chain.cu".into()),
        options: vec!["--std=c++14".into()],
        ..Default::default()
    };
    let src = super::source();
    match catch_unwind(AssertUnwindSafe(|| compile_ptx_with_opts(&src, opts))) {
        Ok(Ok(ptx)) => Ok(ptx),
        Ok(Err(cudarc::nvrtc::CompileError::CompileError { log, .. })) => {
            Err(format!("NVRTC compilation for {arch} failed: {}", log.to_string_lossy()))
        }
        Ok(Err(e)) => Err(format!("NVRTC compilation for {arch} failed: {e}")),
        Err(_) => Err(format!("NVRTC panicked compiling for {arch}")),
    }
}
