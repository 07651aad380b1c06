//! CI without a GPU: the CUDA kernels' source compiles with NVRTC for sm_89 (compute_89) and sm_90
//! (compute_90). Skips (passes, printing why) when built without the `cuda` feature or when NVRTC is not
//! installed; .ci/install-nvrtc.sh installs NVIDIA's NVRTC wheel and MMAEMU_NVRTC_LIB names the library.

#[cfg(feature = "cuda")]
#[test]
fn kernels_compile_with_nvrtc_for_sm89_and_sm90() {
    use mmaemu_kernels::cuda::{nvrtc, CI_ARCHS, KERNELS};
    if let Err(why) = nvrtc::probe() {
        eprintln!("SKIP: {why}");
        return;
    }
    let (major, minor) = nvrtc::version().expect("NVRTC version");
    eprintln!("NVRTC {major}.{minor}");
    for arch in CI_ARCHS {
        let ptx = nvrtc::compile(arch).unwrap_or_else(|e| panic!("{e}"));
        let text = ptx.to_src();
        let target = arch.replace("compute_", "sm_");
        assert!(text.contains(&format!(".target {target}")), "PTX for {arch} lacks `.target {target}`");
        for k in KERNELS {
            assert!(text.contains(&format!(".entry {}", k.function)), "PTX for {arch} lacks the kernel {}", k.function);
        }
        // IEEE-exact: no fused or approximate floating-point instructions, no flush to zero.
        for bad in ["fma.rn.f32", ".ftz.f32", "approx"] {
            assert!(!text.contains(bad), "PTX for {arch} contains `{bad}`");
        }
        eprintln!("{arch}: {} bytes of PTX", text.len());
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn kernels_compile_with_nvrtc_for_sm89_and_sm90() {
    eprintln!("SKIP: built without the `cuda` feature (cargo test -p mmaemu-kernels --features cuda)");
}
