//! The x86 levels' panels for wide-path jobs with room for their bias: on AVX-512 each piece of a panel of 64 rows of
//! B decoded into f64 magnitudes, sign masks and exponents (in place where the CPU has VBMI), every row of the tile
//! through `crate::x86::wide_panel_blocks`; on AVX2 with FMA the same by halves of a panel of 32, by sign-split planes.

#[cfg(target_arch = "x86_64")]
use super::fused_panel::Lines;
#[cfg(target_arch = "x86_64")]
use super::panel::panel_codes_x86;
use super::Job;
#[cfg(target_arch = "x86_64")]
use super::{one_run, rows_of_a, vbmi, ChunkPlan, Piece, TileOutputs, WIDE_PIECE};
use crate::kernel::Path;
#[cfg(target_arch = "x86_64")]
use crate::tables::ZERO_EXP;
#[cfg(target_arch = "x86_64")]
use std::ops::Range;

/// Whether the AVX-512 level runs the job's panels on the wide panel step: a wide-path job with room for the bias
/// ([`crate::kernel::Params::biased64`]) that none of `crate::small`'s steps serves.
pub fn wide_panels(job: &Job) -> bool {
    let p = &job.p;
    p.path == Path::Wide && !p.single && !p.int32 && p.biased64
}

/// One panel tile of the AVX-512 level where [`wide_panels`] holds: `rows` of A against the panel `cols` of B (at
/// most 64). Returns `rows.len()` rows of `cols.len()` results.
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL/DQ and AVX2 (the caller is the AVX-512 level's tile).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn tile_wide(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    match (job.p.late, job.p.nearest) {
        (true, true) => tile_with::<true, true>(job, rows, cols),
        (true, false) => tile_with::<true, false>(job, rows, cols),
        (false, true) => tile_with::<false, true>(job, rows, cols),
        (false, false) => tile_with::<false, false>(job, rows, cols),
    }
}

/// [`tile_wide`] for the job's c entry (`LATE`) and block rounding (`NE`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn tile_with<const LATE: bool, const NE: bool>(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    use crate::x86::PANEL;
    let (nr, ncols, len) = (rows.len(), cols.len(), super::whole_blocks(job.p.nfma, WIDE_PIECE));
    let tile = TileOutputs::new(&rows, &cols, PANEL);
    let mut piece = WidePiece::<LATE, NE> {
        rows: rows.clone(),
        cols,
        pc: vec![0u8; len * PANEL],
        pv: vec![0f32; len * PANEL],
        pm: Lines::new(len * PANEL, 0.0),
        sides: vec![0u64; 2 * len],
        pe: Lines::new(len * PANEL, ZERO_EXP),
        ga: vec![0u8; nr * len],
        in_place: vbmi(),
    };
    let acc = job.accumulate(&tile, len, &mut piece);
    let mut out = Vec::with_capacity(nr * ncols);
    acc.chunks_exact(PANEL).for_each(|r| out.extend_from_slice(&r[..ncols]));
    out
}

/// The scratch of a wide panel tile: the piece's codes and values (where it is not decoded in place), its planes,
/// and the gathered rows of A.
#[cfg(target_arch = "x86_64")]
struct WidePiece<const LATE: bool, const NE: bool> {
    rows: Range<usize>,
    cols: Range<usize>,
    pc: Vec<u8>,
    pv: Vec<f32>,
    pm: Lines<f64>,
    sides: Vec<u64>,
    pe: Lines<i8>,
    ga: Vec<u8>,
    /// The CPU has AVX-512 VBMI: a whole panel's piece of one run of k is decoded from B in place
    /// (`crate::x86::wide_panel_piece`).
    in_place: bool,
}

#[cfg(target_arch = "x86_64")]
impl<const LATE: bool, const NE: bool> Piece for WidePiece<LATE, NE> {
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        use crate::x86::PANEL;
        let (nr, len) = (self.rows.len(), q1 - q0);
        let (pm, sides, pe) = (&mut self.pm.get_mut()[..len * PANEL], &mut self.sides[..2 * len], self.pe.get_mut());
        let pe = &mut pe[..len * PANEL];
        match one_run(chunk, q0, q1) {
            Some(kr) if self.in_place && self.cols.len() == PANEL && len.is_multiple_of(16) => {
                let b = &job.b[self.cols.start * job.k..];
                // SAFETY: `in_place` holds only where the CPU has VBMI, and this tile runs on the AVX-512 level.
                if unsafe { crate::x86::wide_panel_piece(b, (job.k, kr.start, len), &job.lb, (pm, sides, pe)) } {
                    job.saw_nonfinite_b();
                }
            }
            _ => {
                let (pc, pv) = (&mut self.pc[..len * PANEL], &mut self.pv[..len * PANEL]);
                // SAFETY: this tile runs on the AVX-512 level, whose CPU has AVX2.
                unsafe { panel_codes_x86::<PANEL>(job, chunk, q0, q1, self.cols.clone(), pc) };
                if job.nonfinite_in_watched(pc) {
                    job.saw_nonfinite_b();
                }
                job.lb.decode(pc, pv, pe);
                // SAFETY: this tile runs on the AVX-512 level (see `tile_wide`).
                unsafe { crate::x86::wide_planes(pv, pm, sides) };
            }
        }
        let nblk = len / job.p.nfma;
        let (a, stride) = rows_of_a(job, self.rows.clone(), chunk, q0, q1, &mut self.ga[..nr * len]);
        let (pm, pe) = (&self.pm.get()[..len * PANEL], &self.pe.get()[..len * PANEL]);
        for (r, c) in acc.chunks_exact_mut(PANEL).enumerate() {
            let a = &a[r * stride..r * stride + len];
            // SAFETY: as above.
            unsafe { crate::x86::wide_panel_blocks::<LATE, NE>(a, nblk, &job.la, pm, &self.sides, pe, c, &job.p) };
        }
    }
}

/// Whether the AVX2 level runs the job's panels on its wide panel step (`crate::x86::wide_panel_blocks_avx2`): where
/// [`wide_panels`] holds and the CPU has FMA besides AVX2.
pub fn wide_panels_avx2(job: &Job) -> bool {
    wide_panels(job) && super::fused_panel::fma()
}

/// One panel tile of the AVX2 level where [`wide_panels_avx2`] holds: `rows` of A against the panel `cols` of B (at
/// most 32). Returns `rows.len()` rows of `cols.len()` results.
///
/// # Safety
/// The CPU must support AVX2 and FMA (the caller is the AVX2 level's tile, where [`wide_panels_avx2`] holds).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn tile_wide_avx2(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    if job.p.late {
        tile_avx2_with::<true>(job, rows, cols)
    } else {
        tile_avx2_with::<false>(job, rows, cols)
    }
}

/// [`tile_wide_avx2`] for the job's c entry (`LATE`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn tile_avx2_with<const LATE: bool>(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    use crate::x86::WIDE_PANEL_AVX2 as W;
    let (nr, ncols, len) = (rows.len(), cols.len(), super::whole_blocks(job.p.nfma, WIDE_PIECE));
    let tile = TileOutputs::new(&rows, &cols, W);
    let mut piece = WidePieceAvx2::<LATE> {
        rows: rows.clone(),
        cols,
        pc: vec![0u8; len * W],
        pm: vec![0f64; len * W],
        pe: vec![ZERO_EXP; len * W / 2],
        ga: vec![0u8; nr * len],
        ends: vec![0f32; len / job.p.nfma * W / 2],
    };
    let acc = job.accumulate(&tile, len, &mut piece);
    let mut out = Vec::with_capacity(nr * ncols);
    acc.chunks_exact(W).for_each(|r| out.extend_from_slice(&r[..ncols]));
    out
}

/// The scratch of an AVX2 wide panel tile: the piece's codes, the planes of half the panel, the gathered rows of A,
/// and late c's block results.
#[cfg(target_arch = "x86_64")]
struct WidePieceAvx2<const LATE: bool> {
    rows: Range<usize>,
    cols: Range<usize>,
    pc: Vec<u8>,
    pm: Vec<f64>,
    pe: Vec<i8>,
    ga: Vec<u8>,
    ends: Vec<f32>,
}

#[cfg(target_arch = "x86_64")]
impl<const LATE: bool> Piece for WidePieceAvx2<LATE> {
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        use crate::x86::WIDE_PANEL_AVX2 as W;
        let (nr, len) = (self.rows.len(), q1 - q0);
        let pc = &mut self.pc[..len * W];
        // SAFETY: this tile runs on the AVX2 level (see `tile_wide_avx2`).
        unsafe { panel_codes_x86::<W>(job, chunk, q0, q1, self.cols.clone(), pc) };
        let nblk = len / job.p.nfma;
        let (a, stride) = rows_of_a(job, self.rows.clone(), chunk, q0, q1, &mut self.ga[..nr * len]);
        // Each half of the panel in turn (a half of padding columns alone is left out): its planes, then every row.
        for half in 0..self.cols.len().div_ceil(W / 2) {
            // SAFETY: this tile runs on the AVX2 level with FMA.
            if unsafe { crate::x86::wide_planes_avx2(pc, half, &job.lb, &mut self.pm, &mut self.pe) } {
                job.saw_nonfinite_b();
            }
            for (r, c) in acc.chunks_exact_mut(W).enumerate() {
                let (a, c) = (&a[r * stride..r * stride + len], &mut c[half * W / 2..(half + 1) * W / 2]);
                let planes = (&self.pm[..], &self.pe[..]);
                // SAFETY: as above.
                unsafe {
                    crate::x86::wide_panel_blocks_avx2::<LATE>(
                        a,
                        nblk,
                        (&job.la, &job.lb),
                        planes,
                        c,
                        &mut self.ends,
                        &job.p,
                    )
                };
            }
        }
    }
}
