//! The resolution itself (docs/reference.md §6.3): explicit splits, workspace and table rules, the
//! envelope, verification and its warnings (§6.6), and the SplitKUnknownError with its ways out (§6.7).

use super::*;

/// Default note of workspace-0 decisions when the table's sidecar has none.
const WORKSPACE0_NOTE: &str = "cuBLASLt never splits without a workspace (0 split rows among 209,712 queries)";

/// `1,234,567`.
fn group(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn accumulation(fast: bool) -> &'static str {
    if fast {
        "fast accumulation"
    } else {
        "slow accumulation"
    }
}

/// `(ws=1048576 B, out=float32, fast accumulation, e4m3 x e5m2)`.
fn describe_setting(ws: u64, out: OutDtype, fast: bool, fa: Format, fb: Format) -> String {
    format!("(ws={ws} B, out={out}, {}, {fa} x {fb})", accumulation(fast))
}

/// The schemes of the profile's preset for the hint `splitk=(S, 'a'|'b')`.
fn scheme_hint(profile: &Profile) -> String {
    let schemes = &profile.schemes;
    if schemes.is_empty() {
        "scheme".to_string()
    } else {
        schemes.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join("|")
    }
}

/// The caller's explicit split, validated (docs/reference.md §6.3 step 1); None for `auto`.
pub(crate) fn explicit_split(profile: &Profile, request: &SplitRequest) -> Result<Option<SplitK>> {
    let not_positive = |s: i64| Error::invalid_value(format!("split-K S must be a positive integer, got {s}"));
    match *request {
        SplitRequest::Auto => Ok(None),
        SplitRequest::Count(1) => Ok(Some(SplitK::NONE)),
        SplitRequest::Count(s) if s > 1 => {
            let hint = if profile.schemes.is_empty() {
                format!(" (preset '{}' has no split-K layout)", profile.preset.name())
            } else {
                String::new()
            };
            Err(Error::invalid_value(format!(
                "splitk={s} needs a reduction scheme: pass splitk=({s}, {}){hint}",
                scheme_hint(profile)
            )))
        }
        SplitRequest::Count(s) => Err(not_positive(s)),
        SplitRequest::Pair(s, ref scheme) => {
            if s < 1 {
                return Err(not_positive(s));
            }
            let s = usize::try_from(s).map_err(|_| Error::invalid_value(format!("split-K S = {s} is too large")))?;
            let scheme = Scheme::from_name(scheme).ok_or_else(|| {
                Error::invalid_value(format!(
                    "split-K scheme '{scheme}' is not one of 'none', 'serial', 'pairwise', 'contiguous'"
                ))
            })?;
            SplitK::new(s, scheme).map(Some)
        }
    }
}

/// The layout caveats of a contiguous split (docs/reference.md §6.6), in their order.
fn layout_caveat(s: usize, scheme: Scheme, k: usize, ragged_k_verified: bool) -> Option<String> {
    if scheme != Scheme::Contiguous || s <= 1 {
        return None;
    }
    if !k.is_multiple_of(128) && !ragged_k_verified {
        return Some(format!("K = {k} is not a multiple of 128 (no replayed split call has a ragged last k-tile)"));
    }
    None
}

/// A contiguous split that leaves a split without k-tiles (docs/reference.md §6.6): refused, never recorded.
pub(crate) fn empty_split(s: usize, scheme: Scheme, k: usize) -> Option<String> {
    if scheme != Scheme::Contiguous || s <= 1 || k == 0 {
        return None;
    }
    let t = k.div_ceil(128) as u128;
    let s128 = s as u128;
    ((s128 - 1) * t.div_ceil(s128) >= t).then(|| {
        format!(
            "split-K S = {s} leaves a split without k-tiles (K = {k}, {t} k-tiles): no cuBLASLt call was recorded so"
        )
    })
}

/// Is (fast, S, scheme, out, pair) a verified combination of the table?
fn in_verified(sc: Option<&Sidecar>, key: &SplitKey, s: usize, scheme: Scheme) -> bool {
    let Some(sc) = sc else { return false };
    sc.verified.iter().any(|c| {
        c.fast == key.fast
            && c.s as usize == s
            && c.scheme == scheme
            && c.out == key.out
            && c.fa == key.fa
            && c.fb == key.fb
    })
}

fn with_caveat(note: String, caveat: &Option<String>) -> String {
    match caveat {
        Some(c) => format!("{note}; {c}"),
        None => note,
    }
}

/// The UnverifiedSplitWarning of a decision, if any (docs/reference.md §6.6).
fn split_warning(profile: &Profile, key: &SplitKey, d: &SplitDecision, caveat: &Option<String>) -> Option<Warning> {
    let experimental = d.s > 1 && profile.splitk_maturity == Some(Maturity::Experimental);
    if d.verified && !experimental {
        return None;
    }
    let why = if !d.verified {
        caveat.clone().unwrap_or_else(|| {
            "this (fast, S, scheme, out, format pair) combination was never replayed on hardware".to_string()
        })
    } else {
        format!("split-K decisions of profile {} are experimental", profile.name)
    };
    Some(Warning::new(WarningKind::UnverifiedSplit, warning_text(profile, key, d, &why)))
}

fn warning_text(profile: &Profile, key: &SplitKey, d: &SplitDecision, why: &str) -> String {
    format!(
        "mmaemu split-K S={} scheme={} ({}, out {}, {}, source {}, profile {}): {why}",
        d.s,
        d.scheme,
        accumulation(key.fast),
        key.out,
        key.pair(),
        d.source,
        profile.name
    )
}

/// The ways out of a SplitKUnknownError (docs/reference.md §6.7).
fn ways_out(profile: &Profile) -> String {
    let third = match (&profile.gpu_name, profile.splitk_table) {
        (Some(gpu), Some(_)) => format!(
            "(3) run on the profile's GPU ({gpu}, cuBLASLt {}), where a live cuBLASLt heuristic query decides \
             the shape, or record the shape there with mmaemu-record (the recorder)",
            profile.cublaslt_version.as_deref().unwrap_or("?")
        ),
        _ => format!("(3) record the GPU's heuristics with mmaemu-record (the recorder) ({BRING_UP})"),
    };
    format!(
        "Ways out: (1) pass splitk=1 if the call is known to be unsplit; (2) pass splitk=(S, {}) if the split is \
         known; {third}",
        scheme_hint(profile)
    )
}

fn unknown_error(profile: &Profile, key: &SplitKey, reason: &str) -> Error {
    Error::new(
        Category::SplitKUnknown,
        format!(
            "splitk='auto' cannot be resolved for M={} N={} K={} ({} x {} -> {}, {}) on profile '{}': {reason}. {}",
            key.m,
            key.n,
            key.k,
            key.fa,
            key.fb,
            key.out,
            accumulation(key.fast),
            profile.name,
            ways_out(profile)
        ),
    )
}

/// What an envelope says about a shape.
enum EnvOutcome {
    /// S = 1 inferred.
    Infer {
        note: String,
        /// verified (the envelope's workspace passed its held-out test).
        verified: bool,
        /// Why it is not verified (the UnvalidatedEnvelopeWarning's reason).
        unvalidated: Option<String>,
    },
    /// Nothing inferred; `prefixed`: the reason follows "the shape is not in the table and".
    Nothing { reason: String, prefixed: bool },
}

fn envelope_outcome(sc: &Sidecar, key: &SplitKey, ws: u64) -> EnvOutcome {
    let desc = describe_setting(ws, key.out, key.fast, key.fa, key.fb);
    let mn = key.m as u128 * key.n as u128;
    match sc.envelope {
        Some(Envelope::MaxSplitMn { inference: true, margin }) => {
            let same =
                |s: &&sidecar::SettingSummary| s.ws == ws && s.fast == key.fast && s.fa == key.fa && s.fb == key.fb;
            let (rows, split_rows, max_mn, origin) = match sc.settings.iter().find(|s| same(s) && s.out == key.out) {
                Some(s) => {
                    (s.rows, s.split_rows, s.max_split_mn.filter(|_| s.split_rows > 0), "table setting".to_string())
                }
                None => {
                    let union: Vec<&sidecar::SettingSummary> = sc.settings.iter().filter(same).collect();
                    if union.is_empty() {
                        return EnvOutcome::Nothing {
                            reason: format!(
                                "the table has no rows for this setting; no envelope for setting {desc}: no table rows \
                                 for ws={ws}, fast={}, {} x {}",
                                key.fast, key.fa, key.fb
                            ),
                            prefixed: false,
                        };
                    }
                    let outs: Vec<&str> = union.iter().map(|s| s.out.name()).collect();
                    (
                        union.iter().map(|s| s.rows).sum(),
                        union.iter().map(|s| s.split_rows).sum(),
                        union.iter().filter(|s| s.split_rows > 0).filter_map(|s| s.max_split_mn).max(),
                        format!("union over output dtypes [{}] (setting {desc} absent)", outs.join(", ")),
                    )
                }
            };
            match max_mn {
                None => EnvOutcome::Infer {
                    note: format!(
                        "inference: setting {desc} [{origin}] has no split rows (0 of {} rows split): S = 1 for every \
                         shape",
                        group(rows as u128)
                    ),
                    verified: true,
                    unvalidated: None,
                },
                Some(mx) => {
                    let bound = margin as u128 * mx as u128;
                    let detail = format!(
                        "inference bound {margin} x {} = {} of setting {desc} [{origin}] (largest split M*N {}; {} of {} \
                         rows split)",
                        group(mx as u128),
                        group(bound),
                        group(mx as u128),
                        group(split_rows as u128),
                        group(rows as u128)
                    );
                    if mn > bound {
                        EnvOutcome::Infer {
                            note: format!("inference: M*N = {} is above the {detail}", group(mn)),
                            verified: true,
                            unvalidated: None,
                        }
                    } else {
                        EnvOutcome::Nothing {
                            reason: format!("M*N = {} is not above the inference bound; {detail}", group(mn)),
                            prefixed: true,
                        }
                    }
                }
            }
        }
        Some(Envelope::KGrid { inference: true, k_min, k_max, k_grid, bounds, validation, eval }) => {
            let k = key.k as u64;
            let i = k_grid.partition_point(|&g| g < k);
            if k < k_min || k > k_max || i >= k_grid.len() {
                return EnvOutcome::Nothing {
                    reason: format!(
                        "K = {} is outside the envelope's K range {}..{}",
                        group(k as u128),
                        group(k_min as u128),
                        group(k_max as u128)
                    ),
                    prefixed: true,
                };
            }
            let Some(bound) = bounds
                .iter()
                .find(|b| b.ws == ws && b.out == key.out && b.fast == key.fast && b.fa == key.fa && b.fb == key.fb)
            else {
                return EnvOutcome::Nothing {
                    reason: format!("the envelope has no bound at workspace {ws} B for this setting {desc}"),
                    prefixed: true,
                };
            };
            let kg = k_grid[i];
            let b = bound.b.get(i).copied().unwrap_or(NULL_BOUND);
            if b == NULL_BOUND {
                return EnvOutcome::Nothing {
                    reason: format!(
                        "the envelope infers nothing from grid K = {} on (the smallest grid K >= K) for setting {desc}",
                        group(kg as u128)
                    ),
                    prefixed: true,
                };
            }
            let at = format!(
                "the envelope bound {} at grid K = {} (the smallest grid K >= K) of setting {desc}",
                group(b as u128),
                group(kg as u128)
            );
            if mn > b as u128 {
                let (validated, status) = match validation.iter().find(|v| v.ws == ws) {
                    Some(v) => (
                        v.status == "validated",
                        format!(
                            "envelope {} on held-out shapes ({} above the bound, {} split; {eval})",
                            v.status,
                            group(v.tested as u128),
                            group(v.split_above_bound as u128)
                        ),
                    ),
                    None => (false, "envelope unvalidated (no held-out test)".to_string()),
                };
                EnvOutcome::Infer {
                    note: format!("inference: M*N = {} is above {at}; {status}", group(mn)),
                    verified: validated,
                    unvalidated: (!validated).then_some(status),
                }
            } else {
                EnvOutcome::Nothing { reason: format!("M*N = {} is not above {at}", group(mn)), prefixed: true }
            }
        }
        _ => EnvOutcome::Nothing {
            reason: "the table infers nothing outside its rows (its envelope has inference = false)".to_string(),
            prefixed: true,
        },
    }
}

/// Resolves the split-K decision of one GEMM on `profile` (docs/reference.md §6.3, steps 1–8).
///
/// - `key`: the key cuBLASLt's heuristic sees (for a column-major out, [`SplitKey::column_major`]);
/// - `request`: `auto`, an integer or (S, scheme);
/// - `layout_std`: input and mat2ᵀ are contiguous (torch's standard layout); otherwise the table is skipped;
/// - `strict`: no envelope inference (the caller reads MMAEMU_SPLITK_STRICT; the model reads no environment).
///
/// Step 6 (the live cuBLASLt heuristic query on the profile's own GPU) is not part of the model: it has no
/// cuBLASLt. Returns the decision and its warnings (UnverifiedSplitWarning, UnvalidatedEnvelopeWarning), on
/// every call. Errors: invalid value (a bad explicit split), SplitKUnknownError (§6.7), and a data error if
/// the table's embedded data fail their integrity check.
pub fn resolve_splitk(
    profile: &Profile,
    key: &SplitKey,
    request: &SplitRequest,
    layout_std: bool,
    strict: bool,
) -> Result<(SplitDecision, Vec<Warning>)> {
    let sc = profile.splitk_table.map(Table::sidecar);

    // 1. explicit
    if let Some(split) = explicit_split(profile, request)? {
        let (s, scheme) = (split.s(), split.scheme());
        let caveat = layout_caveat(s, scheme, key.k, sc.is_some_and(|sc| sc.ragged_k_verified));
        let verified = s == 1 || (in_verified(sc, key, s, scheme) && caveat.is_none());
        let d = SplitDecision {
            s,
            scheme,
            source: SplitSource::Explicit,
            verified,
            table_id: None,
            note: with_caveat("given by the caller".to_string(), &caveat),
        };
        let warnings = split_warning(profile, key, &d, &caveat).into_iter().collect();
        return Ok((d, warnings));
    }

    // 2. workspace0
    if profile.workspace_bytes == Some(0) {
        let d = SplitDecision {
            s: 1,
            scheme: Scheme::None,
            source: SplitSource::Workspace0,
            verified: true,
            table_id: profile.splitk_table.map(|t| t.id().to_string()),
            note: sc.and_then(|sc| sc.workspace0_note).unwrap_or(WORKSPACE0_NOTE).to_string(),
        };
        return Ok((d, Vec::new()));
    }

    // 3. no reference platform
    let (Some(ws), Some(table), Some(sc)) = (profile.workspace_bytes, profile.splitk_table, sc) else {
        return Err(Error::new(
            Category::SplitKUnknown,
            format!(
                "profile '{}' has no reference platform and no split-K table, so splitk='auto' cannot be resolved \
                 for M={} N={} K={}. {}",
                profile.name,
                key.m,
                key.n,
                key.k,
                ways_out(profile)
            ),
        ));
    };
    let table_id = Some(sc.table_id.to_string());

    // 4. zero size
    if key.m == 0 || key.n == 0 || key.k == 0 {
        let d = SplitDecision {
            s: 1,
            scheme: Scheme::None,
            source: SplitSource::Envelope,
            verified: true,
            table_id,
            note: "zero-size GEMM: nothing is accumulated (r6.zero_dims)".to_string(),
        };
        return Ok((d, Vec::new()));
    }

    // 5. table (torch's standard layout only)
    if layout_std {
        if let Some(row) = try_table_lookup(table, key, ws)? {
            let s = row.split_s.max(1) as usize;
            let (scheme, custom_caveat) = if s == 1 {
                (Scheme::None, None)
            } else {
                match sc.custom_schemes.iter().find(|(c, _)| *c == row.custom_option) {
                    Some(&(_, scheme)) => (scheme, None),
                    None => {
                        let recorded: Vec<String> = sc.custom_schemes.iter().map(|(c, _)| c.to_string()).collect();
                        let caveat = sc.unlisted_caveat.then(|| {
                            format!(
                                "customOption {} was never recorded on a split call (recorded: {})",
                                row.custom_option,
                                recorded.join(", ")
                            )
                        });
                        let scheme = sc.unlisted_scheme.ok_or_else(|| {
                            unknown_error(
                                profile,
                                key,
                                &format!(
                                    "the table splits it {s} ways with customOption {}, whose split layout the \
                                     table's sidecar does not know (fit it from split recordings with `mmaemu fit \
                                     splitk` and rebuild the bundle with `--rules`, {BRING_UP})",
                                    row.custom_option
                                ),
                            )
                        })?;
                        (scheme, caveat)
                    }
                }
            };
            let caveat = custom_caveat.or_else(|| layout_caveat(s, scheme, key.k, sc.ragged_k_verified));
            let verified = s == 1 || (in_verified(Some(sc), key, s, scheme) && caveat.is_none());
            let note = format!(
                "table row: algo {}, tile {}, numSplitsK {}, customOption {}",
                row.algo_id, row.tile_id, row.split_s, row.custom_option
            );
            let d = SplitDecision {
                s,
                scheme,
                source: SplitSource::Table,
                verified,
                table_id,
                note: with_caveat(note, &caveat),
            };
            let warnings = split_warning(profile, key, &d, &caveat).into_iter().collect();
            return Ok((d, warnings));
        }
    }

    // 6. live query: not in the model (no cuBLASLt).

    // 7. envelope; 8. unknown
    let not_in_table = if layout_std {
        "the shape is not in the table"
    } else {
        "the table is not consulted for a non-standard layout (a padded leading dimension)"
    };
    match envelope_outcome(sc, key, ws) {
        EnvOutcome::Infer { note, verified, unvalidated } => {
            if strict {
                return Err(unknown_error(
                    profile,
                    key,
                    &format!(
                        "strict mode (MMAEMU_SPLITK_STRICT=1 or strict=True); {not_in_table}, and without strict \
                         mode the envelope would infer S = 1 ({note})"
                    ),
                ));
            }
            let d =
                SplitDecision { s: 1, scheme: Scheme::None, source: SplitSource::Envelope, verified, table_id, note };
            let warnings = match unvalidated {
                Some(why) if !verified => {
                    vec![Warning::new(WarningKind::UnvalidatedEnvelope, warning_text(profile, key, &d, &why))]
                }
                _ => Vec::new(),
            };
            Ok((d, warnings))
        }
        EnvOutcome::Nothing { reason, prefixed } => {
            let reason = if prefixed { format!("{not_in_table} and {reason}") } else { reason };
            Err(unknown_error(profile, key, &reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(4_194_304), "4,194,304");
        assert_eq!(group(256_642), "256,642");
    }

    #[test]
    fn caveats() {
        assert_eq!(layout_caveat(2, Scheme::Contiguous, 512, false), None);
        assert!(layout_caveat(2, Scheme::Contiguous, 6000, false).unwrap().contains("not a multiple of 128"));
        assert_eq!(layout_caveat(2, Scheme::Contiguous, 6000, true), None);
        assert!(empty_split(4, Scheme::Contiguous, 768).unwrap().contains("without k-tiles"));
        assert!(empty_split(3, Scheme::Contiguous, 768).is_none() && empty_split(4, Scheme::Serial, 768).is_none());
        assert_eq!(layout_caveat(3, Scheme::Contiguous, 640, true), None);
        assert_eq!(layout_caveat(4, Scheme::Serial, 768, false), None);
        assert_eq!(layout_caveat(1, Scheme::Contiguous, 100, false), None);
    }
}
