//! The one reader of a split-K table's JSON sidecar (`mmaemu-splitk-table/1`, docs/platform-format.md): the text
//! into a [`Sidecar`], every missing or mistyped field a data error naming it. The built-in tables and the
//! tables of loaded platforms are read here alike.

use super::sha256::{hex, sha256};
use super::sidecar::{Combo, Envelope, KBound, SettingSummary, Sidecar, WsValidation, NULL_BOUND};
use crate::epilogue::OutDtype;
use crate::error::{Category, Error, Result};
use crate::format::Format;
use crate::plan::Scheme;
use serde_json::Value;

/// The sidecar's format.
pub(crate) const FORMAT: &str = "mmaemu-splitk-table/1";

// A table lives as long as the process: its strings and lists are leaked once, when it is read.
fn leak_str(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}
fn leak<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}

struct Reader<'a> {
    what: &'a str,
}

impl Reader<'_> {
    fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::new(Category::Data, format!("split-K table sidecar {}: {msg}", self.what))
    }
    fn get<'v>(&self, v: &'v Value, key: &str) -> Result<&'v Value> {
        v.get(key).ok_or_else(|| self.err(format!("missing field `{key}`")))
    }
    fn u64(&self, v: &Value, key: &str) -> Result<u64> {
        self.get(v, key)?.as_u64().ok_or_else(|| self.err(format!("`{key}` is not an unsigned integer")))
    }
    fn opt_u64(&self, v: &Value, key: &str) -> Result<Option<u64>> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x.as_u64().map(Some).ok_or_else(|| self.err(format!("`{key}` is not an unsigned integer"))),
        }
    }
    fn str<'v>(&self, v: &'v Value, key: &str) -> Result<&'v str> {
        self.get(v, key)?.as_str().ok_or_else(|| self.err(format!("`{key}` is not a string")))
    }
    fn bool(&self, v: &Value, key: &str) -> Result<bool> {
        self.get(v, key)?.as_bool().ok_or_else(|| self.err(format!("`{key}` is not a boolean")))
    }
    fn array<'v>(&self, v: &'v Value, key: &str) -> Result<&'v Vec<Value>> {
        self.get(v, key)?.as_array().ok_or_else(|| self.err(format!("`{key}` is not an array")))
    }
    fn format(&self, s: &str) -> Result<Format> {
        Format::from_name(s).ok_or_else(|| self.err(format!("unknown format {s:?}")))
    }
    fn out(&self, s: &str) -> Result<OutDtype> {
        OutDtype::from_name(s).ok_or_else(|| self.err(format!("unknown out dtype {s:?}")))
    }
    fn scheme(&self, s: &str) -> Result<Scheme> {
        match Scheme::from_name(s) {
            Some(Scheme::None) | None => Err(self.err(format!("{s:?} is not a split scheme or rule"))),
            Some(x) => Ok(x),
        }
    }
    /// (ws, out, fast, fmt_a, fmt_b) of a setting or bound entry.
    fn setting(&self, v: &Value) -> Result<(u64, OutDtype, bool, Format, Format)> {
        Ok((
            self.u64(v, "ws")?,
            self.out(self.str(v, "out")?)?,
            self.bool(v, "fast")?,
            self.format(self.str(v, "fmt_a")?)?,
            self.format(self.str(v, "fmt_b")?)?,
        ))
    }
}

/// Read a sidecar's JSON text (`what` names it in errors).
pub(crate) fn parse(text: &str, what: &str) -> Result<Sidecar> {
    let r = Reader { what };
    let sc: Value = serde_json::from_str(text).map_err(|e| r.err(format!("not JSON: {e}")))?;
    let format = r.str(&sc, "format")?;
    if format != FORMAT {
        return Err(r.err(format!("format {format:?}, expected {FORMAT:?}")));
    }
    let platform = r.get(&sc, "platform")?;
    let codes = r.get(&sc, "codes")?;

    // customOption -> scheme (a documented scheme name or a split rule's name).
    let custom =
        r.get(codes, "custom -> scheme")?.as_object().ok_or_else(|| r.err("`custom -> scheme` is not an object"))?;
    let mut customs = Vec::new();
    for (c, scheme) in custom {
        let c: u8 = c.parse().map_err(|_| r.err(format!("customOption {c:?} is not a number")))?;
        customs.push((c, r.scheme(scheme.as_str().ok_or_else(|| r.err("a scheme is not a string"))?)?));
    }
    customs.sort();
    // An unlisted customOption: the sidecar's rule; a recorder's sidecar states none, and then the scheme of the
    // first listed customOption stands in, always with the "never recorded" caveat.
    // A map with no customOption (a GPU family the recorder has no guess for), or an unlisted entry of null (a
    // bundle's fitted rules, which guess nothing), knows no scheme for an unlisted customOption: its split is refused.
    let (unlisted, unlisted_caveat) = match codes.get("custom -> scheme, unlisted") {
        Some(Value::Null) => (None, true),
        Some(_) => (
            Some(r.scheme(r.str(codes, "custom -> scheme, unlisted")?)?),
            // The caveat is dropped only where the sidecar notes where the rule comes from.
            codes.get("custom -> scheme, unlisted: note").is_none(),
        ),
        None => (customs.first().map(|c| c.1), true),
    };
    let ragged = sc
        .get("split_layouts")
        .and_then(|l| l.get("ragged_K"))
        .and_then(|x| x.get("verified"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let workspace0_note = sc.get("workspace0_note").and_then(Value::as_str).map(leak_str);

    let mut settings = Vec::new();
    for st in r.array(&sc, "settings")? {
        let (ws, out, fast, fa, fb) = r.setting(st)?;
        let s_values = r
            .array(st, "S_values")?
            .iter()
            .map(|x| {
                x.as_u64().and_then(|v| u8::try_from(v).ok()).ok_or_else(|| r.err("`S_values`: not a split count"))
            })
            .collect::<Result<Vec<u8>>>()?;
        settings.push(SettingSummary {
            ws,
            out,
            fast,
            fa,
            fb,
            rows: r.u64(st, "rows")?,
            split_rows: r.u64(st, "split_rows")?,
            max_split_mn: r.opt_u64(st, "max_split_MN")?,
            min_split_k: r.opt_u64(st, "min_split_K")?,
            s_values: leak(s_values),
        });
    }

    let envelope = match sc.get("envelope") {
        None | Some(Value::Null) => None,
        Some(env) if env.get("kind").and_then(Value::as_str) == Some("none") => None,
        Some(env) => Some(match r.str(env, "kind")? {
            "max_split_MN" => {
                Envelope::MaxSplitMn { inference: r.bool(env, "inference")?, margin: r.u64(env, "margin")? }
            }
            "k_grid" => envelope_k_grid(&r, env)?,
            other => return Err(r.err(format!("unknown envelope kind {other:?}"))),
        }),
    };

    // The split combinations replayed on hardware; a new table has none yet.
    let no_combos = serde_json::json!({ "combos": [] });
    let vcs = sc.get("verified_combos").unwrap_or(&no_combos);
    let mut verified = Vec::new();
    for c in r.array(vcs, "combos")? {
        if !r.bool(c, "verified")? {
            continue;
        }
        let pair = r.str(c, "fmt_pair")?;
        let (fa, fb) = pair.split_once('x').ok_or_else(|| r.err(format!("bad fmt_pair {pair:?}")))?;
        verified.push(Combo {
            fast: r.bool(c, "fast")?,
            s: u32::try_from(r.u64(c, "S")?).map_err(|_| r.err("`S` too large"))?,
            scheme: r.scheme(r.str(c, "scheme")?)?,
            out: r.out(r.str(c, "out")?)?,
            fa: r.format(fa)?,
            fb: r.format(fb)?,
        });
    }

    Ok(Sidecar {
        table_id: leak_str(r.str(&sc, "table_id")?),
        name: leak_str(r.str(&sc, "name")?),
        gpu: leak_str(r.str(platform, "gpu")?),
        cublaslt: leak_str(r.str(platform, "cublaslt")?),
        rows: r.u64(&sc, "rows")?,
        split_rows: r.u64(&sc, "split_rows")?,
        parquet_sha256: leak_str(r.str(&sc, "parquet_sha256")?),
        sidecar_sha256: leak_str(&hex(&sha256(text.as_bytes()))),
        custom_schemes: leak(customs),
        unlisted_scheme: unlisted,
        unlisted_caveat,
        ragged_k_verified: ragged,
        workspace0_note,
        settings: leak(settings),
        envelope,
        verified_table_id: leak_str(match vcs.get("table_id") {
            Some(_) => r.str(vcs, "table_id")?,
            None => r.str(&sc, "table_id")?,
        }),
        verified: leak(verified),
    })
}

fn envelope_k_grid(r: &Reader<'_>, env: &Value) -> Result<Envelope> {
    let grid = r
        .array(env, "K_grid")?
        .iter()
        .map(|x| x.as_u64().ok_or_else(|| r.err("`K_grid`: not an integer")))
        .collect::<Result<Vec<u64>>>()?;
    let mut bounds = Vec::new();
    for bd in r.array(env, "bounds")? {
        let (ws, out, fast, fa, fb) = r.setting(bd)?;
        let b = r
            .array(bd, "B")?
            .iter()
            .map(|x| match x {
                Value::Null => Ok(NULL_BOUND),
                x => x.as_u64().filter(|&v| v != NULL_BOUND).ok_or_else(|| r.err("bounds: `B` is not an integer")),
            })
            .collect::<Result<Vec<u64>>>()?;
        if b.len() != grid.len() {
            return Err(r.err("bounds: `B` and `K_grid` differ in length"));
        }
        bounds.push(KBound { ws, out, fast, fa, fb, b: leak(b) });
    }
    let validation =
        r.get(env, "validation")?.as_object().ok_or_else(|| r.err("`envelope.validation` is not an object"))?;
    let mut ws_validation = Vec::new();
    for (ws, v) in validation {
        ws_validation.push(WsValidation {
            ws: ws.parse().map_err(|_| r.err(format!("envelope.validation: bad workspace {ws:?}")))?,
            status: leak_str(r.str(v, "status")?),
            tested: r.u64(v, "tested")?,
            split_above_bound: r.u64(v, "split_above_bound")?,
        });
    }
    Ok(Envelope::KGrid {
        inference: r.bool(env, "inference")?,
        k_min: r.u64(env, "K_min")?,
        k_max: r.u64(env, "K_max")?,
        k_grid: leak(grid),
        bounds: leak(bounds),
        validation: leak(ws_validation),
        eval: leak_str(env.get("eval").and_then(Value::as_str).unwrap_or("no evaluation recorded")),
    })
}
