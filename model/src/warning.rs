//! Typed warnings (docs/reference.md R.4, §7.2), returned with results and listed by `explain`. mmaemu reports
//! every warning on every call (the "reported on every call" design of R.4): no process-global state.

use std::fmt;

/// The warning kinds of docs/reference.md §7.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WarningKind {
    /// An experimental or custom preset, the `blackwell` alias, or an experimental profile.
    ExperimentalPreset,
    /// A split-K decision that was never replayed on hardware (or of an experimental splitk profile).
    UnverifiedSplit,
    /// S = 1 inferred by an envelope without a passed held-out test (a kind of UnverifiedSplit).
    UnvalidatedEnvelope,
    /// A faster backend could not be used and a slower one was.
    BackendFallback,
    /// out= had another shape and was resized.
    OutResized,
    /// out= is neither row- nor column-major and is returned unchanged.
    OutUnchanged,
}

impl WarningKind {
    /// The kind's name: `ExperimentalPresetWarning`, `UnverifiedSplitWarning`, ...
    pub fn name(self) -> &'static str {
        match self {
            WarningKind::ExperimentalPreset => "ExperimentalPresetWarning",
            WarningKind::UnverifiedSplit => "UnverifiedSplitWarning",
            WarningKind::UnvalidatedEnvelope => "UnvalidatedEnvelopeWarning",
            WarningKind::BackendFallback => "BackendFallbackWarning",
            WarningKind::OutResized => "OutResizedWarning",
            WarningKind::OutUnchanged => "OutUnchangedWarning",
        }
    }
    /// UnvalidatedEnvelope is a kind of UnverifiedSplit: whoever handles one also gets the other.
    pub fn is_unverified_split(self) -> bool {
        matches!(self, WarningKind::UnverifiedSplit | WarningKind::UnvalidatedEnvelope)
    }
}

/// One warning: its kind and message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Warning {
    /// The kind.
    pub kind: WarningKind,
    /// The message.
    pub message: String,
}

impl Warning {
    /// A warning.
    pub fn new(kind: WarningKind, message: impl Into<String>) -> Warning {
        Warning { kind, message: message.into() }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}
