//! The memory ceiling of what input makes mmaemu allocate (regenerated operands, call tensors, results,
//! benchmark matrices): sizes in checked arithmetic, refused before the allocation. The ceiling is the caller's
//! argument: the environment that sets it (`MMAEMU_MAX_BYTES`) is read at the library's edge (`api/src/env.rs`).

/// The ceiling when `MMAEMU_MAX_BYTES` is not set: 4 GiB, which fits a laptop.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;

/// The name of the environment variable that sets the ceiling, in bytes (the command line's `--max-bytes` too),
/// which a refusal names.
pub const MAX_BYTES_ENV: &str = "MMAEMU_MAX_BYTES";

/// The product of `factors`, or None when it overflows u64.
pub fn product(factors: &[u64]) -> Option<u64> {
    factors.iter().try_fold(1u64, |acc, &x| acc.checked_mul(x))
}

/// The sum of `terms`, or None when it overflows u64.
pub fn sum(terms: &[Option<u64>]) -> Option<u64> {
    terms.iter().try_fold(0u64, |acc, &x| acc.checked_add(x?))
}

/// Ok if `bytes` (None: the size overflows) fits the ceiling `limit`; else the refusal, naming `what`, the
/// ceiling and how to raise it.
pub fn check(what: &str, bytes: Option<u64>, limit: u64) -> Result<(), String> {
    match bytes {
        Some(b) if b <= limit => Ok(()),
        Some(b) => Err(format!(
            "{what} needs {b} bytes, above the limit of {limit} bytes ({MAX_BYTES_ENV} or --max-bytes raises it)"
        )),
        None => Err(format!("{what} has a size that overflows 64 bits")),
    }
}

/// Ok if `bytes` fits [`DEFAULT_MAX_BYTES`], a fixed bound (the model reads no setting) for what the model and the
/// trace build from a call's own sizes (a plan's splits and chunks, one element's trace); else the refusal, naming
/// `what` and the bound.
pub fn check_fixed(what: &str, bytes: Option<u64>) -> Result<(), String> {
    match bytes {
        Some(b) if b <= DEFAULT_MAX_BYTES => Ok(()),
        Some(b) => Err(format!("{what} needs {b} bytes, above the {DEFAULT_MAX_BYTES} bytes it may take")),
        None => Err(format!("{what} has a size that overflows 64 bits")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_and_ceiling() {
        assert_eq!(product(&[1 << 32, 1 << 32]), None);
        assert_eq!(product(&[3, 4]), Some(12));
        assert_eq!(sum(&[Some(u64::MAX), Some(1)]), None);
        assert!(check("x", Some(DEFAULT_MAX_BYTES), DEFAULT_MAX_BYTES).is_ok());
        assert!(check("x", Some(11), 10).is_err());
        let e = check("operands", Some(u64::MAX), DEFAULT_MAX_BYTES).unwrap_err();
        assert!(e.contains("above the limit") && e.contains(MAX_BYTES_ENV), "{e}");
        assert!(check("operands", None, u64::MAX).unwrap_err().contains("overflows"));
    }
}
