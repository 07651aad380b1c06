//! Split configurations and plans as the contract writes them (docs/reference.md §3.1–§3.4, §6.3): scheme names,
//! the `S,scheme` spelling of the command line (§8), the validation of S and the scheme, and plan layouts.

use mmaemu_model::{Scheme, SplitK};

#[test]
fn schemes_and_splits_are_spelled_as_on_the_command_line() {
    let names = [
        (Scheme::None, "none"),
        (Scheme::Serial, "serial"),
        (Scheme::Pairwise, "pairwise"),
        (Scheme::Contiguous, "contiguous"),
    ];
    for (scheme, name) in names {
        assert_eq!((scheme.name(), scheme.to_string()), (name, name.to_string()));
        assert_eq!(Scheme::from_name(name), Some(scheme));
    }
    for bad in ["", "None", "interleaved", "serial "] {
        assert_eq!(Scheme::from_name(bad), None, "{bad:?}");
    }
    // `--splitk INT|S,scheme`: S = 1 is written "1".
    assert_eq!(SplitK::NONE.to_string(), "1");
    assert_eq!(SplitK::new(1, Scheme::None).unwrap().to_string(), "1");
    assert_eq!(SplitK::new(2, Scheme::Serial).unwrap().to_string(), "2,serial");
    assert_eq!(SplitK::new(3, Scheme::Pairwise).unwrap().to_string(), "3,pairwise");
    assert_eq!(SplitK::new(4, Scheme::Contiguous).unwrap().to_string(), "4,contiguous");
}
