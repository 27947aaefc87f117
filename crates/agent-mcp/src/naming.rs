//! Tool names: `mcp_{server_id}_{tool}`, sanitised as OpenManus does (spec §8.1), and made unique.

use std::collections::HashSet;

/// The longest tool name OpenAI-compatible providers accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// OpenManus's `_sanitize_tool_name`: every character outside `[a-zA-Z0-9_-]` becomes `_`, runs of
/// `_` collapse to one, leading and trailing `_` are stripped, and the result is cut to 64
/// characters (after the strip, so a cut name may end with `_`).
///
/// ```
/// assert_eq!(agent_mcp::sanitize_tool_name("mcp_/usr/bin/python3_bash"), "mcp_usr_bin_python3_bash");
/// assert_eq!(agent_mcp::sanitize_tool_name("mcp_everything_get-sum"), "mcp_everything_get-sum");
/// ```
#[must_use]
pub fn sanitize_tool_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_matches('_');
    trimmed.chars().take(MAX_TOOL_NAME_LEN).collect()
}

/// The agent-facing name of `tool` on server `server_id`: `mcp_{server_id}_{tool}` sanitised.
#[must_use]
pub fn mcp_tool_name(server_id: &str, tool: &str) -> String {
    sanitize_tool_name(&format!("mcp_{server_id}_{tool}"))
}

/// Makes `candidate` unique among `taken` (and records it): an unused name is kept; otherwise a
/// suffix `_2`, `_3`, ... replaces the end of the name so it stays within 64 characters. Fixes
/// OpenManus's silent overwrite when truncation makes two names collide (§13 W22).
pub fn unique_name(candidate: String, taken: &mut HashSet<String>) -> String {
    if taken.insert(candidate.clone()) {
        return candidate;
    }
    for n in 2u32.. {
        let suffix = format!("_{n}");
        let keep = MAX_TOOL_NAME_LEN.saturating_sub(suffix.len());
        let base: String = candidate.chars().take(keep).collect();
        let name = format!("{base}{suffix}");
        if taken.insert(name.clone()) {
            return name;
        }
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitises_like_openmanus() {
        assert_eq!(
            mcp_tool_name("http://127.0.0.1:8000/sse", "echo"),
            "mcp_http_127_0_0_1_8000_sse_echo"
        );
        assert_eq!(sanitize_tool_name("__a..b__"), "a_b");
        let long = mcp_tool_name(&"x".repeat(100), "tool");
        assert_eq!(long.len(), 64);
    }

    #[test]
    fn collisions_get_suffixes_within_64_chars() {
        let mut taken = HashSet::new();
        let id = "s".repeat(70);
        let a = unique_name(mcp_tool_name(&id, "alpha"), &mut taken);
        let b = unique_name(mcp_tool_name(&id, "beta"), &mut taken);
        let c = unique_name(mcp_tool_name(&id, "gamma"), &mut taken);
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(b.ends_with("_2") && b.len() == 64, "{b}");
        assert!(c.ends_with("_3") && c.len() == 64, "{c}");
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn names_are_valid_for_every_provider(server in any::<String>(), tool in any::<String>()) {
                let name = mcp_tool_name(&server, &tool);
                prop_assert!(name.len() <= MAX_TOOL_NAME_LEN, "{name}");
                prop_assert!(
                    name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                    "{name}"
                );
                prop_assert!(!name.contains("__"), "{name}");
                prop_assert!(!name.starts_with('_'), "{name}");
                prop_assert!(name.starts_with("mcp"), "{name}");
            }

            #[test]
            fn clean_names_are_kept_as_they_are(server in "[a-z0-9]{1,10}", tool in "[a-zA-Z0-9-]{1,20}") {
                prop_assert_eq!(mcp_tool_name(&server, &tool), format!("mcp_{server}_{tool}"));
            }

            #[test]
            fn unique_names_stay_unique_and_short(names in proptest::collection::vec("[a-z_]{0,70}", 0..40)) {
                let mut taken = HashSet::new();
                let mut given = HashSet::new();
                for candidate in names {
                    let name = unique_name(sanitize_tool_name(&candidate), &mut taken);
                    prop_assert!(name.chars().count() <= MAX_TOOL_NAME_LEN, "{name}");
                    prop_assert!(given.insert(name.clone()), "{name} given twice");
                }
            }
        }
    }
}
