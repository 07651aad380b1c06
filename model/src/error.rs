//! The error type of the whole model: one `Error` value carrying the category of docs/reference.md §7.1
//! (and the invalid-argument kinds of R.3), plus a message that says what was wrong and what the reference
//! platform does.

use std::fmt;

/// What kind of invalid argument (docs/reference.md R.3 keeps the distinction the original makes with
/// TypeError, ValueError and KeyError).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvalidKind {
    /// Wrong type or wrong dtype (TypeError in the original).
    WrongType,
    /// Invalid value: shape, range, combination, scheme (ValueError).
    InvalidValue,
    /// Unknown name: profile, preset (KeyError).
    UnknownName,
}

/// The error categories of docs/reference.md §7.1, and the invalid-argument and data errors of R.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// The umbrella category, raised directly only by the floating-point state check.
    Mmaemu,
    /// torch 2.7.1 or the profile's cuBLAS rejects the call.
    ReferenceRejects,
    /// Valid on the reference platform but outside what mmaemu models.
    UnsupportedFeature,
    /// `splitk = auto` cannot determine the split for this shape on this profile.
    SplitKUnknown,
    /// An explicitly requested backend cannot serve the call.
    BackendUnavailable,
    /// An invalid argument, with its kind.
    InvalidArgument(InvalidKind),
    /// A data table failed its integrity check or belongs to another table.
    Data,
    /// The caller interrupted the call (Ctrl-C) before it finished: no result.
    Interrupted,
}

impl Category {
    /// The category's name as the recordings and `explain` spell it (`ReferenceRejectsError`, ...).
    /// Invalid arguments use the original's Python names (`TypeError`, `ValueError`, `KeyError`).
    pub fn name(self) -> &'static str {
        match self {
            Category::Mmaemu => "MmaemuError",
            Category::ReferenceRejects => "ReferenceRejectsError",
            Category::UnsupportedFeature => "UnsupportedFeatureError",
            Category::SplitKUnknown => "SplitKUnknownError",
            Category::BackendUnavailable => "BackendUnavailableError",
            Category::InvalidArgument(InvalidKind::WrongType) => "TypeError",
            Category::InvalidArgument(InvalidKind::InvalidValue) => "ValueError",
            Category::InvalidArgument(InvalidKind::UnknownName) => "KeyError",
            Category::Data => "DataError",
            Category::Interrupted => "KeyboardInterrupt",
        }
    }

    /// True for the categories that are kinds of MmaemuError (the umbrella of §7.1).
    pub fn is_mmaemu(self) -> bool {
        !matches!(self, Category::InvalidArgument(_) | Category::Data | Category::Interrupted)
    }
}

/// An error of the model: a category and a human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    category: Category,
    message: String,
}

impl Error {
    /// An error of the given category.
    pub fn new(category: Category, message: impl Into<String>) -> Error {
        Error { category, message: message.into() }
    }
    /// Invalid argument, wrong type or dtype.
    pub fn wrong_type(message: impl Into<String>) -> Error {
        Error::new(Category::InvalidArgument(InvalidKind::WrongType), message)
    }
    /// Invalid argument, invalid value.
    pub fn invalid_value(message: impl Into<String>) -> Error {
        Error::new(Category::InvalidArgument(InvalidKind::InvalidValue), message)
    }
    /// Invalid argument, unknown name.
    pub fn unknown_name(message: impl Into<String>) -> Error {
        Error::new(Category::InvalidArgument(InvalidKind::UnknownName), message)
    }
    /// An UnsupportedFeatureError: a feature the reference platform lacks or mmaemu does not model.
    pub fn unsupported(message: impl Into<String>) -> Error {
        Error::new(Category::UnsupportedFeature, message)
    }
    /// A ReferenceRejectsError: a call the reference platform (torch or cuBLASLt) rejects.
    pub fn rejects(message: impl Into<String>) -> Error {
        Error::new(Category::ReferenceRejects, message)
    }
    /// The error's category.
    pub fn category(&self) -> Category {
        self.category
    }
    /// The human message (without the category name).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.category.name(), self.message)
    }
}

impl std::error::Error for Error {}

/// The model's result type.
pub type Result<T> = std::result::Result<T, Error>;
