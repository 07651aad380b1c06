//! The catalogue as a value (docs/reference.md §2.1, §6.1): the built-in preset documents read by the lab's reader,
//! aliases and refused names as their data, platforms added to a copy (never to a registry), and the clashes refused.

use mmaemu_model::catalogue::builtin_presets;
use mmaemu_model::{Catalogue, Category, Maturity, Platform, Preset, Scheme};

const LAB: &str = r#"
format = "mmaemu-platform/1"
name = "lab-gpu"
description = "a lab's GPU"

[gpu]
capability = [9, 0]

[preset]
format = "mmaemu-preset/1"
name = "lab_preset"
nfma = 16
frac = 24
frac_out = 23
rounding = "nearest_even"
min_exp = -133
c_entry = "late"
slow_chunk = 256

[splitk]
schemes = ["interleaved64/pairwise/restart3"]

[[profile]]
name = "lab-profile"
caller = "torch._scaled_mm"
description = "a lab's profile"
"#;

fn lab(text: &str) -> Platform {
    Platform::from_manifest(text, "lab", false, |_| unreachable!("no table")).unwrap()
}

#[test]
fn the_built_in_presets_are_their_documents() {
    let docs = builtin_presets();
    assert_eq!(docs.len(), 5);
    for b in docs {
        // Each document is a lab's document plus its [builtin] table: the same reader gives the same arithmetic.
        let text = std::fs::read_to_string(format!(
            "{}/../datasets/presets/{}.toml",
            env!("CARGO_MANIFEST_DIR"),
            b.preset.name()
        ))
        .unwrap();
        let lab_view: String = text.split("\n[builtin]").next().unwrap().to_string();
        let read = Preset::from_document(&lab_view).unwrap();
        assert!(read.spec().same_arithmetic(b.preset.spec()), "{}", b.preset.name());
        assert_eq!(read, b.preset, "{}: the built-in name and arithmetic are that built-in preset", b.preset.name());
        assert!(b.preset.is_builtin() && !b.evidence.is_empty());
        // A lab cannot declare maturity: the whole built-in document is refused as a lab's.
        let e = Preset::from_document(&text).unwrap_err();
        assert!(e.message().contains("never declared"), "{e}");
    }
    let aliases: Vec<(&str, &str)> =
        docs.iter().flat_map(|b| b.aliases.iter().map(move |a| (a.as_str(), b.preset.name()))).collect();
    assert_eq!(aliases, [("blackwell", "b200_mma_sync")]);
    assert_eq!(Preset::builtin("blackwell"), Some(Preset::b200_mma_sync()));
    assert_eq!(Preset::builtin("Blackwell"), None);
}

#[test]
fn a_platform_joins_a_copy_of_the_catalogue() {
    let builtin = Catalogue::builtin();
    let lab = lab(LAB);
    let c = builtin.with(lab.clone()).unwrap();
    // The built-in catalogue is unchanged: no registry.
    assert!(builtin.profile("lab-profile").is_err() && builtin.preset("lab_preset").is_err());
    assert_eq!(builtin.loaded().count(), 0);
    let p = c.profile("lab-profile").unwrap();
    assert_eq!((p.preset.maturity(), p.maturity), (Maturity::Custom, Maturity::Experimental));
    assert_eq!(c.preset("lab_preset").unwrap(), p.preset);
    assert_eq!(p.schemes, [Scheme::from_name("interleaved64/pairwise/restart3").unwrap()]);
    assert_eq!(c.schemes(&p.preset), p.schemes);
    assert_eq!(c.loaded().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["lab-gpu"]);
    // The same platform twice is harmless; another with the same profile name or preset name clashes.
    assert_eq!(c.with(lab).unwrap(), c);
    let e = c.with(self::lab(&LAB.replace("name = \"lab-gpu\"", "name = \"lab-gpu-2\""))).unwrap_err();
    assert_eq!(e.category(), Category::Data);
    assert!(e.message().contains("profile 'lab-profile' clashes"), "{e}");
    let other = LAB.replace("lab-profile", "lab-profile-2").replace("frac = 24", "frac = 25");
    let e = c.with(self::lab(&other)).unwrap_err();
    assert!(e.message().contains("preset 'lab_preset' clashes"), "{e}");
    // A preset no platform holds may take any documented scheme.
    let free = Preset::from_document(
        &LAB[LAB.find("format = \"mmaemu-preset/1\"").unwrap()..LAB.find("[splitk]").unwrap()]
            .replace("lab_preset", "free"),
    )
    .unwrap();
    assert_eq!(c.schemes(&free), [Scheme::Serial, Scheme::Pairwise, Scheme::Contiguous]);
}

#[test]
fn unknown_names_list_the_catalogue() {
    let c = Catalogue::builtin();
    let e = c.profile("h100").unwrap_err();
    assert!(e.message().starts_with("unknown profile 'h100'; known: ada, ada-te"), "{e}");
    assert!(e.message().contains("docs/bring-up.md"), "{e}");
    let e = c.preset("sm120").unwrap_err();
    assert!(e.message().starts_with("unknown preset 'sm120': sm_120 GPUs (RTX 50 series)"), "{e}");
    let manifest =
        LAB.replace("[splitk]\nschemes = [\"interleaved64/pairwise/restart3\"]\n", "[splitk]\nschemes = [\"none\"]\n");
    let e = Platform::from_manifest(&manifest, "lab", false, |_| unreachable!()).unwrap_err();
    assert!(e.message().contains("\"none\" is not a split scheme or rule"), "{e}");
}
