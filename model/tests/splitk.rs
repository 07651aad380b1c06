//! Split-K resolution (docs/reference.md §6.3–6.7, §5.5, §8.1): every example of the spec, resolved from the
//! tables embedded in the model (no file is read).

use mmaemu_model::{
    resolve_splitk, table_info, table_lookup, try_table_lookup, Category, Format, InvalidKind, OutDtype, Profile,
    Scheme, SplitDecision, SplitKey, SplitRequest, SplitSource, Warning, WarningKind,
};

fn h100() -> mmaemu_model::Table {
    mmaemu_model::Table::builtin("h100pcie-cublaslt-12.8.3.14").unwrap()
}

fn rtx4060() -> mmaemu_model::Table {
    mmaemu_model::Table::builtin("rtx4060-cublaslt-12.8.3.14").unwrap()
}

const E4: Format = Format::E4m3;
const E5: Format = Format::E5m2;
const MIB: u64 = 1 << 20;

fn profile(name: &str) -> Profile {
    mmaemu_model::Catalogue::builtin().profile(name).unwrap()
}

fn key(m: usize, n: usize, k: usize, fa: Format, fb: Format, out: OutDtype, fast: bool) -> SplitKey {
    SplitKey { m, n, k, fa, fb, out, fast }
}

fn auto(p: &str, key: &SplitKey) -> (SplitDecision, Vec<Warning>) {
    resolve_splitk(&profile(p), key, &SplitRequest::Auto, true, false).unwrap_or_else(|e| panic!("{e}"))
}

fn auto_err(p: &str, key: &SplitKey, strict: bool) -> String {
    let e = resolve_splitk(&profile(p), key, &SplitRequest::Auto, true, strict).unwrap_err();
    assert_eq!(e.category(), Category::SplitKUnknown, "{e}");
    e.message().to_string()
}

fn pair(p: &str, key: &SplitKey, s: i64, scheme: &str) -> (SplitDecision, Vec<Warning>) {
    resolve_splitk(&profile(p), key, &SplitRequest::Pair(s, scheme.into()), true, false)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn assert_ways_out(msg: &str, profile: &str) {
    assert!(msg.contains(&format!("profile '{profile}'")), "{msg}");
    assert!(msg.contains("pass splitk=1 if the call is known to be unsplit"), "{msg}");
    assert!(msg.contains("if the split is known"), "{msg}");
    assert!(msg.contains("mmaemu-record"), "{msg}");
}

// ---------------------------------------------------------------------------------------------------------
// §8.1, §5.5: table decisions

#[test]
fn explain_example_is_an_unsplit_table_row() {
    let (d, w) = auto("hopper", &key(16, 5760, 1920, E4, E4, OutDtype::BFloat16, true));
    assert_eq!((d.s, d.scheme, d.source, d.verified), (1, Scheme::None, SplitSource::Table, true));
    assert_eq!(d.table_id.as_deref(), Some("heur_h100pcie_lt12.8.3.14"));
    assert_eq!(d.note, "table row: algo 66, tile 312, numSplitsK 1, customOption 1");
    assert!(w.is_empty());
    assert_eq!(d.splitk(), mmaemu_model::SplitK::NONE);
}

#[test]
fn column_major_out_resolves_the_transposed_problem() {
    // ada, bf16 out, M=16, K=8192, N=48: row-major key -> S = 8 pairwise; column-major -> S = 12 pairwise.
    let row_major = key(16, 48, 8192, E4, E4, OutDtype::BFloat16, false);
    let (d, w) = auto("ada", &row_major);
    assert_eq!((d.s, d.scheme, d.source, d.verified), (8, Scheme::Pairwise, SplitSource::Table, true), "{d}");
    assert!(w.is_empty());
    let col = row_major.column_major();
    assert_eq!((col.m, col.n, col.k), (48, 16, 8192));
    let (d, w) = auto("ada", &col);
    assert_eq!((d.s, d.scheme, d.source, d.verified), (12, Scheme::Pairwise, SplitSource::Table, true), "{d}");
    assert!(w.is_empty());
    // The formats are swapped too.
    let mixed = key(16, 48, 8192, E4, E5, OutDtype::BFloat16, false).column_major();
    assert_eq!((mixed.fa, mixed.fb), (E5, E4));
}

#[test]
fn table_split_rows_take_their_scheme_from_the_custom_option() {
    // RTX: customOption 1 -> pairwise.
    let (d, _) = auto("ada", &key(1, 16, 16, E4, E4, OutDtype::Float32, false));
    assert_eq!((d.s, d.scheme), (3, Scheme::Pairwise));
    assert_eq!(d.note, "table row: algo 35, tile 13, numSplitsK 3, customOption 1");
    // H100: contiguous, verified, silent on hopper.
    let k = key(1, 2048, 8192, E4, E4, OutDtype::Float32, false);
    let (d, w) = auto("hopper", &k);
    assert_eq!((d.s, d.scheme, d.source, d.verified), (2, Scheme::Contiguous, SplitSource::Table, true), "{d}");
    assert!(w.is_empty(), "{w:?}");
    // Strict mode never blocks a table hit.
    let (d2, _) = resolve_splitk(&profile("hopper"), &k, &SplitRequest::Auto, true, true).unwrap();
    assert_eq!(d2, d);
}

#[test]
fn unlisted_h100_custom_options_carry_a_caveat() {
    // A 32 MiB split row with customOption 5 (only the 32 MiB rows have customOption 4 or 5).
    let k = key(65, 8192, 28672, E4, E4, OutDtype::Float32, false);
    let row = table_lookup(h100(), &k, 32 * MIB).unwrap();
    assert_eq!((row.split_s, row.custom_option), (3, 5));
    let (d, w) = auto("hopper-te", &k);
    assert_eq!((d.s, d.scheme, d.source, d.verified), (3, Scheme::Contiguous, SplitSource::Table, false));
    let caveat = "customOption 5 was never recorded on a split call (recorded: 0, 1, 2, 3)";
    assert!(d.note.ends_with(caveat), "{}", d.note);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].kind, WarningKind::UnverifiedSplit);
    // The caveat takes precedence over the experimental-profile reason.
    assert!(w[0].message.ends_with(caveat), "{}", w[0].message);
    assert!(w[0].message.starts_with("mmaemu split-K S=3 scheme=contiguous (slow accumulation, out float32, e4m3xe4m3, source table, profile hopper-te): "));
}

#[test]
fn te_profiles_warn_for_every_split_and_every_call() {
    // The same 1 MiB-verified combination, on the TE profile's own (32 MiB) row.
    let k = key(256, 96, 5760, E4, E5, OutDtype::BFloat16, true);
    for _ in 0..2 {
        let (d, w) = auto("hopper-te", &k);
        assert_eq!((d.s, d.scheme, d.verified), (2, Scheme::Contiguous, true), "{d}");
        assert_eq!(w.len(), 1, "warnings are returned on every call");
        assert!(w[0].message.ends_with("split-K decisions of profile hopper-te are experimental"), "{}", w[0]);
    }
    // ada-te: a split row warns, an unsplit one does not.
    let (d, w) = auto("ada-te", &key(1, 16, 16, E4, E4, OutDtype::Float16, false));
    assert_eq!((d.s, d.scheme, d.verified), (3, Scheme::Pairwise, true));
    assert_eq!(w.len(), 1);
    assert!(w[0].message.contains("profile ada-te): split-K decisions of profile ada-te are experimental"));
    let (d, w) = auto("hopper-te", &key(16, 5760, 1920, E4, E4, OutDtype::BFloat16, true));
    assert_eq!(d.s, 1);
    assert!(w.is_empty());
}

#[test]
fn non_standard_layouts_skip_the_table() {
    let k = key(1, 2048, 8192, E4, E4, OutDtype::Float32, false);
    let e = resolve_splitk(&profile("hopper"), &k, &SplitRequest::Auto, false, false).unwrap_err();
    assert_eq!(e.category(), Category::SplitKUnknown);
    assert!(e.message().contains("the table is not consulted for a non-standard layout"), "{e}");
    assert!(e.message().contains("is not above the envelope bound 256,642 at grid K = 8,192"), "{e}");
    // Above the bound, the envelope decides.
    let k = key(1024, 1024, 8192, E4, E4, OutDtype::Float32, false);
    let (d, _) = resolve_splitk(&profile("hopper"), &k, &SplitRequest::Auto, false, false).unwrap();
    assert_eq!((d.s, d.source), (1, SplitSource::Envelope));
}

// ---------------------------------------------------------------------------------------------------------
// §6.3 steps 1-4

#[test]
fn explicit_splits() {
    let k = key(64, 64, 4096, E4, E4, OutDtype::Float32, true);
    let r = |p: &str, req: SplitRequest| resolve_splitk(&profile(p), &k, &req, true, false);
    let (d, w) = r("hopper", SplitRequest::Count(1)).unwrap();
    assert_eq!((d.s, d.scheme, d.source, d.verified), (1, Scheme::None, SplitSource::Explicit, true));
    assert_eq!((d.table_id.as_deref(), d.note.as_str()), (None, "given by the caller"));
    assert!(w.is_empty());
    let (d, _) = r("hopper", SplitRequest::Pair(1, "none".into())).unwrap();
    assert_eq!(d.s, 1);
    // An integer S > 1 needs a scheme; the hint lists the preset's schemes.
    let e = r("hopper", SplitRequest::Count(2)).unwrap_err();
    assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::InvalidValue));
    assert!(e.message().contains("splitk=2 needs a reduction scheme: pass splitk=(2, 'contiguous')"), "{e}");
    let e = r("ada", SplitRequest::Count(4)).unwrap_err();
    assert!(e.message().contains("pass splitk=(4, 'serial'|'pairwise')"), "{e}");
    // Invalid SplitK values.
    for req in [
        SplitRequest::Count(0),
        SplitRequest::Count(-3),
        SplitRequest::Pair(0, "serial".into()),
        SplitRequest::Pair(-1, "contiguous".into()),
        SplitRequest::Pair(1, "serial".into()),
        SplitRequest::Pair(2, "none".into()),
        SplitRequest::Pair(2, "tree".into()),
    ] {
        let e = r("hopper", req.clone()).unwrap_err();
        assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::InvalidValue), "{req:?}: {e}");
    }
    // The scheme is not checked against the preset here (plan construction does), but it is unverified.
    let (d, w) = r("hopper", SplitRequest::Pair(2, "serial".into())).unwrap();
    assert_eq!((d.s, d.scheme, d.verified), (2, Scheme::Serial, false));
    assert!(w[0].message.ends_with("combination was never replayed on hardware"), "{}", w[0]);
    // Explicit splits bypass workspace0, missing tables and strict mode.
    for p in ["hopper-ws0", "hopper-experimental", "ada-ws0"] {
        let (d, _) = r(p, SplitRequest::Pair(2, "contiguous".into())).unwrap();
        assert_eq!((d.s, d.source), (2, SplitSource::Explicit));
    }
    let (d, _) =
        resolve_splitk(&profile("hopper"), &k, &SplitRequest::Pair(3, "contiguous".into()), true, true).unwrap();
    assert_eq!(d.source, SplitSource::Explicit);
}

#[test]
fn workspace0_never_splits() {
    let k = key(1, 2048, 8192, E4, E4, OutDtype::Float32, false); // splits at 1 MiB
    let (d, w) = auto("hopper-ws0", &k);
    assert_eq!((d.s, d.scheme, d.source, d.verified), (1, Scheme::None, SplitSource::Workspace0, true));
    assert_eq!(d.table_id.as_deref(), Some("heur_h100pcie_lt12.8.3.14"));
    assert!(d.note.starts_with("cuBLASLt never splits without a workspace"), "{}", d.note);
    assert!(w.is_empty());
    // Any shape, even one no table or envelope covers, and in strict mode.
    let odd = key(3, 5, 7, E5, E5, OutDtype::E5m2, true);
    let (d, _) = resolve_splitk(&profile("ada-ws0"), &odd, &SplitRequest::Auto, true, true).unwrap();
    assert_eq!((d.s, d.source), (1, SplitSource::Workspace0));
    assert_eq!(d.table_id.as_deref(), Some("heur_rtx4060_lt12.8.3.14"));
    assert!(d.note.contains("209,712"), "{}", d.note);
}

#[test]
fn profiles_without_a_table_cannot_resolve_auto() {
    for p in [
        "hopper-experimental",
        "b200-mma-sync-experimental",
        "b200-tcgen05-experimental",
        "rtx50-mma-sync-experimental",
    ] {
        let msg = auto_err(p, &key(16, 16, 16, E4, E4, OutDtype::Float32, true), false);
        assert!(
            msg.starts_with(&format!(
                "profile '{p}' has no reference platform and no split-K table, so splitk='auto' cannot be resolved \
                 for M=16 N=16 K=16."
            )),
            "{msg}"
        );
        assert_ways_out(&msg, p);
        assert!(msg.contains("record the GPU's heuristics with mmaemu-record"), "{msg}");
    }
    let msg = auto_err("hopper-experimental", &key(16, 16, 16, E4, E4, OutDtype::Float32, true), false);
    assert!(msg.contains("splitk=(S, 'contiguous')"), "{msg}");
}

#[test]
fn zero_sizes_are_unsplit() {
    for (m, n, k) in [(0, 16, 16), (16, 0, 16), (16, 16, 0)] {
        let (d, w) = auto("hopper", &key(m, n, k, E4, E4, OutDtype::Float32, true));
        assert_eq!((d.s, d.source, d.verified), (1, SplitSource::Envelope, true));
        assert_eq!(d.note, "zero-size GEMM: nothing is accumulated (r6.zero_dims)");
        assert!(w.is_empty());
    }
}

// ---------------------------------------------------------------------------------------------------------
// §6.5 envelopes

#[test]
fn rtx_envelope_margin_two_strict() {
    // 1 MiB, fp32, fast, e4m3 x e5m2: max split M*N 98,304, bound 196,608; K plays no part.
    let above = key(64, 3088, 8000, E4, E5, OutDtype::Float32, true);
    assert_eq!(table_lookup(rtx4060(), &above, MIB), None);
    let (d, w) = auto("ada", &above);
    assert_eq!((d.s, d.scheme, d.source, d.verified), (1, Scheme::None, SplitSource::Envelope, true));
    assert_eq!(d.table_id.as_deref(), Some("heur_rtx4060_lt12.8.3.14"));
    assert!(
        d.note.starts_with(
            "inference: M*N = 197,632 is above the inference bound 2 x 98,304 = 196,608 of setting (ws=1048576 B, \
             out=float32, fast accumulation, e4m3 x e5m2)"
        ),
        "{}",
        d.note
    );
    assert!(d.note.contains("(largest split M*N 98,304; 334 of 8,915 rows split)"), "{}", d.note);
    assert!(w.is_empty());

    let equal = key(64, 3072, 8000, E4, E5, OutDtype::Float32, true);
    let msg = auto_err("ada", &equal, false);
    assert!(
        msg.contains("the shape is not in the table and M*N = 196,608 is not above the inference bound; inference bound 2 x 98,304 = 196,608"),
        "{msg}"
    );
    assert!(msg.contains("M=64 N=3072 K=8000"), "{msg}");
    assert_ways_out(&msg, "ada");
    assert!(msg.contains("splitk=(S, 'serial'|'pairwise')"), "{msg}");
    assert!(msg.contains("run on the profile's GPU (NVIDIA GeForce RTX 4060"), "{msg}");

    // Strict mode disables the inference.
    let msg = auto_err("ada", &above, true);
    assert!(msg.contains("strict mode (MMAEMU_SPLITK_STRICT=1 or strict=True); "), "{msg}");
    assert_ways_out(&msg, "ada");
    // ada-te (4 MiB) uses its own settings, still verified and silent.
    let (d, w) = auto("ada-te", &key(2048, 2048, 8000, E4, E4, OutDtype::Float32, true));
    assert_eq!((d.s, d.verified), (1, true));
    assert!(d.note.contains("2 x 983,040 = 1,966,080"), "{}", d.note);
    assert!(w.is_empty());
}

#[test]
fn rtx_envelope_union_and_missing_settings() {
    // No e4m3 x e4m3 -> e5m2 rows: the union over the out dtypes of (1 MiB, fast, e4m3 x e4m3).
    let k = key(4096, 4096, 8000, E4, E4, OutDtype::E5m2, true);
    let (d, w) = auto("ada", &k);
    assert_eq!((d.s, d.source, d.verified), (1, SplitSource::Envelope, true));
    assert!(
        d.note.contains(
            "[union over output dtypes [float32, bfloat16, float16, float8_e4m3fn] (setting (ws=1048576 B, \
             out=float8_e5m2, fast accumulation, e4m3 x e4m3) absent)]"
        ),
        "{}",
        d.note
    );
    // max over the four: 135,168 (float16) -> bound 270,336.
    assert!(d.note.contains("2 x 135,168 = 270,336"), "{}", d.note);
    assert!(w.is_empty());
    // e5m2 x e5m2: no rows at all.
    let msg = auto_err("ada", &key(4096, 4096, 8000, E5, E5, OutDtype::Float32, true), false);
    assert!(
        msg.contains(
            "the table has no rows for this setting; no envelope for setting (ws=1048576 B, out=float32, fast \
             accumulation, e5m2 x e5m2): no table rows for ws=1048576, fast=true, e5m2 x e5m2"
        ),
        "{msg}"
    );
    assert_ways_out(&msg, "ada");
}

#[test]
fn h100_envelope_k_grid() {
    let f = |m, n, k| key(m, n, k, E4, E4, OutDtype::Float32, true);
    // K = 8192 -> B = 256,642; equal raises, one more infers S = 1.
    let msg = auto_err("hopper", &f(1, 256_642, 8192), false);
    assert!(
        msg.contains(
            "the shape is not in the table and M*N = 256,642 is not above the envelope bound 256,642 at grid K = 8,192 \
             (the smallest grid K >= K) of setting (ws=1048576 B, out=float32, fast accumulation, e4m3 x e4m3)"
        ),
        "{msg}"
    );
    assert_ways_out(&msg, "hopper");
    assert!(msg.contains("splitk=(S, 'contiguous')"), "{msg}");
    let (d, w) = auto("hopper", &f(1, 256_643, 8192));
    assert_eq!((d.s, d.scheme, d.source, d.verified), (1, Scheme::None, SplitSource::Envelope, true));
    assert!(
        d.note.starts_with(
            "inference: M*N = 256,643 is above the envelope bound 256,642 at grid K = 8,192 (the smallest grid K >= \
             K) of setting (ws=1048576 B, out=float32, fast accumulation, e4m3 x e4m3); envelope validated on \
             held-out shapes (154,191 above the bound, 0 split; "
        ),
        "{}",
        d.note
    );
    assert!(w.is_empty());
    // K = 8000 uses the same bound.
    let (d, _) = auto("hopper", &f(1, 256_643, 8000));
    assert!(d.note.contains("bound 256,642 at grid K = 8,192"), "{}", d.note);
    assert!(auto_err("hopper", &f(1, 256_642, 8000), false).contains("not above the envelope bound 256,642"));
    // K range.
    for k in [1000, 4_194_305] {
        let msg = auto_err("hopper", &f(8192, 8192, k), false);
        assert!(msg.contains("is outside the envelope's K range 1,024..4,194,304"), "{msg}");
        assert!(msg.contains(&format!("K = {}", if k == 1000 { "1,000" } else { "4,194,305" })), "{msg}");
    }
    let (d, _) = auto("hopper", &f(8192, 8192, 4_194_304));
    assert_eq!(d.s, 1);
    // Below the bound.
    let msg = auto_err("hopper", &f(100, 100, 5000), false);
    assert!(msg.contains("not above the envelope bound 15,360 at grid K = 5,120"), "{msg}");
    // Every K < 1,024 that is not a table row raises on the default profile.
    let msg = auto_err("hopper", &f(16, 256, 128), false);
    assert!(msg.contains("K = 128 is outside the envelope's K range 1,024..4,194,304"), "{msg}");
    // Strict mode, above the bound.
    let msg = auto_err("hopper", &f(1, 256_643, 8192), true);
    assert!(msg.contains("strict mode (MMAEMU_SPLITK_STRICT=1 or strict=True)"), "{msg}");
    assert_ways_out(&msg, "hopper");
}

#[test]
fn h100_envelope_per_workspace_validation() {
    // 32 MiB (hopper-te): unvalidated -> verified false and an UnvalidatedEnvelopeWarning, every call.
    let k = key(8000, 8000, 8000, E4, E4, OutDtype::Float32, true);
    assert_eq!(table_lookup(h100(), &k, 32 * MIB), None);
    for _ in 0..2 {
        let (d, w) = auto("hopper-te", &k);
        assert_eq!((d.s, d.source, d.verified), (1, SplitSource::Envelope, false));
        assert!(d.note.contains("at grid K = 8,192"), "{}", d.note);
        assert!(d.note.contains("envelope unvalidated on held-out shapes (77,518 above the bound, 1 split; "));
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].kind, WarningKind::UnvalidatedEnvelope);
        assert!(w[0].kind.is_unverified_split());
        assert!(w[0].message.starts_with(
            "mmaemu split-K S=1 scheme=none (fast accumulation, out float32, e4m3xe4m3, source envelope, profile \
             hopper-te): envelope unvalidated on held-out shapes"
        ));
    }
    // The 32 MiB bound list is its own: 327,680 at grid K 8,192 for fast fp32.
    let msg = auto_err("hopper-te", &key(1, 327_680, 8192, E4, E4, OutDtype::Float32, true), false);
    assert!(msg.contains("not above the envelope bound 327,680 at grid K = 8,192"), "{msg}");
    // The validation is keyed by workspace, not by profile name: a custom 32 MiB profile is unvalidated too.
    let custom = Profile { name: "my-hopper".into(), workspace_bytes: Some(32 * MIB), ..profile("hopper") };
    let (d, w) = resolve_splitk(&custom, &k, &SplitRequest::Auto, true, false).unwrap();
    assert!(!d.verified);
    assert_eq!(w[0].kind, WarningKind::UnvalidatedEnvelope);
    // A workspace without bounds (4 MiB).
    let custom = Profile { name: "hopper-4m".into(), workspace_bytes: Some(4 * MIB), ..profile("hopper") };
    let e = resolve_splitk(&custom, &k, &SplitRequest::Auto, true, false).unwrap_err();
    assert_eq!(e.category(), Category::SplitKUnknown);
    assert!(e.message().contains("the envelope has no bound at workspace 4194304 B for this setting"), "{e}");
    // e5m2 x e5m2 has no bound either.
    let msg = auto_err("hopper", &key(8000, 8000, 8000, E5, E5, OutDtype::Float32, true), false);
    assert!(msg.contains("the envelope has no bound at workspace 1048576 B"), "{msg}");
}

// ---------------------------------------------------------------------------------------------------------
// §6.6 verified combinations, caveats, warnings

#[test]
fn explicit_contiguous_examples() {
    let k = |kk| key(128, 128, kk, E4, E4, OutDtype::Float32, true);
    // (2, contiguous), K = 6000 on hopper: verified (the H100 table declares ragged K verified), silent.
    let (d, w) = pair("hopper", &k(6000), 2, "contiguous");
    assert_eq!((d.s, d.scheme, d.verified, d.note.as_str()), (2, Scheme::Contiguous, true, "given by the caller"));
    assert!(w.is_empty(), "{w:?}");
    // Same on hopper-te: warns "are experimental".
    let (d, w) = pair("hopper-te", &k(6000), 2, "contiguous");
    assert!(d.verified);
    assert_eq!(w.len(), 1);
    assert_eq!(
        w[0].message,
        "mmaemu split-K S=2 scheme=contiguous (fast accumulation, out float32, e4m3xe4m3, source explicit, profile \
         hopper-te): split-K decisions of profile hopper-te are experimental"
    );
    // On hopper-experimental: unverified, warns "not a multiple of 128".
    let (d, w) = pair("hopper-experimental", &k(6000), 2, "contiguous");
    assert!(!d.verified);
    let caveat = "K = 6000 is not a multiple of 128 (no replayed split call has a ragged last k-tile)";
    assert_eq!(d.note, format!("given by the caller; {caveat}"));
    assert!(w[0].message.ends_with(caveat), "{}", w[0]);
    // (4, contiguous), K = 768 on hopper: an empty split, refused (a million splits of K = 4096 likewise).
    for (s, kk) in [(4, 768), (1_000_000, 4096)] {
        let split = mmaemu_model::SplitK::new(s, Scheme::Contiguous).unwrap();
        let e = profile("hopper").check_split(split, true, kk).unwrap_err();
        assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::InvalidValue));
        assert!(e.message().contains(&format!("S = {s} leaves a split without k-tiles")), "{e}");
    }
    // (32, contiguous) on hopper: never replayed.
    let (d, w) = pair("hopper", &k(1 << 20), 32, "contiguous");
    assert!(!d.verified);
    assert!(w[0]
        .message
        .ends_with("this (fast, S, scheme, out, format pair) combination was never replayed on hardware"));
    // A verified explicit split on an ada profile: silent; an unverified S: warns.
    let (d, w) = pair("ada", &key(64, 64, 4096, E4, E4, OutDtype::Float32, true), 32, "pairwise");
    assert!(d.verified && w.is_empty(), "{d} {w:?}");
    let (d, w) = pair("ada", &key(64, 64, 4096, E4, E5, OutDtype::Float32, true), 32, "pairwise");
    assert!(!d.verified && w.len() == 1, "{d} {w:?}");
}

#[test]
fn large_k_adds_no_warning_to_verified_explicit_contiguous_splits() {
    // The documented exception: on the H100 profiles a K above 262,144 adds no warning.
    for k in [262_272, 1 << 20, 4_194_304, 1 << 24, 50_000_000] {
        for s in [2, 3, 24] {
            for p in ["hopper", "hopper-ws0"] {
                let (d, w) = pair(p, &key(16, 64, k, E4, E4, OutDtype::BFloat16, false), s, "contiguous");
                assert!(d.verified, "{p} K={k} S={s}: {d}");
                assert!(w.is_empty(), "{p} K={k} S={s}: {w:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// §6.4 lookup rules, table info, speed

#[test]
fn lookup_rules() {
    let k = key(1, 2048, 8192, E4, E4, OutDtype::Float32, false);
    assert_eq!(table_lookup(h100(), &k, MIB).map(|r| r.split_s), Some(2));
    assert_eq!(table_lookup(h100(), &k, 2 * MIB), None, "a workspace the table has no rows for");
    let unsplit = key(1, 5760, 1920, E4, E4, OutDtype::Float32, false);
    assert_eq!(table_lookup(h100(), &unsplit, 0).map(|r| r.split_s), Some(1));
    for big in [
        key(1 << 21, 2048, 8192, E4, E4, OutDtype::Float32, false),
        key(1, 1 << 21, 8192, E4, E4, OutDtype::Float32, false),
        key(1, 2048, 1 << 21, E4, E4, OutDtype::Float32, false),
    ] {
        assert_eq!(try_table_lookup(h100(), &big, MIB).unwrap(), None);
    }
    // Shapes beyond 16 bits never alias a stored one.
    let alias = key(1 + 65536, 2048, 8192, E4, E4, OutDtype::Float32, false);
    assert_eq!(table_lookup(h100(), &alias, MIB), None);
    assert_eq!(table_lookup(rtx4060(), &key(16, 48, 8192, E5, E5, OutDtype::BFloat16, false), MIB), None);
}

#[test]
fn table_info_names_the_sources() {
    let r = table_info(rtx4060()).unwrap();
    let rs = &r.source;
    assert_eq!((rs.table_id, rs.file_stem), ("heur_rtx4060_lt12.8.3.14", "rtx4060-cublaslt-12.8.3.14"));
    assert_eq!((rs.rows, rs.split_rows, rs.distinct_shapes), (1_228_448, 125_980, 18_497));
    assert_eq!(rs.parquet_sha256, "ac1ef4ad36acc5b46c4b9f2fcd97da9f3cc7df07abc6774cf7a35dec8e0386fe");
    assert_eq!(rs.workspaces, &[0, 1 << 20, 4 << 20, 32 << 20]);
    assert_eq!((r.envelope, r.verified_combos), ("max_split_MN", 520));
    let h = table_info(h100()).unwrap();
    let hs = &h.source;
    assert_eq!((hs.rows, hs.split_rows, hs.distinct_shapes), (1_767_416, 36_457, 28_018));
    assert_eq!(hs.parquet_sha256, "2dded3c0e8174cc709cccd6030919a81abf107c06ed3df42b4b7ccd29db1f4d4");
    assert_eq!((h.envelope, h.verified_combos), ("k_grid", 444));
    assert_eq!(mmaemu_model::embedded_rows(rtx4060()).unwrap(), 1_228_448);
    assert_eq!(mmaemu_model::embedded_rows(h100()).unwrap(), 1_767_416);
}

#[test]
fn ten_thousand_resolutions_take_well_under_a_second() {
    // Decode both tables first (once per process).
    auto("hopper", &key(16, 5760, 1920, E4, E4, OutDtype::BFloat16, true));
    auto("ada", &key(16, 48, 8192, E4, E4, OutDtype::BFloat16, false));
    let (hopper, ada) = (profile("hopper"), profile("ada"));
    let ms = [1usize, 16, 64, 65, 128, 256, 1024, 4096];
    let ns = [64usize, 2048, 5760, 12288, 3088, 48];
    let ks = [1024usize, 1920, 4096, 8192, 5000, 16384];
    let start = std::time::Instant::now();
    let mut resolved = 0;
    for i in 0..10_000usize {
        let k = key(ms[i % 8], ns[(i / 8) % 6], ks[(i / 48) % 6], E4, E4, OutDtype::ALL[i % 5], i % 2 == 0);
        let p = if i % 3 == 0 { &ada } else { &hopper };
        resolved += resolve_splitk(p, &k, &SplitRequest::Auto, true, false).is_ok() as usize;
    }
    let elapsed = start.elapsed();
    assert!(resolved > 1000);
    assert!(elapsed.as_secs_f64() < 1.0, "10,000 resolutions took {elapsed:?}");
}
