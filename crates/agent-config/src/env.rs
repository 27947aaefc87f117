//! Whole-value environment references: a string value that is exactly `${NAME}` or
//! `${NAME:-default}` is replaced by the variable's value.

use std::fmt;
use std::sync::Arc;

/// Where environment variables come from: the process environment, or a function (tests, or a
/// caller that layers its own variables over the process's).
#[derive(Clone)]
pub(crate) struct Env(Arc<Lookup>);

/// A variable lookup.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Env {
    pub(crate) fn process() -> Self {
        Self(Arc::new(|name| std::env::var(name).ok()))
    }

    pub(crate) fn from_fn(f: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    pub(crate) fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Env(..)")
    }
}

/// Why a reference could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` with `NAME` unset and no default.
    Unset(String),
    /// `${...}` whose inside is not a variable name.
    BadName(String),
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unset(var) => write!(
                f,
                "reads the environment variable `{var}`, which is not set"
            ),
            Self::BadName(text) => write!(
                f,
                "`{text}` is not a valid environment reference (use `${{NAME}}` or \
                 `${{NAME:-default}}` with NAME made of letters, digits and `_`; write `$${{` for \
                 a literal `${{`)"
            ),
        }
    }
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The variable a whole-value reference reads (`${NAME}` or `${NAME:-default}`), if `value` is
/// one.
pub(crate) fn reference_name(value: &str) -> Option<&str> {
    let inner = value.strip_prefix("${")?.strip_suffix('}')?;
    let name = inner.split_once(":-").map_or(inner, |(name, _)| name);
    is_var_name(name).then_some(name)
}

/// Expands `value` if it is a whole-value reference. `Ok(None)`: not a reference, keep it.
///
/// * `${NAME}`: the variable's value (an empty value is used as it is); unset is an error;
/// * `${NAME:-default}`: the value when set and not empty, else `default`;
/// * `$${...}`: the literal text `${...}` (an escape).
pub(crate) fn expand(value: &str, env: &Env) -> Result<Option<String>, ExpandError> {
    if let Some(rest) = value.strip_prefix("$${") {
        if value.ends_with('}') {
            return Ok(Some(format!("${{{rest}")));
        }
        return Ok(None);
    }
    let Some(inner) = value
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
    else {
        return Ok(None);
    };
    let (name, default) = match inner.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (inner, None),
    };
    if !is_var_name(name) {
        return Err(ExpandError::BadName(value.to_owned()));
    }
    match (env.get(name), default) {
        (Some(found), Some(default)) if found.is_empty() => Ok(Some(default.to_owned())),
        (Some(found), _) => Ok(Some(found)),
        (None, Some(default)) => Ok(Some(default.to_owned())),
        (None, None) => Err(ExpandError::Unset(name.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::from_fn(|name| match name {
            "KEY" => Some("sk-1".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        })
    }

    #[test]
    fn whole_values_expand() {
        let env = env();
        assert_eq!(expand("${KEY}", &env), Ok(Some("sk-1".into())));
        assert_eq!(expand("${EMPTY}", &env), Ok(Some(String::new())));
        assert_eq!(expand("${NOPE:-x}", &env), Ok(Some("x".into())));
        assert_eq!(expand("${EMPTY:-x}", &env), Ok(Some("x".into())));
        assert_eq!(expand("${KEY:-x}", &env), Ok(Some("sk-1".into())));
        assert_eq!(expand("${NOPE:-}", &env), Ok(Some(String::new())));
        assert_eq!(
            expand("${NOPE}", &env),
            Err(ExpandError::Unset("NOPE".into()))
        );
    }

    #[test]
    fn other_text_is_left_alone() {
        let env = env();
        for text in [
            "sk-plain",
            "prefix-${KEY}",
            "${KEY}-suffix",
            "$KEY",
            "",
            "${KEY",
        ] {
            assert_eq!(expand(text, &env), Ok(None), "{text}");
        }
        assert_eq!(expand("$${KEY}", &env), Ok(Some("${KEY}".into())));
        assert!(matches!(
            expand("${OPENAI-KEY}", &env),
            Err(ExpandError::BadName(_))
        ));
        assert!(matches!(expand("${}", &env), Err(ExpandError::BadName(_))));
        assert!(matches!(
            expand("${1X}", &env),
            Err(ExpandError::BadName(_))
        ));
        assert_eq!(reference_name("${KEY}"), Some("KEY"));
        assert_eq!(reference_name("${KEY:-x}"), Some("KEY"));
        assert_eq!(reference_name("$${KEY}"), None);
        assert_eq!(reference_name("KEY"), None);
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        fn name() -> impl Strategy<Value = String> {
            "[A-Za-z_][A-Za-z0-9_]{0,15}"
        }

        fn env_with(name: &str, value: Option<&str>) -> Env {
            let (name, value) = (name.to_owned(), value.map(str::to_owned));
            Env::from_fn(move |asked| if asked == name { value.clone() } else { None })
        }

        proptest! {
            #[test]
            fn any_text_expands_without_panicking(value in any::<String>(), set in any::<String>()) {
                let env = Env::from_fn(move |_| Some(set.clone()));
                let _ = expand(&value, &env);
                let _ = reference_name(&value);
            }

            #[test]
            fn a_reference_reads_its_variable(name in name(), value in any::<String>()) {
                let env = env_with(&name, Some(&value));
                prop_assert_eq!(expand(&format!("${{{name}}}"), &env), Ok(Some(value)));
                let reference = format!("${{{name}}}");
                prop_assert_eq!(reference_name(&reference), Some(name.as_str()));
            }

            #[test]
            fn a_default_applies_when_unset_or_empty(name in name(), default in any::<String>(), empty in any::<bool>()) {
                let env = env_with(&name, empty.then_some(""));
                prop_assert_eq!(
                    expand(&format!("${{{name}:-{default}}}"), &env),
                    Ok(Some(default))
                );
            }

            #[test]
            fn an_unset_variable_without_default_is_named(name in name()) {
                let env = env_with(&name, None);
                prop_assert_eq!(
                    expand(&format!("${{{name}}}"), &env),
                    Err(ExpandError::Unset(name))
                );
            }

            #[test]
            fn an_escape_is_the_literal_text(rest in any::<String>()) {
                let env = env_with("X", Some("never"));
                prop_assert_eq!(
                    expand(&format!("$${{{rest}}}"), &env),
                    Ok(Some(format!("${{{rest}}}")))
                );
            }

            #[test]
            fn text_that_is_no_reference_is_kept(value in "[^$].*|") {
                let env = env_with("X", Some("never"));
                prop_assert_eq!(expand(&value, &env), Ok(None));
            }
        }
    }
}
