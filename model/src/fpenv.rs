//! The calling thread's floating-point environment (docs/reference.md §5.2 step 12, §9.2): every entry point that
//! computes refuses to run while the CPU flushes subnormals (FTZ, DAZ) or rounds other than to nearest, because
//! mmaemu's fp32 arithmetic needs IEEE subnormals and round to nearest, ties to even.

// The state is read from the control register (x86_64 MXCSR, aarch64 FPCR) and, on every target, also probed by
// arithmetic (`flushes_subnormals`, `probe_rounds_off_nearest`), so that a mode this module does not decode is caught.

use crate::error::{Category, Error, Result};

/// What the control register says, where this target has one that is decoded here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushFlags {
    /// Subnormal results are flushed to zero (x86 MXCSR.FTZ, bit 15; aarch64 FPCR.FZ, bit 24).
    pub ftz: bool,
    /// Subnormal inputs are read as zero (x86 MXCSR.DAZ, bit 6; aarch64 has no separate flag).
    pub daz: bool,
}

/// The calling thread's control register (x86_64 MXCSR, aarch64 FPCR); None on other targets.
fn control_register() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut csr: u32 = 0;
        // SAFETY: STMXCSR stores the 32-bit MXCSR into the given, valid and aligned, location; SSE is part
        // of the x86_64 baseline.
        unsafe {
            core::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags));
        }
        Some(u64::from(csr))
    }
    #[cfg(target_arch = "aarch64")]
    {
        let fpcr: u64;
        // SAFETY: reading FPCR has no side effects and is allowed at EL0.
        unsafe {
            core::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack, preserves_flags));
        }
        Some(fpcr)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        None
    }
}

/// The flush flags of the calling thread's control register; None on targets without a decoded one.
pub fn flush_flags() -> Option<FlushFlags> {
    let csr = control_register()?;
    if cfg!(target_arch = "aarch64") {
        let fz = csr & (1 << 24) != 0;
        return Some(FlushFlags { ftz: fz, daz: fz });
    }
    Some(FlushFlags { ftz: csr & (1 << 15) != 0, daz: csr & (1 << 6) != 0 })
}

/// The rounding field of the calling thread's control register (x86 MXCSR.RC, bits 13–14; aarch64 FPCR.RMode,
/// bits 22–23; 0 is round to nearest on both); None on targets without a decoded one.
pub fn rounding_field() -> Option<u8> {
    let csr = control_register()?;
    let shift = if cfg!(target_arch = "aarch64") { 22 } else { 13 };
    Some(((csr >> shift) & 3) as u8)
}

/// §5.2 step 12: does the CPU flush fp32 subnormals to zero? The arithmetic probe; [`check`]
/// also reads the control register. Out of line, as the other probe.
#[inline(never)]
pub fn flushes_subnormals() -> bool {
    let tiny = std::hint::black_box(3.0f64 * 2f64.powi(-149)) as f32;
    // 2^-130 from its bits: an unoptimised `2f32.powi(-130)` computes 1 / 2^130, which overflows to 0.
    let half = std::hint::black_box(f32::from_bits(0x0008_0000)) * std::hint::black_box(0.5f32);
    tiny == 0.0 || half == 0.0
}

/// §5.2 step 12: does fp32 arithmetic round other than to nearest? The arithmetic probe; [`check`] also reads the
/// control register. 1 + 2^−25 (a quarter of 1's ulp) stays 1 only when rounding is not upward; 1 + 3·2^−25 (three
/// quarters) becomes 1 + 2^−23 only when rounding is not downward or toward zero. Out of line: the optimiser takes
/// floating-point arithmetic for pure and may move it across a write of the control register (an `asm!` block, as
/// a caller's `fesetround` is), but not a call whose effects it cannot see.
#[inline(never)]
pub fn probe_rounds_off_nearest() -> bool {
    let one = std::hint::black_box(1.0f32);
    // 2^-25 and 3 * 2^-25 from their bits, exact in any rounding mode.
    let quarter = std::hint::black_box(f32::from_bits(0x3300_0000));
    let three_quarters = std::hint::black_box(f32::from_bits(0x33C0_0000));
    one + quarter != 1.0 || one + three_quarters != f32::from_bits(0x3F80_0001)
}

/// The message of the flush-to-zero error (docs/reference.md §5.2 step 12).
pub const FLUSH_MESSAGE: &str = "the CPU flushes subnormals to zero (FTZ/DAZ): mmaemu's fp32 arithmetic needs \
                                 subnormals; clear the flag before calling";

/// The message of the rounding-mode error (docs/reference.md §5.2 step 12).
pub const ROUNDING_MESSAGE: &str = "the CPU rounds other than to nearest (its rounding mode was changed): mmaemu's \
                                    fp32 arithmetic needs round to nearest, ties to even; restore it before calling";

/// Does the calling thread flush subnormals (register flags or the arithmetic probe)?
pub fn flushes() -> bool {
    flush_flags().is_some_and(|f| f.ftz || f.daz) || flushes_subnormals()
}

/// Does the calling thread round other than to nearest (register field or the arithmetic probe)?
pub fn rounds_off_nearest() -> bool {
    rounding_field().is_some_and(|r| r != 0) || probe_rounds_off_nearest()
}

/// Would [`check`] refuse the calling thread: does it flush subnormals or round other than to nearest?
pub fn refuses() -> bool {
    flushes() || rounds_off_nearest()
}

/// MmaemuError (docs/reference.md §7.1) if the calling thread flushes subnormals or rounds other than to nearest;
/// call it before computing.
pub fn check() -> Result<()> {
    if flushes() {
        return Err(Error::new(Category::Mmaemu, FLUSH_MESSAGE));
    }
    if rounds_off_nearest() {
        return Err(Error::new(Category::Mmaemu, ROUNDING_MESSAGE));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_environment_keeps_subnormals() {
        if let Some(f) = flush_flags() {
            assert!(!f.ftz && !f.daz, "{f:?}");
        }
        assert!(check().is_ok());
    }

    #[cfg(target_arch = "x86_64")]
    fn with_mxcsr<T>(bits: u32, f: impl FnOnce() -> T) -> T {
        let mut old: u32 = 0;
        // SAFETY: STMXCSR / LDMXCSR of this thread's MXCSR; the old value is restored before returning, and
        // only the FTZ, DAZ and rounding bits are changed.
        unsafe {
            core::arch::asm!("stmxcsr [{}]", in(reg) &mut old, options(nostack, preserves_flags));
            let new = old | bits;
            core::arch::asm!("ldmxcsr [{}]", in(reg) &new, options(nostack, preserves_flags));
        }
        let r = f();
        // SAFETY: as above.
        unsafe {
            core::arch::asm!("ldmxcsr [{}]", in(reg) &old, options(nostack, preserves_flags));
        }
        r
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn ftz_and_daz_are_refused() {
        for (bit, ftz, daz) in [(1u32 << 15, true, false), (1u32 << 6, false, true)] {
            let (flags, err) = with_mxcsr(bit, || (flush_flags(), check().err()));
            assert_eq!(flags, Some(FlushFlags { ftz, daz }));
            let err = err.expect("a flushing thread is refused");
            assert_eq!(err.category(), Category::Mmaemu);
            assert_eq!(err.message(), FLUSH_MESSAGE);
        }
        assert!(check().is_ok());
    }

    /// Rounding upward (RC = 0b10), downward (0b01) and toward zero (0b11) are each refused, by the register and by
    /// the arithmetic probe alone; round to nearest is not.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn rounding_off_nearest_is_refused() {
        for rc in 1u32..=3 {
            let (field, probed, err) =
                with_mxcsr(rc << 13, || (rounding_field(), probe_rounds_off_nearest(), check().err()));
            assert_eq!(field, Some(rc as u8));
            assert!(probed, "the probe misses RC = {rc:#b}");
            let err = err.expect("a thread rounding off nearest is refused");
            assert_eq!(err.category(), Category::Mmaemu);
            assert_eq!(err.message(), ROUNDING_MESSAGE);
        }
        assert_eq!(rounding_field(), Some(0));
        assert!(!probe_rounds_off_nearest() && !refuses());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn an_empty_product_returns_before_the_check() {
        // docs/reference.md §5.2 step 4: M = 0, N = 0 or K = 0 gives zeros with no flush-to-zero check.
        use crate::{accumulate, Format, Operands, Preset, SplitK};
        let codes = [0x38u8; 4 * 8];
        let ops = |m: usize, n: usize, k: usize| Operands {
            fa: Format::E4m3,
            fb: Format::E4m3,
            a: &codes[..m * k],
            b: &codes[..n * k],
            m,
            n,
            k,
        };
        let got = with_mxcsr(1 << 15, || {
            [(0, 4, 8), (4, 0, 8), (4, 4, 0), (4, 4, 8)]
                .map(|(m, n, k)| accumulate(&Preset::hopper(), &ops(m, n, k), true, SplitK::NONE))
        });
        assert_eq!(got[0].as_deref().ok(), Some(&[][..]));
        assert_eq!(got[1].as_deref().ok(), Some(&[][..]));
        assert_eq!(got[2].as_deref().ok(), Some(&[0.0f32; 16][..]));
        assert!(got[3].is_err());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn computing_entry_points_check_first() {
        use crate::dtype::Dtype;
        use crate::scaled_mm::ScaledMm;
        use crate::tensor::View;
        use crate::{accumulate, dot, Format, Operands, Preset, SplitK};
        let codes = vec![0x38u8; 16 * 32];
        let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &codes, b: &codes, m: 16, n: 16, k: 32 };
        let a = View::packed(Dtype::Float8E4m3fn, &[16, 32], &codes);
        let mut call = ScaledMm::new(a.clone(), a.t(), 1.0, 1.0);
        call.splitk = crate::SplitRequest::Count(1);
        // FTZ, DAZ, then rounding upward, downward and toward zero.
        for (bits, message) in [
            (1 << 15, FLUSH_MESSAGE),
            (1 << 6, FLUSH_MESSAGE),
            (1 << 14, ROUNDING_MESSAGE),
            (1 << 13, ROUNDING_MESSAGE),
            (3 << 13, ROUNDING_MESSAGE),
        ] {
            let errors = with_mxcsr(bits, || {
                [
                    dot(&Preset::hopper(), Format::E4m3, Format::E4m3, &codes[..32], &codes[..32], None).err(),
                    accumulate(&Preset::hopper(), &ops, true, SplitK::NONE).err(),
                    call.clone().run().err(),
                ]
            });
            for e in errors {
                let e = e.expect("refused");
                assert_eq!((e.category(), e.message()), (Category::Mmaemu, message));
            }
        }
        assert!(call.run().is_ok());
    }
}
