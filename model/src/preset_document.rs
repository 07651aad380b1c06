//! A preset written as data (docs/preset-format.md): the TOML document `mmaemu-preset/1` — its parser, which takes a
//! whole document or the table a larger document embeds, and its writer. The maturity is computed, never declared.

use crate::error::{Error, Result};
use crate::preset::{BlockRounding, CEntry, Maturity, Preset, PresetSpec, ScaleFormat};

/// The value of the document's `format` key.
pub const PRESET_FORMAT: &str = "mmaemu-preset/1";

/// The keys a document may hold.
const KEYS: [&str; 12] = [
    "format",
    "name",
    "nfma",
    "frac",
    "frac_out",
    "rounding",
    "min_exp",
    "c_entry",
    "slow_chunk",
    "scale_block",
    "scale_format",
    "group",
];

fn bad(msg: String) -> Error {
    Error::invalid_value(format!("preset document: {msg}"))
}

fn int(t: &toml::Table, key: &str) -> Result<Option<i64>> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::Integer(i)) => Ok(Some(*i)),
        Some(v) => Err(bad(format!("'{key}' must be an integer, got {}", v.type_str()))),
    }
}

fn required_int<T: TryFrom<i64>>(t: &toml::Table, key: &str) -> Result<T> {
    let i = int(t, key)?.ok_or_else(|| bad(format!("missing key '{key}'")))?;
    T::try_from(i).map_err(|_| bad(format!("'{key}' = {i} is out of range")))
}

fn optional_u32(t: &toml::Table, key: &str) -> Result<Option<u32>> {
    int(t, key)?.map(|i| u32::try_from(i).map_err(|_| bad(format!("'{key}' = {i} is out of range")))).transpose()
}

fn string<'t>(t: &'t toml::Table, key: &str) -> Result<&'t str> {
    match t.get(key) {
        None => Err(bad(format!("missing key '{key}'"))),
        Some(toml::Value::String(s)) => Ok(s),
        Some(v) => Err(bad(format!("'{key}' must be a string, got {}", v.type_str()))),
    }
}

/// A TOML basic string holding `s`.
fn quote(s: &str) -> String {
    let mut q = String::from('"');
    for ch in s.chars() {
        match ch {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() => q.push_str(&format!("\\u{:04X}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

impl Preset {
    /// The preset of a `mmaemu-preset/1` TOML document (docs/preset-format.md). Errors (invalid value): TOML
    /// syntax, a missing, unknown or mistyped key, another format, parameters [`Preset::custom`] refuses, or a
    /// built-in preset's name with other parameters.
    pub fn from_document(text: &str) -> Result<Preset> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
        Preset::from_table(&table)
    }

    /// The preset of a document already parsed, or of the `[preset]` table a larger document embeds.
    pub fn from_table(t: &toml::Table) -> Result<Preset> {
        if t.contains_key("builtin") {
            return Err(bad(
                "'builtin' belongs to the library's own documents: a preset's maturity is computed from recordings, \
                 never declared"
                    .to_string(),
            ));
        }
        let spec = spec_of(t)?;
        if !crate::catalogue::is_plain_label(&spec.name) {
            return Err(bad(format!("name {:?} is not plain: names are ASCII [a-z0-9][a-z0-9._-]*", spec.name)));
        }
        Preset::from_spec(spec)
    }
}

/// The parameters of a document's table (every key but the built-in documents' `[builtin]`).
fn spec_of(t: &toml::Table) -> Result<PresetSpec> {
    {
        if let Some(k) = t.keys().find(|k| !KEYS.contains(&k.as_str()) && k.as_str() != "builtin") {
            return Err(bad(format!("unknown key '{k}'; the keys are {}", KEYS.join(", "))));
        }
        let format = string(t, "format")?;
        if format != PRESET_FORMAT {
            return Err(bad(format!("format must be '{PRESET_FORMAT}', got '{format}'")));
        }
        let name = string(t, "name")?;
        let c_entry = string(t, "c_entry")?;
        let c_entry = CEntry::from_name(c_entry)
            .ok_or_else(|| bad(format!("c_entry must be 'early' or 'late', got '{c_entry}'")))?;
        let rounding = match t.get("rounding").map(|_| string(t, "rounding")).transpose()? {
            None | Some("truncate") => BlockRounding::Truncate,
            Some("nearest_even") => BlockRounding::NearestEven,
            Some(other) => return Err(bad(format!("rounding must be 'truncate' or 'nearest_even', got '{other}'"))),
        };
        let spec = PresetSpec::custom(
            name,
            required_int(t, "nfma")?,
            required_int(t, "frac")?,
            required_int(t, "frac_out")?,
            required_int(t, "min_exp")?,
            c_entry,
            optional_u32(t, "slow_chunk")?,
        )
        .with_rounding(rounding)
        .with_scale_block(optional_u32(t, "scale_block")?);
        let scale_format = match t.get("scale_format").map(|_| string(t, "scale_format")).transpose()? {
            None => ScaleFormat::Ue8m0,
            Some(s) => ScaleFormat::from_name(s)
                .ok_or_else(|| bad(format!("scale_format must be 'ue8m0' or 'ue4m3', got '{s}'")))?,
        };
        Ok(spec.with_group_scale(optional_u32(t, "group")?, scale_format))
    }
}

/// One of the library's own preset documents (datasets/presets): the preset and its `[builtin]` table — the
/// maturity its recordings (or the oracle) establish, the evidence, the note of its warnings, its aliases, and the
/// names refused with a pointer to the bring-up guide.
#[derive(Clone, Debug)]
pub struct BuiltinPreset {
    /// The preset, with the declared maturity.
    pub preset: Preset,
    /// Other names of the preset (`blackwell`).
    pub aliases: Vec<String>,
    /// What establishes its maturity.
    pub evidence: String,
    /// Names refused (case-insensitively) as another GPU's, and why.
    pub refused: Vec<String>,
    /// The reason given with a refused name.
    pub refused_because: Option<String>,
}

impl BuiltinPreset {
    /// Whether `name` is one of the preset's aliases.
    pub fn is_alias(&self, name: &str) -> bool {
        self.aliases.iter().any(|a| a == name)
    }

    /// A built-in document: a preset document plus its `[builtin]` table.
    pub fn from_document(text: &str) -> Result<BuiltinPreset> {
        let t: toml::Table = text.parse().map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
        let Some(toml::Value::Table(b)) = t.get("builtin") else {
            return Err(bad("a built-in document needs its [builtin] table".to_string()));
        };
        const BUILTIN_KEYS: [&str; 6] = ["maturity", "evidence", "note", "aliases", "refused_names", "refused_because"];
        if let Some(k) = b.keys().find(|k| !BUILTIN_KEYS.contains(&k.as_str())) {
            return Err(bad(format!("unknown key 'builtin.{k}'; the keys are {}", BUILTIN_KEYS.join(", "))));
        }
        let maturity = match string(b, "maturity")? {
            "validated" => Maturity::Validated,
            "experimental" => Maturity::Experimental,
            other => return Err(bad(format!("builtin.maturity must be 'validated' or 'experimental', got '{other}'"))),
        };
        let strings = |key: &str| -> Result<Vec<String>> {
            match b.get(key) {
                None => Ok(Vec::new()),
                Some(toml::Value::Array(a)) => a
                    .iter()
                    .map(|v| {
                        v.as_str().map(str::to_string).ok_or_else(|| bad(format!("'builtin.{key}' holds strings")))
                    })
                    .collect(),
                Some(v) => Err(bad(format!("'builtin.{key}' must be an array, got {}", v.type_str()))),
            }
        };
        let optional = |key: &str| b.get(key).map(|_| string(b, key).map(str::to_string)).transpose();
        let spec = PresetSpec { maturity, ..spec_of(&t)? };
        Ok(BuiltinPreset {
            preset: Preset::from_builtin_spec(spec, optional("note")?)?,
            aliases: strings("aliases")?,
            evidence: string(b, "evidence")?.to_string(),
            refused: strings("refused_names")?,
            refused_because: optional("refused_because")?,
        })
    }
}

impl Preset {
    /// A user's parameters as a preset whose maturity is computed: a built-in preset's own name and arithmetic give
    /// that preset; another name with a built-in preset's arithmetic gets its maturity; anything else is custom.
    /// A built-in name with other parameters is refused.
    pub fn from_spec(spec: PresetSpec) -> Result<Preset> {
        let builtins = crate::catalogue::builtin_presets().iter().map(|b| &b.preset);
        if let Some(builtin) = builtins.clone().find(|b| b.name() == spec.name) {
            if builtin.spec().same_arithmetic(&spec) {
                return Ok(builtin.clone());
            }
            return Err(bad(format!(
                "'{}' is a built-in preset's name; a preset with other parameters needs another name",
                spec.name
            )));
        }
        if let Some(builtin) = builtins.clone().find(|b| b.spec().same_arithmetic(&spec)) {
            let spec = PresetSpec { maturity: builtin.maturity(), ..spec };
            return Preset::custom(spec.clone()).map(|_| builtin.renamed(spec));
        }
        Preset::custom(PresetSpec { maturity: Maturity::Custom, ..spec })
    }

    /// The preset as a `mmaemu-preset/1` document that [`Preset::from_document`] reads back to an equal preset.
    pub fn to_document(&self) -> String {
        let s = self.spec();
        let mut out = format!(
            "format = \"{PRESET_FORMAT}\"\nname = {}\nnfma = {}\nfrac = {}\nfrac_out = {}\nrounding = \"{}\"\n\
             min_exp = {}\nc_entry = \"{}\"\n",
            quote(&s.name),
            s.nfma,
            s.frac,
            s.frac_out,
            s.rounding.name(),
            s.min_exp,
            s.c_entry.name()
        );
        if let Some(c) = s.slow_chunk {
            out += &format!("slow_chunk = {c}\n");
        }
        if let Some(b) = s.scale_block {
            out += &format!("scale_block = {b}\n");
        }
        if s.scale_format != ScaleFormat::Ue8m0 {
            out += &format!("scale_format = \"{}\"\n", s.scale_format.name());
        }
        if let Some(g) = s.group {
            out += &format!("group = {g}\n");
        }
        out
    }
}
