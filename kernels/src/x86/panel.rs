//! The AVX-512 panel step: rows of A against a decoded panel of 64 rows of B, each term's scaling, truncation and
//! sum in one multiply-add rounded toward zero onto two biased accumulators per chain.

use super::*;

/// Outputs of a panel of [`panel_blocks`]: four vectors of sixteen f32 lanes.
pub const PANEL: usize = 64;

/// The chains of rows of A against a panel of [`PANEL`] rows of B over one piece of `nblk` blocks, for the
/// AVX-512 level on the narrow path where [`Params::biased`] holds: row r's codes are `a[r * stride..][..len]`
/// (`la` their table), `pm` holds the panel's magnitudes and `ps` its magnitudes by sign
/// ([`crate::tables::Lut::decode_magnitudes`]: 64 magnitudes, and [`SIDED`] by sign, per position), `pe` its
/// exponents (64 per position), and `acc` the rows' 64 running accumulators each, row after row.
///
/// The arithmetic of [`crate::kernel::block_steps`] with the scaling, the truncation and the sum of each term in
/// one fused multiply-add rounded toward zero. With the block exponent E and the grid g = E - frac, each chain
/// keeps two accumulators that start at the bias 2^(g + 23): one takes the magnitudes of all the terms, the other
/// those of the positive terms only. A term's magnitude |a| |b| is exact in the fused
/// multiply-add; while an accumulator stays in [2^(g + 23), 2^(g + 24)) its spacing is 2^g, so rounding
/// acc + |a| |b| toward zero adds exactly |a| |b| truncated to the grid, which is the model's trunc(p / 2^g) 2^g;
/// `biased` bounds the sums below 2^23 units of the grid, so the accumulators never leave that binade. A term is
/// positive where sign(a) = sign(b): the second accumulator multiplies |a| by the side of B that has a's sign
/// (its magnitudes there, zero elsewhere: a zero term leaves an accumulator unchanged), chosen by the address
/// the row's sign gives — a load, where a mask per 16 lanes would cost a vector port's operation. c enters the
/// same way (its magnitude rounded toward zero onto both biases, or the first only when negative). With pos =
/// bias + P and tot = bias + P + N, the block sum P - N is (2 pos - tot) - bias: 2 pos - tot = bias + P - N is a
/// multiple of 2^g in (0, 2^(g + 24)), made exactly by one multiply-add, and the difference is exact too
/// (multiples of 2^g below 2^(g + 23)), +0 when it is zero; clearing its mantissa bits below frac_out gives the new
/// c directly, the grid being already the true scale.
///
/// With `end` (as long as `acc`), the piece ends the rows' chains (slow accumulation's chunk): each chain's result is
/// added into its `end` in fp32, rounded to nearest even, as the executor adds a chunk's results, and its accumulator
/// restarts at +0.
///
/// Rows run in pairs, which share every load of the panel. The block maximum of the next block (the next pair's
/// first, after a pair's last) runs in the same pass over the positions as this block's terms: it does not depend
/// on them (only c links the blocks, and it enters after the maximum), and its integer work fills the lanes the
/// multiply-adds leave.
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL and AVX2 (the caller holds the AVX-512 level, made after
/// `is_x86_feature_detected!` reported them).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn panel_blocks(
    a: &[u8],
    stride: usize,
    nblk: usize,
    la: &crate::tables::Lut,
    pm: &[f32],
    ps: &[f32],
    pe: &[i8],
    acc: &mut [f32],
    mut end: Option<&mut [f32]>,
    p: &Params,
) {
    let (nfma, rows) = (p.nfma, acc.len() / PANEL);
    let len = nblk * nfma;
    // Every load below reads inside these bounds.
    assert!(
        panel_bounds(
            (a, stride, len),
            &[(pm.len(), PANEL), (ps.len(), SIDED), (pe.len(), PANEL)],
            (acc, end.as_deref()),
            p
        ),
        "panel_blocks: a preset without room for the bias, or rows or a piece shorter than its blocks"
    );
    if nblk == 0 || rows == 0 {
        return;
    }
    let panel = Panel { pm: pm.as_ptr(), ps: ps.as_ptr(), pe: pe.as_ptr(), nfma, nblk };
    let row = |r: usize| a.as_ptr().add(r.min(rows - 1) * stride);
    let mut e = [block_max(row(0), la, pe.as_ptr(), nfma), block_max(row(1), la, pe.as_ptr(), nfma)];
    for r in (0..rows).step_by(2) {
        let c = acc.as_mut_ptr().add(r * PANEL);
        let s = end.as_mut().map(|s| s.as_mut_ptr().add(r * PANEL));
        let next = (r + 2 < rows).then(|| [row(r + 2), row(r + 3)]);
        // The codes of the rows ROWS_AHEAD on, asked for now: rows lie a stride apart, and where the stride is a
        // multiple of 4 KiB (K = 4096) they all fall into one set of the first-level cache and few of the second,
        // so without the hint the next rows' codes come late from the last level.
        for ahead in [r + ROWS_AHEAD, r + ROWS_AHEAD + 1] {
            let first = row(ahead);
            _mm_prefetch::<_MM_HINT_T0>(first as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(first.add(len - 1) as *const i8);
        }
        if r + 1 < rows {
            let s = s.map(|s| [s, s.add(PANEL)]);
            e = rows_over::<2>(&panel, [row(r), row(r + 1)], ([c, c.add(PANEL)], s), e, next, la, p);
        } else {
            rows_over::<1>(&panel, [row(r)], ([c], s.map(|s| [s])), [e[0]], None, la, p);
        }
    }
}

/// Whether a fused panel step's operands hold its blocks (`len` positions): the preset has room for the bias,
/// `acc` whole rows of [`PANEL`] (and `end` as long), the rows of `a` a `stride` apart, and each of the panel's
/// `planes` (its length, and its values per position) that long. Every load of [`panel_blocks`] and
/// `panel_blocks_avx2` reads inside these bounds.
pub(super) fn panel_bounds(
    (a, stride, len): (&[u8], usize, usize),
    planes: &[(usize, usize)],
    (acc, end): (&[f32], Option<&[f32]>),
    p: &Params,
) -> bool {
    let rows = acc.len() / PANEL;
    p.biased
        && acc.len() == rows * PANEL
        && end.is_none_or(|s| s.len() == acc.len())
        && stride >= len
        && (rows == 0 || a.len() >= (rows - 1) * stride + len)
        && planes.iter().all(|&(n, per)| n >= len * per)
}

/// How many rows ahead [`panel_blocks`] asks for A's codes: three pairs, about a thousand cycles of multiply-adds
/// at 32 positions, time enough for a line from the last-level cache.
const ROWS_AHEAD: usize = 6;

/// Magnitudes by sign per position of [`panel_blocks`]'s panel: those of B's positive codes (zero in the lanes
/// of its negative codes), then those of its negative codes.
pub const SIDED: usize = 2 * PANEL;

/// A panel piece of [`panel_blocks`]: magnitudes, magnitudes by sign and exponents per position, and its blocks.
#[cfg(target_arch = "x86_64")]
struct Panel {
    pm: *const f32,
    ps: *const f32,
    pe: *const i8,
    nfma: usize,
    nblk: usize,
}

/// R rows (`a`: their codes, `c`: their accumulators) over every block of the panel, from the maxima `e` of their
/// first blocks, their chains ended into `end` where given (see [`panel_blocks`]); returns the maxima of the first
/// blocks of the rows `next` (two rows, the second repeated where there is one), or of nothing.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
// (Index loops over rows and quarters, several arrays at a time, read plainest here.)
#[allow(clippy::needless_range_loop)]
unsafe fn rows_over<const R: usize>(
    panel: &Panel,
    a: [*const u8; R],
    (c, end): ([*mut f32; R], Option<[*mut f32; R]>),
    mut e: [__m512i; R],
    next: Option<[*const u8; 2]>,
    la: &crate::tables::Lut,
    p: &Params,
) -> [__m512i; 2] {
    let (nfma, zero) = (panel.nfma, _mm512_setzero_ps());
    let (keep, two) = (_mm512_set1_epi32(p.mask32 as i32), _mm512_set1_ps(2.0));
    let mut cv = [[zero; 4]; R];
    for r in 0..R {
        for q in 0..4 {
            cv[r][q] = _mm512_loadu_ps(c[r].add(16 * q));
        }
    }
    let mut after = [_mm512_setzero_si512(); 2];
    for blk in 0..panel.nblk {
        let o = blk * nfma;
        // E = max(products, floor, exponent of c) per chain; both accumulators start at the bias 2^(g + 23), with
        // c's magnitude added toward zero (to the positive one only where c is positive).
        // The bias's exponent field is E + 127 + 23 - frac: for the products' maximum and the floor it is made in
        // the bytes of the maximum (`biased` keeps it below 256, and the floor above 0) and widened, for c it is
        // c's own field plus 23 - frac (+0's field is 0, below the floor's).
        let (mut tot, mut pos, mut bias) = ([[zero; 4]; R], [[zero; 4]; R], [[zero; 4]; R]);
        let (floor, field) = (_mm512_set1_epi8(p.efloor as i8), _mm512_set1_epi8((150 - p.frac) as u8 as i8));
        for r in 0..R {
            let fe = _mm512_add_epi8(_mm512_max_epi8(e[r], floor), field);
            for q in 0..4 {
                let mag = _mm512_and_si512(_mm512_castps_si512(cv[r][q]), _mm512_set1_epi32(0x7FFF_FFFF));
                let fc = _mm512_add_epi32(_mm512_srli_epi32::<23>(mag), _mm512_set1_epi32(23 - p.frac));
                let f = _mm512_max_epi32(_mm512_cvtepu8_epi32(lane_quarter(fe, q)), fc);
                bias[r][q] = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(f));
                let mag = _mm512_castsi512_ps(mag);
                tot[r][q] = _mm512_add_round_ps::<TOWARD_ZERO>(bias[r][q], mag);
                pos[r][q] = _mm512_add_round_ps::<TOWARD_ZERO>(bias[r][q], _mm512_max_ps(cv[r][q], zero));
            }
        }
        // The next block's maxima: these rows', or after their last block the next rows' first.
        let o2 = o + nfma;
        if blk + 1 < panel.nblk {
            let mut na = [a[0]; 2];
            for r in 0..R {
                na[r] = a[r].add(o2);
            }
            let m = terms::<R, true>(panel, o, a, la, &mut tot, &mut pos, na, panel.pe.add(o2 * PANEL));
            e.copy_from_slice(&m[..R]);
        } else if let Some(na) = next {
            after = terms::<R, true>(panel, o, a, la, &mut tot, &mut pos, na, panel.pe);
        } else {
            terms::<R, false>(panel, o, a, la, &mut tot, &mut pos, [a[0]; 2], panel.pe);
        }
        // The block sum P - (T - P), truncated to frac_out bits relative to its own exponent. With the bias B, pos =
        // B + P and tot = B + P + N: 2 pos - tot = B + P - N lies in (0, 2 B), a multiple of 2^g below 2^(g + 24),
        // so one multiply-add makes it exactly; less B it is P - N, exact too (+0 when zero).
        for r in 0..R {
            for q in 0..4 {
                let sum = _mm512_sub_ps(_mm512_fmsub_ps(two, pos[r][q], tot[r][q]), bias[r][q]);
                cv[r][q] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(sum), keep));
            }
        }
    }
    for r in 0..R {
        for q in 0..4 {
            match end {
                Some(s) => {
                    let sum = _mm512_add_ps(_mm512_loadu_ps(s[r].add(16 * q)), cv[r][q]);
                    _mm512_storeu_ps(s[r].add(16 * q), sum);
                    _mm512_storeu_ps(c[r].add(16 * q), zero);
                }
                None => _mm512_storeu_ps(c[r].add(16 * q), cv[r][q]),
            }
        }
    }
    after
}

/// One block's terms of [`rows_over`] at positions [o, o + nfma) for R rows (`a`: their codes) into their
/// accumulators, and with `NEXT` the block maxima of two rows (`na`: their codes of that block, `npe`: its
/// exponents), which are returned.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn terms<const R: usize, const NEXT: bool>(
    panel: &Panel,
    o: usize,
    a: [*const u8; R],
    la: &crate::tables::Lut,
    tot: &mut [[__m512; 4]; R],
    pos: &mut [[__m512; 4]; R],
    na: [*const u8; 2],
    npe: *const i8,
) -> [__m512i; 2] {
    let mut e = [_mm512_set1_epi8(i8::MIN); 2];
    for k in 0..panel.nfma {
        let b = panel.pm.add((o + k) * PANEL);
        let mut bq = [_mm512_setzero_ps(); 4];
        for (q, bq) in bq.iter_mut().enumerate() {
            *bq = _mm512_loadu_ps(b.add(16 * q));
        }
        for r in 0..R {
            let code = *a[r].add(o + k);
            let va = _mm512_set1_ps(la.m32[code as usize]);
            // A term is positive where B's code has a's sign.
            let side = panel.ps.add((o + k) * SIDED + (code >> 7) as usize * PANEL);
            for q in 0..4 {
                tot[r][q] = _mm512_fmadd_round_ps::<TOWARD_ZERO>(va, bq[q], tot[r][q]);
                let bs = _mm512_loadu_ps(side.add(16 * q));
                pos[r][q] = _mm512_fmadd_round_ps::<TOWARD_ZERO>(va, bs, pos[r][q]);
            }
        }
        if NEXT {
            let pe = _mm512_loadu_si512(npe.add(k * PANEL) as *const _);
            for (e, na) in e.iter_mut().zip(na) {
                let ea = _mm512_set1_epi32(la.e4[*na.add(k) as usize]);
                *e = _mm512_max_epi8(*e, _mm512_adds_epi8(ea, pe));
            }
        }
    }
    e
}
