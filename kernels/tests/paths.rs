//! Which path a preset's chains run on (kernels/README.md, "How it is exact", step 3): f32 lanes (`narrow`) for
//! early c while a block sum stays below 2^24 and the scale 2^(frac - min_exp) is a normal f32, f64 lanes (`wide`)
//! while it stays below 2^53, the model's own chain (`scalar`) beyond.

// A block sum is at most nfma·(2^(frac+2) − 1) terms plus an aligned accumulator below 2^(frac+1). The
// boundaries below are worked out by hand from that bound:
// - frac = 13: 511·32767 + 16384 = 16,760,321 <= 2^24, 512·32767 + 16384 = 16,793,088 > 2^24 (ada and hopper's
//   frac allows blocks of up to 511 products);
// - frac = 1: 2,396,744·7 + 4 = 16,777,212 <= 2^24, 2,396,745·7 + 4 = 16,777,219 > 2^24;
// - frac = 40: 2047·(2^42 − 1) + 2^41 = 2^53 − 2^41 − 2047 <= 2^53, 2048·(2^42 − 1) + 2^41 = 2^53 + 2^41 − 2048
//   > 2^53;
// - the scale 2^(frac − E), E >= min_exp, is a normal f32 for every E while min_exp <= frac + 126.

use mmaemu_kernels::CpuEngine;
use mmaemu_model::{CEntry, Preset, PresetSpec};

fn custom(nfma: u32, frac: u32, min_exp: i32, c_entry: CEntry) -> Preset {
    let spec = PresetSpec::custom("path", nfma, frac, 10, min_exp, c_entry, None);
    Preset::custom(spec.clone()).unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

fn path(nfma: u32, frac: u32, min_exp: i32, c_entry: CEntry) -> &'static str {
    CpuEngine::path_name(&custom(nfma, frac, min_exp, c_entry))
}

#[test]
fn the_built_in_presets() {
    assert_eq!(CpuEngine::path_name(&Preset::ada()), "narrow");
    assert_eq!(CpuEngine::path_name(&Preset::hopper()), "narrow");
    // Late c: the block sum is converted and added to c after the block, on f64 lanes.
    assert_eq!(CpuEngine::path_name(&Preset::b200_mma_sync()), "wide");
}

#[test]
fn the_f32_sum_bound() {
    assert_eq!(path(511, 13, -133, CEntry::Early), "narrow");
    assert_eq!(path(512, 13, -133, CEntry::Early), "wide");
    assert_eq!(path(2_396_744, 1, -50, CEntry::Early), "narrow");
    assert_eq!(path(2_396_745, 1, -50, CEntry::Early), "wide");
}

#[test]
fn the_f64_sum_bound() {
    for c_entry in [CEntry::Early, CEntry::Late] {
        assert_eq!(path(2047, 40, -50, c_entry), "wide");
        assert_eq!(path(2048, 40, -50, c_entry), "scalar");
    }
}

#[test]
fn the_f32_scale_bound() {
    assert_eq!(path(16, 13, 139, CEntry::Early), "narrow");
    assert_eq!(path(16, 13, 140, CEntry::Early), "wide");
    assert_eq!(path(16, 13, -1000, CEntry::Early), "narrow");
}

#[test]
fn late_c_is_never_narrow() {
    assert_eq!(path(1, 1, -50, CEntry::Late), "wide");
    assert_eq!(path(16, 13, -133, CEntry::Late), "wide");
}
