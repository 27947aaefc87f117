//! Parsing of the `[sandbox]` limits.

use crate::SandboxError;

/// Parses a Docker-style memory size: a number with an optional unit `b`, `k`, `m`, `g` or `t`
/// (powers of 1024, case-insensitive, an optional trailing `b` as in `512mb`).
///
/// # Errors
/// [`SandboxError::InvalidSetting`] when the text is not such a size or is zero.
///
/// ```
/// assert_eq!(agent_sandbox::parse_memory_limit("512m").unwrap(), 512 * 1024 * 1024);
/// assert_eq!(agent_sandbox::parse_memory_limit("2G").unwrap(), 2 * 1024 * 1024 * 1024);
/// assert!(agent_sandbox::parse_memory_limit("lots").is_err());
/// ```
pub fn parse_memory_limit(text: &str) -> Result<u64, SandboxError> {
    let bad = || {
        SandboxError::InvalidSetting(format!("memory_limit {text:?} is not a size like \"512m\""))
    };
    let lower = text.trim().to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (number, unit) = lower.split_at(digits_end);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let unit = unit.trim();
    let unit = if unit.len() == 2 {
        unit.strip_suffix('b').ok_or_else(bad)?
    } else {
        unit
    };
    let shift = match unit {
        "" | "b" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(bad()),
    };
    let bytes = number
        .checked_shl(shift)
        .filter(|b| b >> shift == number)
        .ok_or_else(bad)?;
    if bytes == 0 {
        return Err(bad());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_memory_limit;

    #[test]
    fn sizes() {
        assert_eq!(parse_memory_limit("1024").ok(), Some(1024));
        assert_eq!(parse_memory_limit("1k").ok(), Some(1024));
        assert_eq!(parse_memory_limit("512mb").ok(), Some(512 << 20));
        assert_eq!(parse_memory_limit(" 1T ").ok(), Some(1 << 40));
        for bad in [
            "",
            "m",
            "0",
            "1x",
            "1.5g",
            "-1m",
            "99999999999999999999t",
            "1kbb",
        ] {
            assert!(parse_memory_limit(bad).is_err(), "{bad}");
        }
    }
}
