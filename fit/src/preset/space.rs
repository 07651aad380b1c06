//! The parameter space `mmaemu fit preset` searches (docs/reference.md §2.9): the instruction's core (block size,
//! term fraction bits, block-result rounding, accumulator entry) enumerated, and the two parameters it derives from
//! the rows instead — the block-exponent floor (min_exp) and the slow-accumulation chunk — with the equivalences
//! that make a parameter unable to change a GEMM result.

use super::search::ChunkSet;
use mmaemu_model::{BlockRounding, CEntry, Preset, PresetSpec};

/// Products per block: every power of two from 1 to 256.
pub const NFMA: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
/// Fraction bits of the aligned terms: the whole range a preset allows.
pub const FRAC: std::ops::RangeInclusive<u32> = 1..=40;
/// Fraction bits of a truncated block result (23: fp32 round toward zero): the whole range a preset allows.
pub const FRAC_OUT: std::ops::RangeInclusive<u32> = 1..=23;
/// The floor the core search runs with: no unscaled block takes it (a nonzero c counts at −126 or more, every
/// nonzero FP8 product at −28 or more), so it stands for every floor at or below the rows' lowest block exponent.
pub const MIN_EXP_BASE: i32 = -126;
/// The highest floor tried one by one (above it every block's exponent is the floor).
pub const MIN_EXP_TOP: i32 = 127;
/// The least exponent of a nonzero product of a GEMM a recorder can call (e4m3 × e5m2 subnormals: −6 − 14; torch
/// refuses e5m2 × e5m2).
pub const GEMM_PRODUCT_FLOOR: i32 = -20;
/// The least exponent of a nonzero scaled FP8 product: two e5m2 subnormals (2^-16 each) under two e8m0 scales of
/// 2^-127. A floor at or below it takes part in no block-scaled maximum (docs/reference.md §2.8).
pub const SCALED_PRODUCT_FLOOR: i32 = -16 - 16 - 254;
/// Every value such a GEMM accumulates is a multiple of 2^−25 (the least product, 2^−9 · 2^−16).
pub const GEMM_GRAIN: i32 = -25;
/// The longest slow chunk the fit tells from one chunk over all of K: a designed slow call reaches past it, and a
/// consistent length beyond it is taken as one chunk (the space of the fit ends there, as frac's ends at 40).
pub const SLOW_CHUNK_REACH: u32 = 16384;

/// Whether every slow chunk of `set` computes as one chunk over all of K for core `s`, on every call: lengths past
/// [`SLOW_CHUNK_REACH`], and with a late c a chunk of one block, whose result is the block's own (d + 0), added to the
/// running sum in fp32 as the next block of one chain is (§2.3 step 6, §3.1).
pub fn one_chunk(s: &PresetSpec, set: &ChunkSet) -> bool {
    let one = |l: u32| l > SLOW_CHUNK_REACH || (s.c_entry == CEntry::Late && l == s.nfma);
    // A run of lengths from `from` on is one chunk only past the reach: below it, each length is its own cut.
    !set.is_empty() && set.values.iter().all(|&l| one(l)) && set.from.is_none_or(|f| f > SLOW_CHUNK_REACH)
}

/// The core candidates (min_exp at [`MIN_EXP_BASE`], no slow chunk), named `fit`: nfma, then frac, the
/// truncations by frac_out then nearest even, early before late.
pub fn candidates() -> Vec<PresetSpec> {
    let mut out = Vec::new();
    for nfma in NFMA {
        for frac in FRAC {
            for (frac_out, rounding) in roundings() {
                for c_entry in [CEntry::Early, CEntry::Late] {
                    out.push(
                        PresetSpec::custom("fit", nfma, frac, frac_out, MIN_EXP_BASE, c_entry, None)
                            .with_rounding(rounding),
                    );
                }
            }
        }
    }
    out
}

/// Every block result: truncation to 1..=23 bits, then nearest even (fp32).
fn roundings() -> impl Iterator<Item = (u32, BlockRounding)> {
    FRAC_OUT.map(|f| (f, BlockRounding::Truncate)).chain([(23, BlockRounding::NearestEven)])
}

/// The least frac_out at which no block of a GEMM is ever rounded. A product is below 225/64 · 2^ep (1.875², the
/// largest FP8 significands' product) and ep ≤ E; an early c is below 2 · 2^E. So an unscaled block sum (aligned to
/// the grid 2^(E − frac)) is below (225/64 · nfma + 2) · 2^frac grid units with an early c: with W the least power of
/// two at or above that bound's multiplier, its leading bit is at most frac + log2(W) − 1 places above the grid. With a
/// late c every term is a product, of at most [`PRODUCT_BITS`] significant bits: the term that holds the sum's lowest
/// bit, l places above the grid, is below 2^(l + 8) units and the other nfma − 1 below 225/64 · 2^frac each, so the
/// sum spans at most ⌈log2(bound)⌉ − l bits from there; the least frac_out is the widest span over l (for small blocks
/// well below the early bound: one product never needs more than 8 bits). A GEMM block result is never below 2^−126
/// (so the fp32 subnormal floor of §2.2 step 7 never moves the grid). From there on, every truncation and nearest even
/// give the same bits.
pub fn exact_frac_out(nfma: u32, frac: u32, c_entry: CEntry) -> u32 {
    let ceil_log2 = |x: u128| x.next_power_of_two().trailing_zeros();
    match c_entry {
        CEntry::Early => {
            let bound = (225 * u128::from(nfma)).div_ceil(64) + 2;
            frac + ceil_log2(bound) - 1
        }
        CEntry::Late => {
            let others = ((225 * u128::from(nfma.saturating_sub(1))) << frac).div_ceil(64);
            (0..=frac + 2).map(|l| ceil_log2(others + (1u128 << (l + PRODUCT_BITS))) - 1 - l).max().unwrap_or(frac)
        }
    }
}

/// The most significant bits an FP8 product has (e4m3 × e4m3: 4 × 4).
pub const PRODUCT_BITS: u32 = 8;

/// The highest floor that changes no GEMM a recorder can call, for a core. A floor v changes a block only when it is
/// above the block's exponent and some term is not exact on the grid 2^(v − frac) it then imposes: every term (product
/// or accumulator) is a multiple of 2^[`GEMM_GRAIN`], so v ≤ frac + [`GEMM_GRAIN`] keeps them all exact and the block
/// sums the same exact value; with a late c a block's exponent is that of a nonzero product, at least
/// [`GEMM_PRODUCT_FLOOR`] (a block without one adds +0 to c), with an early c it may be an accumulator's alone, at least
/// [`GEMM_GRAIN`]. Every floor at or below the result gives the same bits.
pub fn harmless_floor(s: &PresetSpec) -> i32 {
    let exact = s.frac as i32 + GEMM_GRAIN;
    match s.c_entry {
        CEntry::Early => exact.max(GEMM_GRAIN),
        CEntry::Late => exact.max(GEMM_PRODUCT_FLOOR),
    }
}

/// The least frac at which every term of a block is exact on its grid when the block holds one product and c enters
/// late: the product's lowest bit lies at most 6 places below its exponent (3 + 3 fraction bits of e4m3 × e4m3), and
/// with a floor at or below [`harmless_floor`] the block's exponent is the product's own.
pub const EXACT_PRODUCT_FRAC: u32 = 6;

/// Whether a candidate's terms are never truncated on a GEMM whatever its frac above [`EXACT_PRODUCT_FRAC`]: one
/// product per block, late c. Its block result is then a function of the product's exact value alone (§2.2 steps
/// 6–8 read the value, not the grid it is held on), so every such frac gives the same bits.
pub fn exact_terms(s: &PresetSpec) -> bool {
    s.nfma == 1 && s.c_entry == CEntry::Late && s.frac >= EXACT_PRODUCT_FRAC
}

/// The least frac from which two products per block, a late c and a nearest-even block result give the same bits
/// whatever the frac: the smaller product's bits below 2^(E − 34) never move a sum of two FP8 products across an fp32
/// rounding boundary. Shown by running every two-product block a GEMM can make (each pair of products by
/// significands, exponent gap and signs; a block of late c is independent of c and of where it lies) at every frac
/// (`fit/tests/canonical.rs`, which also finds a block that 33 and 34 round apart). No two fracs of a truncated
/// result are one arithmetic there: a negative product's dropped bits borrow from every kept place.
pub const PAIR_NEAREST_FRAC: u32 = 34;

/// The least frac from which every frac gives a candidate's bits, where there is one: [`EXACT_PRODUCT_FRAC`] for
/// [`exact_terms`], [`PAIR_NEAREST_FRAC`] for two products with a late c and a nearest-even result, with the reason.
pub fn frac_floor(s: &PresetSpec) -> Option<(u32, &'static str)> {
    let nearest = s.rounding == BlockRounding::NearestEven;
    match (s.nfma, s.c_entry) {
        _ if exact_terms(s) => Some((
            EXACT_PRODUCT_FRAC,
            "with one product per block and a late c every frac >= 6 holds the product exactly on its grid (its \
             lowest bit lies at most 6 places below its exponent), and a block result reads the product's value alone",
        )),
        (2, CEntry::Late) if nearest && s.frac >= PAIR_NEAREST_FRAC => Some((
            PAIR_NEAREST_FRAC,
            "with two products per block, a late c and a nearest-even result, every frac >= 34 rounds every block \
             alike: shown on every two-product block a GEMM can make (each pair of products by significands, exponent \
             gap and signs)",
        )),
        _ => None,
    }
}

/// The one arithmetic a candidate (its floor included) computes on every GEMM a recorder can call, as a
/// representative: a block result that never rounds ([`exact_block_result`]) becomes nearest even, a floor at or
/// below [`harmless_floor`] becomes [`MIN_EXP_BASE`] and then a frac at or above [`frac_floor`] becomes that floor.
/// Two candidates with the same representative give the same bits on every such GEMM.
pub fn canonical(s: &PresetSpec) -> PresetSpec {
    let mut out = s.clone();
    if exact_block_result(s) {
        (out.frac_out, out.rounding) = (23, BlockRounding::NearestEven);
    }
    if s.min_exp <= harmless_floor(s) {
        out.min_exp = MIN_EXP_BASE;
        if let Some((least, _)) = frac_floor(&out) {
            out.frac = least;
        }
    }
    out
}

/// Whether a candidate's block result never rounds on a GEMM ([`exact_frac_out`]).
pub fn exact_block_result(s: &PresetSpec) -> bool {
    s.frac_out >= exact_frac_out(s.nfma, s.frac, s.c_entry)
}

/// The block result by name: `truncate/13`, `nearest_even`.
pub fn block_result(s: &PresetSpec) -> String {
    match s.rounding {
        BlockRounding::Truncate => format!("truncate/{}", s.frac_out),
        BlockRounding::NearestEven => "nearest_even".into(),
    }
}

/// The core parameters by name, as the report lists them.
pub fn params(s: &PresetSpec) -> [(&'static str, String); 5] {
    [
        ("nfma", s.nfma.to_string()),
        ("frac", s.frac.to_string()),
        ("frac_out", s.frac_out.to_string()),
        ("rounding", s.rounding.name().to_string()),
        ("c_entry", s.c_entry.name().to_string()),
    ]
}

/// A core by its fields: nfma, frac, frac_out, rounding, c entry.
pub type Core = (u32, u32, u32, BlockRounding, CEntry);

/// The core of a candidate (every field but the floor and the slow chunk), for grouping.
pub fn core(s: &PresetSpec) -> Core {
    (s.nfma, s.frac, s.frac_out, s.rounding, s.c_entry)
}

/// The built-in presets whose arithmetic (slow-accumulation chunk, floor and scales aside) a candidate is.
pub fn builtin_matches(s: &PresetSpec) -> Vec<Preset> {
    Preset::list().into_iter().filter_map(Preset::builtin).filter(|p| core(p.spec()) == core(s)).collect()
}
