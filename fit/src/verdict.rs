//! The verdict of a fit, `fit preset` and `fit splitk` alike: how many candidates reproduce every recorded bit — one,
//! several, none, or (split-K only, where groups may mix rules) no single one but a set of them.

/// The verdict of a fit over its candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Exactly one candidate reproduces every row.
    Unique,
    /// Several candidates reproduce every row; the rows cannot tell them apart.
    Ambiguous,
    /// No single candidate reproduces every row, and a set of them does (`fit splitk`'s mixtures; never a preset's).
    Mixture,
    /// Some row is reproduced by no candidate (nor by a mixture).
    None,
}

impl Verdict {
    /// The verdict of `survivors` candidates reproducing every row; `mixture`: a set of candidates explains the rows
    /// (looked at only without survivors).
    pub fn of(survivors: usize, mixture: bool) -> Verdict {
        match survivors {
            0 if mixture => Verdict::Mixture,
            0 => Verdict::None,
            1 => Verdict::Unique,
            _ => Verdict::Ambiguous,
        }
    }

    /// `unique`, `ambiguous`, `mixture`, `none`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Unique => "unique",
            Verdict::Ambiguous => "ambiguous",
            Verdict::Mixture => "mixture",
            Verdict::None => "none",
        }
    }
}
