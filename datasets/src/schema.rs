//! The column table of `mmaemu-recording/1`: names, Arrow types, nullability, which columns are optional,
//! the Arrow schema the writer uses and the type check the reader applies.

use arrow_schema::{DataType, Field, Schema};

/// The logical kind of a column; the reader accepts every Arrow type listed by [`Kind::accepts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Utf8,
    Int64,
    Int32,
    UInt32,
    Boolean,
    Binary,
}

impl Kind {
    /// The Arrow type the spec names (and the writer writes).
    pub(crate) fn data_type(self) -> DataType {
        match self {
            Kind::Utf8 => DataType::Utf8,
            Kind::Int64 => DataType::Int64,
            Kind::Int32 => DataType::Int32,
            Kind::UInt32 => DataType::UInt32,
            Kind::Boolean => DataType::Boolean,
            Kind::Binary => DataType::Binary,
        }
    }

    /// Whether a file's Arrow type is acceptable for this column (large and view variants of the string
    /// and binary types are equivalent).
    pub(crate) fn accepts(self, dt: &DataType) -> bool {
        match self {
            Kind::Utf8 => matches!(dt, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View),
            Kind::Binary => matches!(dt, DataType::Binary | DataType::LargeBinary | DataType::BinaryView),
            _ => *dt == self.data_type(),
        }
    }
}

/// One column of the format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column {
    pub name: &'static str,
    pub kind: Kind,
    /// Whether the column may hold nulls.
    pub nullable: bool,
    /// Whether a file may omit the column (then it reads as null everywhere).
    pub optional: bool,
}

const fn col(name: &'static str, kind: Kind, nullable: bool) -> Column {
    Column { name, kind, nullable, optional: false }
}

/// Every column of version 1, in the order the writer writes them.
pub(crate) const COLUMNS: &[Column] = &[
    col("id", Kind::Utf8, false),
    col("op", Kind::Utf8, false),
    col("preset", Kind::Utf8, false),
    col("profile", Kind::Utf8, true),
    col("gpu", Kind::Utf8, false),
    col("truth", Kind::Utf8, false),
    col("fmt_a", Kind::Utf8, false),
    col("fmt_b", Kind::Utf8, false),
    col("batch", Kind::Int64, false),
    col("m", Kind::Int64, false),
    col("n", Kind::Int64, false),
    col("k", Kind::Int64, false),
    col("a", Kind::Binary, false),
    col("b", Kind::Binary, false),
    col("c", Kind::Binary, true),
    col("scale_a", Kind::UInt32, true),
    col("scale_b", Kind::UInt32, true),
    col("scale_result", Kind::UInt32, true),
    col("out_dtype", Kind::Utf8, true),
    col("fast_accum", Kind::Boolean, true),
    col("split_s", Kind::Int32, true),
    col("split_scheme", Kind::Utf8, true),
    Column { name: "algo", kind: Kind::Utf8, nullable: true, optional: true },
    col("call", Kind::Utf8, true),
    col("out_select", Kind::Utf8, true),
    col("expected", Kind::Binary, true),
    col("expected_sha256", Kind::Utf8, true),
    col("expected_error", Kind::Utf8, true),
    col("scope", Kind::Utf8, true),
    col("origin", Kind::Utf8, false),
];

/// The optional extension columns ([`crate::RowExt`]), written after the version 1 columns, and only by
/// files that use them. Version 1 readers skip them as unknown columns.
pub(crate) const EXT_COLUMNS: &[Column] = &[
    Column { name: "inputs", kind: Kind::Utf8, nullable: true, optional: true },
    Column { name: "expected_samples", kind: Kind::Utf8, nullable: true, optional: true },
    Column { name: "note", kind: Kind::Utf8, nullable: true, optional: true },
    Column { name: "amax_d", kind: Kind::UInt32, nullable: true, optional: true },
];

/// The Arrow schema of a version 1 file, without metadata; with the extension columns when `ext`.
pub(crate) fn arrow_schema(ext: bool) -> Schema {
    let cols = COLUMNS.iter().chain(if ext { EXT_COLUMNS } else { &[] });
    Schema::new(cols.map(|c| Field::new(c.name, c.kind.data_type(), c.nullable)).collect::<Vec<_>>())
}

/// The names of every column of version 1, in the spec's order.
pub fn column_names() -> impl Iterator<Item = &'static str> {
    COLUMNS.iter().map(|c| c.name)
}

/// The names of the optional extension columns (`inputs`, `expected_samples`, `note`, `amax_d`).
pub fn extension_column_names() -> impl Iterator<Item = &'static str> {
    EXT_COLUMNS.iter().map(|c| c.name)
}
