//! The AVX-512 panel step's planes and block maxima: a panel piece decoded from B's codes in place (byte transposes
//! and table lookups in registers), and the block maxima of 64 chains over the decoded exponents.

use super::*;

/// The planes of one piece of a panel of [`panel_blocks`], decoded from B's codes in place: `b` holds the panel's
/// [`PANEL`] rows of B, `k` apart, and the piece is positions `k0 .. k0 + len` of each (`len` a multiple of 16);
/// `pm`, `ps` and `pe` receive, per position, the magnitudes, the magnitudes by sign and the exponents that
/// [`crate::tables::Lut::decode_magnitudes`] makes of the same codes in position-major order, bit for bit.
///
/// The positions come from [`panel_positions`], which looks up the exponents. A byte permute over the low 7 bits (the
/// magnitude) looks up the packed byte ([`crate::tables::Lut::packed`]), which moved to its bit and scaled back by
/// 2^packed_scale (exact: a power of two on a normal f32, or +0) is the magnitude; the sign bits of the codes choose
/// the side of each magnitude.
/// Returns whether a code was non-finite (decoded as a zero, as there: see [`crate::driver::Job::watching`]).
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL/VBMI and AVX2 (the caller holds the AVX-512 level and saw
/// `is_x86_feature_detected!("avx512vbmi")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2")]
#[inline]
pub unsafe fn panel_piece(
    b: &[u8],
    (k, k0, len): (usize, usize, usize),
    lb: &crate::tables::Lut,
    (pm, ps, pe): (&mut [f32], &mut [f32], &mut [i8]),
) -> bool {
    // Every load and store below stays inside these bounds.
    assert!(pm.len() >= len * PANEL && ps.len() >= len * SIDED, "panel_piece: planes shorter than the piece");
    let up = _mm512_set1_ps(f32::from_bits(((127 + lb.packed_scale()) as u32) << 23));
    let e4m3 = lb.packed_shift() == 20;
    let packed = halves(&lb.packed);
    let (pm, ps) = (pm.as_mut_ptr(), ps.as_mut_ptr());
    panel_positions(b, (k, k0, len), lb, pe, |at, code| {
        let y = _mm512_permutex2var_epi8(packed.0, code, packed.1);
        let negative = _mm512_movepi8_mask(code);
        for q in 0..4 {
            let w = _mm512_cvtepu8_epi32(lane_quarter(y, q));
            let w = if e4m3 { _mm512_slli_epi32::<20>(w) } else { _mm512_slli_epi32::<21>(w) };
            let m = _mm512_mul_ps(_mm512_castsi512_ps(w), up);
            let minus = (negative >> (16 * q)) as u16;
            _mm512_storeu_ps(pm.add(at * PANEL + 16 * q), m);
            _mm512_storeu_ps(ps.add(at * SIDED + 16 * q), _mm512_maskz_mov_ps(!minus, m));
            _mm512_storeu_ps(ps.add(at * SIDED + PANEL + 16 * q), _mm512_maskz_mov_ps(minus, m));
        }
    })
}

/// The positions `k0 .. k0 + len` (`len` a multiple of 16) of the [`PANEL`] rows of B in `b`, `k` apart, decoded in
/// place: position p's exponents ([`crate::tables::Lut::e`], [`PANEL`] of them) into `pe` at `p * PANEL`, and its
/// codes, one row of B per byte, passed to `each(p, codes)`. Returns whether a code was non-finite (the largest
/// magnitude read tells).
///
/// Sixteen positions at a time: vector i holds rows i, 16 + i, 32 + i and 48 + i in its four 128-bit lanes, and a
/// transpose of 16 by 16 bytes in every lane (`transposed_16`) leaves position p of all 64 rows in vector p.
///
/// # Safety
/// As for [`panel_piece`]; `pe` must hold `len * PANEL` exponents and `each` store only inside its planes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2")]
#[inline]
pub(super) unsafe fn panel_positions(
    b: &[u8],
    (k, k0, len): (usize, usize, usize),
    lb: &crate::tables::Lut,
    pe: &mut [i8],
    mut each: impl FnMut(usize, __m512i),
) -> bool {
    // Every load and store below stays inside these bounds.
    assert!(
        len.is_multiple_of(16) && b.len() >= (PANEL - 1) * k + k0 + len && pe.len() >= len * PANEL,
        "panel_positions: rows of B or exponents shorter than the piece"
    );
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid in both.
    let ex = halves(&*(lb.e.as_ptr() as *const [u8; 128]));
    let pe = pe.as_mut_ptr();
    // The largest magnitude read.
    let (mut most, magnitude) = (_mm512_setzero_si512(), _mm512_set1_epi8(0x7F));
    for h in (0..len).step_by(16) {
        let mut z = [_mm512_setzero_si512(); 16];
        for (i, z) in z.iter_mut().enumerate() {
            *z = lanes([0, 1, 2, 3].map(|l| b.as_ptr().add((16 * l + i) * k + k0 + h)));
        }
        let x = transposed_16(z);
        for (p, &code) in x.iter().enumerate() {
            let at = h + p;
            _mm512_storeu_si512(pe.add(at * PANEL) as *mut __m512i, _mm512_permutex2var_epi8(ex.0, code, ex.1));
            most = _mm512_max_epu8(most, _mm512_and_si512(code, magnitude));
            each(at, code);
        }
    }
    _mm512_cmpgt_epu8_mask(most, _mm512_set1_epi8(lb.last_finite() as i8)) != 0
}

/// Four 16 x 16 transposes of bytes, one in each 128-bit lane: byte j of lane l of `z[i]` becomes byte i of lane l
/// of vector j. Four rounds of interleaving, of bytes, words, dwords and qwords.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
unsafe fn transposed_16(z: [__m512i; 16]) -> [__m512i; 16] {
    // Each round interleaves vectors 2i and 2i + 1 into i (the low halves of their lanes) and 8 + i (the high
    // halves). With the row r and the byte j written in bits, an element at vector (r3 r2 r1 r0), byte (j3 j2 j1 j0)
    // goes to vector (j3 r3 r2 r1), byte (j2 j1 j0 r0); after four rounds it is at vector (j0 j1 j2 j3), byte r.
    let mut x = z;
    for round in 0..4 {
        let mut y = [_mm512_setzero_si512(); 16];
        for i in 0..8 {
            let (a, b) = (x[2 * i], x[2 * i + 1]);
            (y[i], y[8 + i]) = match round {
                0 => (_mm512_unpacklo_epi8(a, b), _mm512_unpackhi_epi8(a, b)),
                1 => (_mm512_unpacklo_epi16(a, b), _mm512_unpackhi_epi16(a, b)),
                2 => (_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b)),
                _ => (_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b)),
            };
        }
        x = y;
    }
    // Vector j of the result is vector (j0 j1 j2 j3), j's bits reversed.
    const REVERSED: [usize; 16] = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15];
    let mut t = x;
    for (t, &j) in t.iter_mut().zip(&REVERSED) {
        *t = x[j];
    }
    t
}

/// The block maximum of the 64 chains over `nfma` positions: max of ea + eb in saturating i8 lanes (see the
/// comment at the top of `crate::kernel`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
pub(super) unsafe fn block_max(a: *const u8, la: &crate::tables::Lut, pe: *const i8, nfma: usize) -> __m512i {
    let mut e = _mm512_set1_epi8(i8::MIN);
    for k in 0..nfma {
        let ea = _mm512_set1_epi32(la.e4[*a.add(k) as usize]);
        e = _mm512_max_epi8(e, _mm512_adds_epi8(ea, _mm512_loadu_si512(pe.add(k * PANEL) as *const _)));
    }
    e
}
