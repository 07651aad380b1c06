//! The block-scaled panels' planes on the AVX-512 level for presets off the i32 step whose blocks fit the wide panel
//! step's biased sums (`Params::biased64`): f64 magnitudes, sign masks and exponents of 64 rows of B, each block ended
//! by `crate::x86::scaled_wide_block`.

use super::panel::{Planes, Scaled};
use super::step::{each_block, int32_serves, Blocks};
use crate::driver::{Job, WIDE_PIECE, X86_AVX512};
use crate::kernel::Params;
use crate::tables::{Lut, ZERO_EXP};
use std::ops::Range;

/// The panel width of the step (`crate::x86::PANEL`).
const PANEL: usize = 64;

/// Whether the panels of `w` rows on the level `x86` runs use [`WidePlanes`] for a preset's blocks: on the AVX-512
/// level's panels of 64, where the wide panel step's bias has room ([`Params::biased64`]) and the i32 step does not
/// serve.
pub fn serves(p: &Params, w: usize, x86: u8) -> bool {
    cfg!(target_arch = "x86_64") && x86 == X86_AVX512 && w == PANEL && p.biased64 && !int32_serves(p)
}

/// The planes of a piece of a panel of 64 rows of B: per position the magnitudes (f64) and the two sign masks that
/// `crate::x86::wide_planes` makes, and the exponents; the codes and values they are made from where they are not
/// decoded in place.
pub struct WidePlanes {
    pc: Vec<u8>,
    pv: Vec<f32>,
    pm: Vec<f64>,
    sides: Vec<u64>,
    pe: Vec<i8>,
    /// The planes hold the piece: filled on the AVX-512 level, for a panel of 64.
    filled: bool,
}

impl<const W: usize> Planes<W> for WidePlanes {
    #[inline(always)]
    fn piece(_: &Params) -> usize {
        WIDE_PIECE
    }
    #[inline(always)]
    fn new(len: usize) -> Self {
        WidePlanes {
            pc: vec![0u8; len * PANEL],
            pv: vec![0f32; len * PANEL],
            pm: vec![0f64; len * PANEL],
            sides: vec![0u64; 2 * len],
            pe: vec![ZERO_EXP; len * PANEL],
            filled: false,
        }
    }
    #[inline(always)]
    fn fill<const X86: u8>(
        &mut self,
        s: &Scaled<'_>,
        job: &Job<'_>,
        (q0, q1): (usize, usize),
        cols: Range<usize>,
    ) -> bool {
        self.filled = false;
        #[cfg(target_arch = "x86_64")]
        if X86 == X86_AVX512 && W == PANEL {
            let (len, k) = (q1 - q0, s.k);
            let (pm, sides, pe) =
                (&mut self.pm[..len * PANEL], &mut self.sides[..2 * len], &mut self.pe[..len * PANEL]);
            self.filled = true;
            if crate::driver::vbmi() && cols.len() == PANEL && len.is_multiple_of(16) && q1 <= k {
                // SAFETY: the CPU has VBMI and this tile runs on the AVX-512 level; B holds the panel's 64 rows
                // through position q1 <= K.
                return unsafe {
                    crate::x86::wide_panel_piece(&s.b[cols.start * k..], (k, q0, len), &s.lb, (pm, sides, pe))
                };
            }
            let (pc, pv) = (&mut self.pc[..len * PANEL], &mut self.pv[..len * PANEL]);
            job.chain_panel_codes::<PANEL>(q0, q1, cols, pc, X86);
            s.lb.decode(pc, pv, pe);
            // SAFETY: this tile runs on the AVX-512 level.
            unsafe { crate::x86::wide_planes(pv, pm, sides) };
            return job.nonfinite_in_watched(pc);
        }
        false
    }
    #[inline(always)]
    fn steps<const HT: bool>(&self, a: &[u8], nblk: usize, la: &Lut, bl: &Blocks<'_>, c: &mut [f32; W]) {
        let c: Result<&mut [f32; PANEL], _> = c.as_mut_slice().try_into();
        let c = match c {
            Ok(c) if self.filled => c,
            // Not reached (`serves` holds only for panels of 64 on the AVX-512 level): every output to the model.
            Ok(c) => return c.fill(f32::NAN),
            Err(_) => return,
        };
        blocks(self, a, nblk, la, bl, c);
    }
}

/// [`Planes::steps`] of [`WidePlanes`], filled.
#[inline(always)]
fn blocks(planes: &WidePlanes, a: &[u8], nblk: usize, la: &Lut, bl: &Blocks<'_>, c: &mut [f32; PANEL]) {
    let (p, nfma) = (bl.p, bl.p.nfma);
    each_block::<PANEL>(a, nblk, la, &planes.pe, bl, c, |blk, ab, (e, s, nan), c| {
        let o = blk * nfma;
        let block = (&planes.pm[o * PANEL..(o + nfma) * PANEL], &planes.sides[2 * o..2 * (o + nfma)]);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the planes were filled on the AVX-512 level (`WidePlanes::filled`), whose CPU has AVX-512F/BW/VL/DQ
        // and AVX2; the block exponents and scales are the step's (`super::step`), which keep the factors normal.
        unsafe {
            match (p.late, p.nearest) {
                (false, false) => crate::x86::scaled_wide_block::<false, false>(ab, la, block, (e, s, nan), c, p),
                (false, true) => crate::x86::scaled_wide_block::<false, true>(ab, la, block, (e, s, nan), c, p),
                (true, false) => crate::x86::scaled_wide_block::<true, false>(ab, la, block, (e, s, nan), c, p),
                (true, true) => crate::x86::scaled_wide_block::<true, true>(ab, la, block, (e, s, nan), c, p),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (block, nan, c.fill(f32::NAN));
    });
}
