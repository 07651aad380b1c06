//! CI without a GPU: the CUDA kernels' source compiles with NVRTC for sm_89 (compute_89) and sm_90
//! (compute_90). Reported as ignored, with the reason (`SKIP: ...`), when built without the `cuda` feature or
//! when NVRTC is not installed; .ci/install-nvrtc.sh installs NVIDIA's NVRTC wheel and MMAEMU_NVRTC_LIB
//! names the library.

use libtest_mimic::{Arguments, Failed, Trial};

const NAME: &str = "kernels_compile_with_nvrtc_for_sm89_and_sm90";

fn main() {
    let args = Arguments::from_args();
    let trial = match skip_reason() {
        Some(why) => {
            eprintln!("SKIP: {NAME}: {why}");
            Trial::test(NAME, || Ok(())).with_ignored_flag(true)
        }
        None => Trial::test(NAME, compile),
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}

#[cfg(feature = "cuda")]
fn skip_reason() -> Option<String> {
    mmaemu_kernels::cuda::nvrtc::probe().err()
}

#[cfg(not(feature = "cuda"))]
fn skip_reason() -> Option<String> {
    Some("built without the `cuda` feature (cargo test -p mmaemu-kernels --features cuda)".into())
}

#[cfg(feature = "cuda")]
fn compile() -> Result<(), Failed> {
    use mmaemu_kernels::cuda::{nvrtc, CI_ARCHS, KERNELS};
    let (major, minor) = nvrtc::version().map_err(|e| format!("NVRTC version: {e}"))?;
    eprintln!("NVRTC {major}.{minor}");
    for arch in CI_ARCHS {
        let ptx = nvrtc::compile(arch).map_err(|e| e.to_string())?;
        let text = ptx.to_src();
        let target = arch.replace("compute_", "sm_");
        if !text.contains(&format!(".target {target}")) {
            return Err(format!("PTX for {arch} lacks `.target {target}`").into());
        }
        for k in KERNELS {
            if !text.contains(&format!(".entry {}", k.function)) {
                return Err(format!("PTX for {arch} lacks the kernel {}", k.function).into());
            }
        }
        // IEEE-exact: no fused or approximate floating-point instructions, no flush to zero.
        for bad in ["fma.rn.f32", ".ftz.f32", "approx"] {
            if text.contains(bad) {
                return Err(format!("PTX for {arch} contains `{bad}`").into());
            }
        }
        eprintln!("{arch}: {} bytes of PTX", text.len());
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn compile() -> Result<(), Failed> {
    Ok(())
}
