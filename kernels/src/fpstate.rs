//! The calling thread's floating-point control state for a span of kernel work: set on entry (IEEE subnormals and
//! round to nearest for the self-check, rounding toward zero for a step that truncates by it) and restored, exactly
//! as it was, when the guard is dropped, on every exit path (returns, early returns and unwinding alike).

/// A span with the calling thread's control register (x86-64 MXCSR, aarch64 FPCR) set for the kernels; the value
/// it held before is restored when this guard is dropped. Not `Send`: it must be dropped on the thread it set.
pub struct FpState {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
    #[cfg(target_arch = "aarch64")]
    saved: u64,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// MXCSR's exception masks (bits 7–12) and nothing else: round to nearest, no flush to zero, no denormals as zero,
/// no sticky flags. The power-on value.
#[cfg(target_arch = "x86_64")]
const MXCSR_DEFAULT: u32 = 0x1F80;

/// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6) flags.
#[cfg(target_arch = "x86_64")]
const MXCSR_FLUSH: u32 = 0x8040;

/// MXCSR's rounding-control field (bits 13–14); 0b11 is toward zero.
#[cfg(target_arch = "x86_64")]
const MXCSR_ROUND_TOWARD_ZERO: u32 = 0x6000;

/// The calling thread's MXCSR.
#[cfg(target_arch = "x86_64")]
pub fn mxcsr() -> u32 {
    let mut csr: u32 = 0;
    // SAFETY: STMXCSR stores the 32-bit MXCSR into a valid, aligned location; SSE is part of the x86-64 baseline.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags)) };
    csr
}

/// Load `csr` into the calling thread's MXCSR.
#[cfg(target_arch = "x86_64")]
fn set_mxcsr(csr: u32) {
    // SAFETY: LDMXCSR of a value whose reserved bits (16–31) are clear: every value passed here is either one
    // read from MXCSR or built from its defined fields.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags)) };
}

#[cfg(target_arch = "aarch64")]
fn fpcr() -> u64 {
    let v: u64;
    // SAFETY: reading FPCR has no side effects and is allowed at EL0.
    unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

#[cfg(target_arch = "aarch64")]
fn set_fpcr(v: u64) {
    // SAFETY: writing FPCR at EL0 is allowed; only its mode bits are changed from a value read from it.
    unsafe { std::arch::asm!("msr fpcr, {}", in(reg) v, options(nomem, nostack, preserves_flags)) };
}

impl FpState {
    /// The IEEE default state for the span: subnormals kept (no FTZ, no DAZ), round to nearest even, exceptions
    /// masked. The self-check runs in it, so that its verdict does not depend on the caller's state.
    pub fn ieee() -> FpState {
        #[cfg(target_arch = "x86_64")]
        {
            let saved = mxcsr();
            set_mxcsr(MXCSR_DEFAULT);
            FpState { saved, _not_send: std::marker::PhantomData }
        }
        #[cfg(target_arch = "aarch64")]
        {
            let saved = fpcr();
            // FZ (bit 24), FZ16 (bit 19), rounding mode (bits 22–23), trap enables (bits 8–12, 15) cleared.
            set_fpcr(saved & !((1 << 24) | (1 << 19) | (3 << 22) | (0x1F << 8) | (1 << 15)));
            FpState { saved, _not_send: std::marker::PhantomData }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        FpState { _not_send: std::marker::PhantomData }
    }

    /// The rounding of the vector instructions set toward zero for the span, exceptions masked (x86-64): a step
    /// that truncates its terms by a multiply-add rounded by MXCSR needs it; flush-to-zero stays as the caller had
    /// it (the entry points refuse to compute under it).
    #[cfg(target_arch = "x86_64")]
    pub fn toward_zero() -> FpState {
        let saved = mxcsr();
        set_mxcsr((saved & MXCSR_FLUSH) | MXCSR_DEFAULT | MXCSR_ROUND_TOWARD_ZERO);
        FpState { saved, _not_send: std::marker::PhantomData }
    }
}

impl Drop for FpState {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        set_mxcsr(self.saved);
        #[cfg(target_arch = "aarch64")]
        set_fpcr(self.saved);
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Each guard sets its state for its span and puts back the exact value it found, from a default state and
    /// from one with FTZ, DAZ, an unmasked exception and upward rounding, also when the span unwinds.
    #[test]
    fn the_state_is_set_for_the_span_and_restored() {
        let before = mxcsr();
        for start in [before, (before | 0x8040 | 0x4000) & !0x0400] {
            set_mxcsr(start);
            {
                let _g = FpState::ieee();
                assert_eq!(mxcsr() & !0x3F, MXCSR_DEFAULT, "the self-check's state");
                // 2^-149 survives: no flush to zero.
                assert_ne!(std::hint::black_box(f32::from_bits(2)) * std::hint::black_box(0.5f32), 0.0);
            }
            assert_eq!(mxcsr() & !0x3F, start & !0x3F);
            {
                let _g = FpState::toward_zero();
                assert_eq!(mxcsr() & 0x6000, 0x6000);
                assert_eq!(mxcsr() & 0x8040, start & 0x8040, "flush-to-zero left as it was");
            }
            assert_eq!(mxcsr() & !0x3F, start & !0x3F);
            let unwound = std::panic::catch_unwind(|| {
                let _g = FpState::toward_zero();
                panic!("a span that unwinds");
            });
            assert!(unwound.is_err());
            assert_eq!(mxcsr() & !0x3F, start & !0x3F, "restored on unwinding");
        }
        set_mxcsr(before);
    }
}
