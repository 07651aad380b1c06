//! The CUDA backend (docs/reference.md §9.5): integer-exact chain kernels (chain.cu) compiled at run time with NVRTC
//! and launched through cudarc, behind a self-test gate.

// This module always builds (no CUDA dependency): the kernel source with the model's decode tables, the kernel
// parameters of a preset and format pair, a Rust emulation of the kernels' integer algorithm (`emulate`) and the gate's
// battery of adversarial cases. The `cuda` cargo feature adds the NVRTC compiler and the device side (`device`):
// loading, launching, the self-test, and `device::CudaEngine`, a `ChainEngine` the model's `execute` drives (the plan,
// the slow chunks, the split combination and the non-finite patch stay in the model).

pub mod emulate;

#[cfg(feature = "cuda")]
pub mod device;
#[cfg(feature = "cuda")]
pub mod nvrtc;

use mmaemu_model::accumulate::{ChainEngine, Operands, ReferenceEngine};
use mmaemu_model::format::{Class, Decoded, Format};
use mmaemu_model::preset::{CEntry, Preset, PresetSpec};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// The CUDA C source of the kernels, without the decode tables.
pub const CHAIN_CU: &str = include_str!("chain.cu");

/// One CUDA kernel of chain.cu.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    /// Its name (`cuda:<name>` selects it alone).
    pub name: &'static str,
    /// The CUDA function.
    pub function: &'static str,
    /// Outputs per block edge: the launch grid is ceil(n / tile) x ceil(m / tile) blocks of 16 x 16 threads.
    pub tile: usize,
    serves: fn(&ChainParams) -> Result<(), String>,
}

impl Kernel {
    /// Whether the kernel computes these parameters exactly, or why not.
    pub fn serves(&self, p: &ChainParams) -> Result<(), String> {
        (self.serves)(p)
    }
}

/// `mmaemu_chain_narrow`: early c, nfma <= 32, frac >= ma + mb, -400 <= min_exp <= 400 (so that a product
/// with a zero operand, exponent <= -497, never wins the maximum, and shift counts stay small), and 32-bit
/// block sums:
/// (nfma + 1) * 2^(frac + 2) < 2^31.
fn serves_narrow(p: &ChainParams) -> Result<(), String> {
    let sum_bound = (p.nfma as i64 + 1) << (p.frac + 2).clamp(0, 40);
    if p.late != 0 {
        Err("kernel narrow serves early-c presets only".into())
    } else if p.nfma > 32 {
        Err(format!("kernel narrow serves nfma <= 32, not {}", p.nfma))
    } else if p.frac < p.mab {
        Err(format!("kernel narrow needs frac >= ma + mb ({} < {})", p.frac, p.mab))
    } else if !(-400..=400).contains(&p.min_exp) {
        Err(format!("kernel narrow needs -400 <= min_exp <= 400, not {}", p.min_exp))
    } else if p.frac + 2 > 40 || sum_bound >= 1 << 31 {
        Err(format!("kernel narrow needs 32-bit block sums; nfma = {}, frac = {}", p.nfma, p.frac))
    } else {
        Ok(())
    }
}

/// `mmaemu_chain_tiled`: one block of nfma <= 32 codes in shared memory.
fn serves_tiled(p: &ChainParams) -> Result<(), String> {
    if p.nfma > 32 {
        Err(format!("kernel tiled serves nfma <= 32, not {}", p.nfma))
    } else {
        Ok(())
    }
}

/// `mmaemu_chain_generic`: every parameter set [`ChainParams::new`] accepts.
fn serves_all(_: &ChainParams) -> Result<(), String> {
    Ok(())
}

/// The kernels, fastest first.
pub const KERNELS: [Kernel; 3] = [
    Kernel { name: "narrow", function: "mmaemu_chain_narrow", tile: 64, serves: serves_narrow },
    Kernel { name: "tiled", function: "mmaemu_chain_tiled", tile: 64, serves: serves_tiled },
    Kernel { name: "generic", function: "mmaemu_chain_generic", tile: 16, serves: serves_all },
];

/// The virtual architectures the kernels are compiled for in CI (sm_89: ada, sm_90: hopper).
pub const CI_ARCHS: [&str; 2] = ["compute_89", "compute_90"];

/// The kernels' parameters for one preset and pair of operand formats (`struct ChainParams` in chain.cu).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainParams {
    /// Products per block.
    pub nfma: i32,
    /// Fraction bits of the aligned terms.
    pub frac: i32,
    /// Fraction bits of the block result.
    pub frac_out: i32,
    /// Floor of the block exponent.
    pub min_exp: i32,
    /// 1: c enters late (fp32 addition); 0: early.
    pub late: i32,
    /// Mantissa bits of A plus those of B.
    pub mab: i32,
    /// Decode table of A (0: e4m3, 1: e5m2).
    pub ta: i32,
    /// Decode table of B.
    pub tb: i32,
}

fn table_index(f: Format) -> i32 {
    match f {
        Format::E4m3 => 0,
        Format::E5m2 => 1,
    }
}

impl ChainParams {
    /// The parameters of `preset` for A of format `fa` and B of format `fb`, or why the kernels cannot serve
    /// it: the 64-bit block sum must hold `nfma + 1` terms below `2^(frac + 2)`.
    pub fn new(preset: &Preset, fa: Format, fb: Format) -> Result<ChainParams, String> {
        let nfma = preset.nfma();
        if preset.rounding() != mmaemu_model::BlockRounding::Truncate {
            return Err(format!(
                "preset '{}' rounds the block result to nearest even; the CUDA kernels truncate it",
                preset.name()
            ));
        }
        let bits = preset.frac() as u64 + 2 + (usize::BITS - nfma.leading_zeros()) as u64 + 1;
        if bits > 62 || nfma > i32::MAX as usize {
            return Err(format!(
                "preset '{}' (nfma = {nfma}, frac = {}) needs more than a 64-bit block sum",
                preset.name(),
                preset.frac()
            ));
        }
        Ok(ChainParams {
            nfma: nfma as i32,
            frac: preset.frac() as i32,
            frac_out: preset.frac_out() as i32,
            min_exp: preset.min_exp(),
            late: (preset.c_entry() == CEntry::Late) as i32,
            mab: (fa.mbits() + fb.mbits()) as i32,
            ta: table_index(fa),
            tb: table_index(fb),
        })
    }

    /// The kernels able to run these parameters, fastest first.
    pub fn kernels(&self) -> impl Iterator<Item = &'static Kernel> + '_ {
        KERNELS.iter().filter(|k| k.serves(self).is_ok())
    }
}

/// The packed decode entry of chain.cu: bits 0–7 sig, bit 8 sign, bits 16–31 the operand exponent. Zeros
/// and non-finite codes pack as sig 0 (a zero product).
pub fn pack(d: Decoded) -> i32 {
    match d.class {
        Class::Finite => d.sig as i32 | ((d.neg as i32) << 8) | ((d.exp as i32) << 16),
        _ => (d.neg as i32) << 8,
    }
}

/// The decode tables of both formats, packed (`0`: e4m3, `1`: e5m2), built from the model's tables.
#[derive(Clone, Debug)]
pub struct DecodeTables(pub [[i32; 256]; 2]);

impl DecodeTables {
    /// The packed tables of the model's formats.
    pub fn from_model() -> DecodeTables {
        let mut t = [[0i32; 256]; 2];
        for f in Format::ALL {
            for (c, d) in f.table().iter().enumerate() {
                t[table_index(f) as usize][c] = pack(*d);
            }
        }
        DecodeTables(t)
    }
}

/// The complete kernel source: the decode tables in constant memory, then chain.cu.
pub fn source() -> String {
    let t = DecodeTables::from_model();
    let mut s = String::from("// Generated by mmaemu-kernels from the model's FP8 decode tables.\n");
    s.push_str("__constant__ int MMAEMU_DECODE[2][256] = {\n");
    for row in &t.0 {
        s.push_str("  {");
        for (i, v) in row.iter().enumerate() {
            if i % 16 == 0 {
                s.push_str("\n   ");
            }
            s.push_str(&format!(" {v},"));
        }
        s.push_str("\n  },\n");
    }
    s.push_str("};\n\n");
    s.push_str(CHAIN_CU);
    s
}

/// Why there is no GPU in a build without the `cuda` feature.
pub const NOT_BUILT: &str = "this build has no CUDA backend (build with --features cuda)";

/// Whether this build has the CUDA backend (the `cuda` feature).
pub const fn built() -> bool {
    cfg!(feature = "cuda")
}

/// The index in [`KERNELS`] of the kernel called `name`.
pub fn kernel_index(name: &str) -> Option<usize> {
    KERNELS.iter().position(|k| k.name == name)
}

/// The result of one kernel's self-test.
#[derive(Clone, Debug)]
pub struct KernelReport {
    /// Kernel name (`tiled`, `generic`).
    pub kernel: &'static str,
    /// Gate cases run.
    pub cases: usize,
    /// Ok, or the first failure.
    pub result: Result<(), String>,
}

#[cfg(feature = "cuda")]
type GpuInner = std::sync::Arc<std::sync::Mutex<device::CudaDevice>>;

/// Without the feature no [`Gpu`] can be made: its methods match on this empty type.
#[cfg(not(feature = "cuda"))]
#[derive(Clone)]
enum GpuInner {}

/// One GPU with the kernels compiled for its architecture and loaded. The entry point the backend registry and
/// `mmaemu selftest` use; it exists in every build, and without the feature [`Gpu::open`] reports [`NOT_BUILT`], so
/// callers need no `cfg` of their own.
#[derive(Clone)]
pub struct Gpu {
    /// The device ordinal.
    pub ordinal: usize,
    /// The GPU's name.
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// The virtual architecture the kernels were compiled for (`compute_90`, ...).
    pub arch: String,
    inner: GpuInner,
}

impl Gpu {
    /// Open GPU `ordinal`: probe the driver and NVRTC, compile the kernels for the device's architecture
    /// and load them. Err: why not (no build, no driver, no NVRTC, no device, a compile or load error).
    /// Never panics.
    pub fn open(ordinal: usize) -> Result<Gpu, String> {
        #[cfg(feature = "cuda")]
        {
            let d = device::CudaDevice::open(ordinal)?;
            Ok(Gpu {
                ordinal,
                name: d.name.clone(),
                cc: d.cc,
                arch: d.arch.to_string(),
                inner: std::sync::Arc::new(std::sync::Mutex::new(d)),
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = ordinal;
            Err(NOT_BUILT.to_string())
        }
    }

    /// `NAME (sm_XY)`.
    pub fn description(&self) -> String {
        format!("{} (sm_{}{})", self.name, self.cc.0, self.cc.1)
    }

    /// The self-test gate of the kernels with the given indices (into [`KERNELS`]): every case of
    /// [`gate_cases`] a kernel serves, its bits compared with the model's.
    pub fn self_test(&self, kernels: &[usize]) -> Vec<KernelReport> {
        #[cfg(feature = "cuda")]
        {
            match self.inner.lock() {
                Ok(d) => d.self_test(kernels),
                Err(_) => kernels
                    .iter()
                    .map(|&k| KernelReport {
                        kernel: KERNELS[k].name,
                        cases: 0,
                        result: Err("device lock poisoned".into()),
                    })
                    .collect(),
            }
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = kernels;
            match self.inner {}
        }
    }

    /// A chain engine named `name` over the kernels `kernels` (indices into [`KERNELS`], fastest first;
    /// only kernels that passed their gate), which computes a call with `fallback` (and records a fallback
    /// warning, see [`GpuEngine::warnings`]) when no kernel serves it or a launch fails.
    pub fn engine(
        &self,
        name: &str,
        kernels: Vec<usize>,
        fallback: std::sync::Arc<dyn ChainEngine + Send + Sync>,
    ) -> GpuEngine {
        let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        #[cfg(feature = "cuda")]
        {
            let engine = device::CudaEngine {
                device: self.inner.clone(),
                kernels,
                name: name.to_string(),
                fallback,
                warnings: warnings.clone(),
            };
            GpuEngine { engine: Box::new(engine), warnings }
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (name, kernels, fallback, warnings);
            match self.inner {}
        }
    }
}

/// A [`ChainEngine`] on a GPU (see [`Gpu::engine`]) and the fallback warnings it has recorded.
pub struct GpuEngine {
    /// The engine.
    pub engine: Box<dyn ChainEngine + Send + Sync>,
    warnings: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl GpuEngine {
    /// The fallback warnings recorded so far (launches that failed, calls no kernel serves).
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().map(|w| w.clone()).unwrap_or_default()
    }
}

/// The text of the BackendFallbackWarning emitted when the CUDA backend is skipped for `reason`.
pub fn fallback_warning(reason: &str) -> String {
    format!("backend 'cuda' unavailable, using the CPU backend: {reason}")
}

/// One case of the self-test gate: chains of one preset and format pair over fixed adversarial operands.
#[derive(Clone, Debug)]
pub struct GateCase {
    /// What the case exercises.
    pub name: String,
    /// The preset.
    pub preset: Preset,
    /// Format of A.
    pub fa: Format,
    /// Format of B.
    pub fb: Format,
    /// A, [m, l].
    pub a: Vec<u8>,
    /// B, [n, l].
    pub b: Vec<u8>,
    /// Rows of A.
    pub m: usize,
    /// Rows of B.
    pub n: usize,
    /// Chain length.
    pub l: usize,
}

impl GateCase {
    /// The case's operands (the chain length as k).
    pub fn operands(&self) -> Operands<'_> {
        Operands { fa: self.fa, fb: self.fb, a: &self.a, b: &self.b, m: self.m, n: self.n, k: self.l }
    }

    /// The expected bits, from the model (computed at gate time).
    pub fn expected(&self) -> Vec<u32> {
        ReferenceEngine.chains(&self.preset, &self.operands()).iter().map(|x| x.to_bits()).collect()
    }
}

/// A finite code of `f` drawn by `kind`: 0 any finite, 1 subnormal or zero, 2 near the largest, 3 near one.
fn code(rng: &mut ChaCha8Rng, f: Format, kind: u32) -> u8 {
    let mbits = f.mbits();
    loop {
        let sign = rng.random_range(0..2u8) << 7;
        let mag = match kind {
            1 => rng.random_range(0..1u8 << mbits),
            2 => f.max_code() - rng.random_range(0..4u8),
            3 => (((f.bias() as u64 + rng.random_range(0..3u64)) << mbits) as u8) | rng.random_range(0..1u8 << mbits),
            _ => rng.random_range(0..128u8),
        };
        let c = sign | mag;
        if !f.is_nonfinite(c) {
            return c;
        }
    }
}

/// The user-defined presets of the gate (a late one with the widest grid, an odd block size).
pub fn gate_custom_presets() -> Vec<Preset> {
    [
        PresetSpec::custom("gate_late_wide", 7, 40, 23, -140, CEntry::Late, Some(64)),
        PresetSpec::custom("gate_early_odd", 5, 25, 20, -130, CEntry::Early, Some(64)),
    ]
    .into_iter()
    .filter_map(|s| Preset::custom(s).ok())
    .collect()
}

/// The fixed battery of the self-test gate: every built-in preset and two user-defined ones, times every
/// format pair, times random codes, subnormals, exact cancellation, exponent extremes, long and ragged
/// chains and tile-edge shapes.
pub fn gate_cases() -> Vec<GateCase> {
    let mut presets = vec![Preset::ada(), Preset::hopper(), Preset::b200_mma_sync()];
    presets.extend(gate_custom_presets());
    let mut rng = ChaCha8Rng::seed_from_u64(0x9E37_79B9_7F4A_7C15);
    let mut cases = Vec::new();
    for preset in &presets {
        for fa in Format::ALL {
            for fb in Format::ALL {
                // (name, m, n, l, kind of A, kind of B, cancellation)
                let shapes: [(&str, usize, usize, usize, u32, u32, bool); 7] = [
                    ("random", 67, 70, 96, 0, 0, false),
                    ("subnormals", 17, 16, 64, 1, 1, false),
                    ("subnormal x one", 16, 17, 64, 1, 3, false),
                    ("extremes", 16, 16, 128, 2, 2, false),
                    ("cancellation", 33, 31, 64, 0, 0, true),
                    ("long", 4, 5, 4096, 3, 0, false),
                    ("ragged", 65, 66, 37, 0, 1, false),
                ];
                for (name, m, n, l, ka, kb, cancel) in shapes {
                    let mut a: Vec<u8> = (0..m * l).map(|_| code(&mut rng, fa, ka)).collect();
                    let mut b: Vec<u8> = (0..n * l).map(|_| code(&mut rng, fb, kb)).collect();
                    if cancel {
                        // Pairs (x, y) and (x, -y): exact cancellation inside a block, plus one small residue.
                        for r in 0..m {
                            for k in (0..l).step_by(2) {
                                a[r * l + k + 1] = a[r * l + k];
                            }
                        }
                        for r in 0..n {
                            for k in (0..l).step_by(2) {
                                b[r * l + k + 1] = b[r * l + k] ^ 0x80;
                            }
                            b[r * l + l - 1] = code(&mut rng, fb, 1);
                        }
                    }
                    cases.push(GateCase {
                        name: format!("{} {}x{} {name}", preset.name(), fa.name(), fb.name()),
                        preset: preset.clone(),
                        fa,
                        fb,
                        a,
                        b,
                        m,
                        n,
                        l,
                    });
                }
            }
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_has_tables_and_kernels() {
        let s = source();
        assert!(s.contains("__constant__ int MMAEMU_DECODE[2][256]"));
        for k in KERNELS {
            assert!(s.contains(k.function));
        }
    }

    #[test]
    fn params_pack_like_the_model() {
        let p = ChainParams::new(&Preset::hopper(), Format::E4m3, Format::E5m2).unwrap();
        assert_eq!(p, ChainParams { nfma: 32, frac: 13, frac_out: 13, min_exp: -132, late: 0, mab: 5, ta: 0, tb: 1 });
        let p = ChainParams::new(&Preset::b200_mma_sync(), Format::E5m2, Format::E5m2).unwrap();
        assert_eq!((p.late, p.mab, p.ta, p.tb, p.frac, p.frac_out, p.min_exp), (1, 4, 1, 1, 25, 23, -133));
        assert_eq!(std::mem::size_of::<ChainParams>(), 32);
        // The kernels truncate: a nearest-even preset is declined, so the engine falls back.
        let rne = PresetSpec::custom("rne", 32, 25, 23, -133, CEntry::Early, None)
            .with_rounding(mmaemu_model::BlockRounding::NearestEven);
        let e = ChainParams::new(&Preset::custom(rne).unwrap(), Format::E4m3, Format::E4m3).unwrap_err();
        assert!(e.contains("nearest even"), "{e}");
        // Late c: not the narrow kernel.
        assert_eq!(p.kernels().map(|k| k.name).collect::<Vec<_>>(), ["tiled", "generic"]);
        for preset in [Preset::ada(), Preset::hopper()] {
            for (fa, fb) in [(Format::E4m3, Format::E4m3), (Format::E5m2, Format::E4m3), (Format::E5m2, Format::E5m2)] {
                let p = ChainParams::new(&preset, fa, fb).unwrap();
                assert_eq!(p.kernels().count(), 3, "{} {fa} x {fb}", preset.name());
            }
        }
    }

    #[test]
    fn decode_table_round_trip() {
        let t = DecodeTables::from_model();
        for f in Format::ALL {
            for c in 0..=255u8 {
                let d = f.decoded(c);
                let v = t.0[table_index(f) as usize][c as usize];
                let sig = v & 0xFF;
                if d.class == Class::Finite {
                    assert_eq!((sig, (v >> 8) & 1 == 1, v >> 16), (d.sig as i32, d.neg, d.exp as i32));
                } else {
                    assert_eq!(sig, 0);
                }
            }
        }
    }

    #[test]
    fn emulation_passes_the_gate_battery() {
        let t = DecodeTables::from_model();
        let cases = gate_cases();
        assert_eq!(cases.len(), 5 * 4 * 7);
        let mut narrow = 0;
        for case in cases {
            let p = ChainParams::new(&case.preset, case.fa, case.fb).unwrap();
            let want = case.expected();
            let got: Vec<u32> = emulate::chains(&p, &t, &case.operands()).iter().map(|x| x.to_bits()).collect();
            assert_eq!(got, want, "{}", case.name);
            if KERNELS[0].serves(&p).is_ok() {
                narrow += 1;
                let got: Vec<u32> =
                    emulate::chains_narrow(&p, &t, &case.operands()).iter().map(|x| x.to_bits()).collect();
                assert_eq!(got, want, "{} (narrow)", case.name);
            }
        }
        // ada, hopper and the early custom preset, four format pairs, seven cases each.
        assert_eq!(narrow, 3 * 4 * 7);
    }
}
