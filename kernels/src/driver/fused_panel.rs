//! The fused panel executor (AVX-512 and AVX2 levels): each piece of a panel of 64 rows of B decoded into the planes
//! of the level's fused panel step (magnitudes, magnitudes by sign and exponents, in place where the CPU has
//! AVX-512 VBMI; values and exponents on AVX2), every row of the tile through that step.

#[cfg(target_arch = "x86_64")]
use super::panel::panel_codes_x86;
#[cfg(target_arch = "x86_64")]
use super::tiles::fused_piece_len;
#[cfg(target_arch = "x86_64")]
use super::{one_run, products, rows_of_a, ChunkPlan, Job, Piece, TileOutputs, X86_AVX2, X86_AVX512};
#[cfg(target_arch = "x86_64")]
use crate::tables::ZERO_EXP;
#[cfg(target_arch = "x86_64")]
use std::ops::Range;

/// One panel tile of the AVX-512 level (`X86` = [`X86_AVX512`]) or the AVX2 level ([`X86_AVX2`]) on the narrow
/// path with room for the bias ([`crate::kernel::Params::biased`]): each piece of the panel decoded into
/// magnitudes, magnitudes by sign and exponents for the fused step [`crate::x86::panel_blocks`], or values and
/// exponents for [`crate::x86::panel_blocks_avx2`], every row through that step. Returns `rows.len()` rows of
/// `cols.len()` results.
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL and AVX2 (`X86_AVX512`: the caller is the AVX-512 level's tile), or AVX2
/// and FMA (`X86_AVX2`: the caller is the AVX2 level's tile, where [`super::avx2_fused`] holds).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn tile_fused<const X86: u8>(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    use crate::x86::{PANEL, SIDED};
    let nfma = job.p.nfma;
    let nr = rows.len();
    let ncols = cols.len();
    let piece_len = fused_piece_len(nfma);
    let tile = TileOutputs::new(&rows, &cols, PANEL);
    let mut piece = FusedPiece::<X86> {
        rows: rows.clone(),
        cols,
        pc: vec![0u8; piece_len * PANEL],
        pm: Lines::new(piece_len * PANEL, 0.0),
        ps: Lines::new(if X86 == X86_AVX2 { 0 } else { piece_len * SIDED }, 0.0),
        pe: Lines::new(piece_len * PANEL, ZERO_EXP),
        ga: vec![0u8; nr * piece_len],
        in_place: X86 == X86_AVX512 && vbmi(),
    };
    let acc = job.accumulate(&tile, piece_len, &mut piece);
    let mut out = Vec::with_capacity(nr * ncols);
    acc.chunks_exact(PANEL).for_each(|r| out.extend_from_slice(&r[..ncols]));
    out
}

/// Whether the CPU has AVX-512 VBMI, whose byte permutes the fused step over B's codes
/// (`products::fused_codes`) and the fused panel tile's pieces decoded in place ([`crate::x86::panel_piece`])
/// need.
pub fn vbmi() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx512vbmi");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the CPU has FMA, which the AVX2 level's steps that round by MXCSR need besides AVX2
/// ([`super::avx2_fused`], [`super::wide_panels_avx2`]).
pub fn fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The scratch of a fused panel tile: the panel piece's codes, magnitudes, magnitudes by sign and exponents, and the
/// gathered rows of A.
#[cfg(target_arch = "x86_64")]
struct FusedPiece<const X86: u8> {
    rows: Range<usize>,
    cols: Range<usize>,
    pc: Vec<u8>,
    /// The magnitudes (AVX-512), or the values (AVX2).
    pm: Lines<f32>,
    /// The magnitudes by sign (AVX-512 only).
    ps: Lines<f32>,
    pe: Lines<i8>,
    ga: Vec<u8>,
    /// The CPU has AVX-512 VBMI: a whole panel's piece of one run of k is decoded from B in place
    /// ([`crate::x86::panel_piece`]).
    in_place: bool,
}

/// A buffer that starts on a cache line: every 64-byte vector of a panel row is then one line, where a vector
/// across two lines costs two loads.
#[cfg(target_arch = "x86_64")]
pub(super) struct Lines<T> {
    buf: Vec<T>,
    start: usize,
    len: usize,
}

#[cfg(target_arch = "x86_64")]
impl<T: Copy> Lines<T> {
    pub(super) fn new(len: usize, fill: T) -> Lines<T> {
        let buf = vec![fill; len + 64];
        let start = buf.as_ptr().align_offset(64).min(64);
        Lines { buf, start, len }
    }

    pub(super) fn get(&self) -> &[T] {
        &self.buf[self.start..self.start + self.len]
    }

    pub(super) fn get_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

#[cfg(target_arch = "x86_64")]
impl<const X86: u8> Piece for FusedPiece<X86> {
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        self.piece(job, chunk, q0, q1, acc, None);
    }

    /// Consecutive whole chunks (see [`products::consecutive`]) as one run of pieces, each chunk's last piece ending
    /// the chains into `part` and restarting them from +0: no pass over the accumulators between chunks.
    #[inline(always)]
    fn run_chunks(&mut self, job: &Job, chunks: &[ChunkPlan], part: &mut [f32]) -> usize {
        let piece_len = fused_piece_len(job.p.nfma);
        let Some((k0, l, count)) = products::consecutive(chunks, job.p.nfma).filter(|&(_, l, _)| l % piece_len == 0)
        else {
            return 0;
        };
        let total = count * l;
        let run = ChunkPlan::new(std::slice::from_ref(&(k0..k0 + total)), total, job.p.nfma, false);
        let mut acc = vec![0f32; part.len()];
        for q0 in (0..total).step_by(piece_len) {
            let q1 = q0 + piece_len;
            let end = q1.is_multiple_of(l).then_some(&mut *part);
            self.piece(job, &run, q0, q1, &mut acc, end);
        }
        count
    }
}

#[cfg(target_arch = "x86_64")]
impl<const X86: u8> FusedPiece<X86> {
    /// Positions [q0, q1) of `chunk` for the tile's rows from their accumulators `acc`, the chains ended into `end`
    /// where given ([`crate::x86::panel_blocks`]).
    #[inline(always)]
    fn piece(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32], end: Option<&mut [f32]>) {
        use crate::x86::{PANEL, SIDED};
        let (nr, len) = (self.rows.len(), q1 - q0);
        let (pm, ps, pe) = (self.pm.get_mut(), self.ps.get_mut(), self.pe.get_mut());
        let sided = if X86 == X86_AVX2 { 0 } else { len * SIDED };
        let (pm, ps, pe) = (&mut pm[..len * PANEL], &mut ps[..sided], &mut pe[..len * PANEL]);
        match one_run(chunk, q0, q1) {
            Some(kr) if self.in_place && self.cols.len() == PANEL && len.is_multiple_of(16) => {
                let b = &job.b[self.cols.start * job.k..];
                // SAFETY: `in_place` holds only on the AVX-512 level (see `tile_fused`) where the CPU has VBMI.
                if unsafe { crate::x86::panel_piece(b, (job.k, kr.start, len), &job.lb, (pm, ps, pe)) } {
                    job.saw_nonfinite_b();
                }
            }
            _ => {
                let pc = &mut self.pc[..len * PANEL];
                // SAFETY: this tile runs only on an x86 level (see `tile_fused`), whose CPU has AVX2.
                unsafe { panel_codes_x86::<PANEL>(job, chunk, q0, q1, self.cols.clone(), pc) };
                if job.nonfinite_in_watched(pc) {
                    job.saw_nonfinite_b();
                }
                if X86 == X86_AVX2 {
                    job.lb.decode(pc, pm, pe);
                } else {
                    job.lb.decode_magnitudes::<PANEL>(pc, pm, ps, pe);
                }
            }
        }
        let nblk = len / job.p.nfma;
        let (a, stride) = rows_of_a(job, self.rows.clone(), chunk, q0, q1, &mut self.ga[..nr * len]);
        let (pm, ps, pe) = (self.pm.get(), self.ps.get(), self.pe.get());
        // SAFETY: this tile runs only on the level `X86` names, where the CPU has the step's features (see
        // `tile_fused`).
        unsafe {
            if X86 == X86_AVX2 {
                crate::x86::panel_blocks_avx2(a, stride, nblk, &job.la, pm, pe, acc, end, &job.p)
            } else {
                crate::x86::panel_blocks(a, stride, nblk, &job.la, pm, ps, pe, acc, end, &job.p)
            }
        };
    }
}
