//! The parameter space `mmaemu fit preset` searches (docs/reference.md §2.9): every combination of block size, term
//! fraction bits, block-result rounding, block-exponent floor and accumulator entry, in a fixed order.

use mmaemu_model::{BlockRounding, CEntry, Preset, PresetSpec};

/// Products per block.
pub const NFMA: [u32; 5] = [4, 8, 16, 32, 64];
/// Fraction bits of the aligned terms.
pub const FRAC: std::ops::RangeInclusive<u32> = 8..=30;
/// Fraction bits of a truncated block result (23: fp32 round toward zero).
pub const FRAC_OUT: std::ops::RangeInclusive<u32> = 8..=23;
/// Block-exponent floors (zero terms' exponents).
pub const MIN_EXP: std::ops::RangeInclusive<i32> = -140..=-126;

/// Every candidate, named `fit`: nfma, then frac, the truncations by frac_out then nearest even, min_exp from the
/// highest, early before late.
pub fn candidates() -> Vec<PresetSpec> {
    let mut out = Vec::new();
    for nfma in NFMA {
        for frac in FRAC {
            let roundings = FRAC_OUT.map(|f| (f, BlockRounding::Truncate)).chain([(23, BlockRounding::NearestEven)]);
            for (frac_out, rounding) in roundings {
                for min_exp in MIN_EXP.rev() {
                    for c_entry in [CEntry::Early, CEntry::Late] {
                        out.push(
                            PresetSpec::custom("fit", nfma, frac, frac_out, min_exp, c_entry, None)
                                .with_rounding(rounding),
                        );
                    }
                }
            }
        }
    }
    out
}

/// The parameters by name, as the report lists them.
pub fn params(s: &PresetSpec) -> [(&'static str, String); 6] {
    [
        ("nfma", s.nfma.to_string()),
        ("frac", s.frac.to_string()),
        ("frac_out", s.frac_out.to_string()),
        ("rounding", s.rounding.name().to_string()),
        ("min_exp", s.min_exp.to_string()),
        ("c_entry", s.c_entry.name().to_string()),
    ]
}

/// The built-in presets whose arithmetic (slow-accumulation chunk and scales aside) a candidate is.
pub fn builtin_matches(s: &PresetSpec) -> Vec<Preset> {
    Preset::list()
        .into_iter()
        .filter_map(Preset::builtin)
        .filter(|p| {
            let b = p.spec();
            (b.nfma, b.frac, b.frac_out, b.rounding, b.min_exp, b.c_entry)
                == (s.nfma, s.frac, s.frac_out, s.rounding, s.min_exp, s.c_entry)
        })
        .collect()
}
