//! Overrides given on the command line (`-c llm.temperature=0.2`, `--model gpt-4o-mini`): each
//! replaces one key of `config.toml` before the file is validated, so an override is checked
//! exactly as the file is (an unknown key or a mistyped value is an error naming it).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::llm::VISION;

/// One override of a configuration key: a dotted key path and a TOML value.
///
/// Parsed from `KEY=VALUE`: `VALUE` is read as a TOML value (`0.2`, `true`, `"text"`,
/// `["a", "b"]`, `{ server = "..." }`); a value that is not valid TOML is taken as a string, so
/// `llm.model=gpt-4o` needs no quotes.
///
/// ```
/// use agent_config::ConfigOverride;
///
/// let temperature: ConfigOverride = "llm.temperature=0.2".parse()?;
/// assert_eq!(temperature.key(), "llm.temperature");
/// assert_eq!(temperature.value(), &toml::Value::Float(0.2));
/// let model: ConfigOverride = "llm.model = gpt-4o".parse()?;
/// assert_eq!(model.value(), &toml::Value::String("gpt-4o".into()));
/// assert!("no-equals-sign".parse::<ConfigOverride>().is_err());
/// # Ok::<(), agent_config::OverrideSyntaxError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigOverride {
    kind: Kind,
    /// As the user wrote it, for messages.
    text: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// One key.
    Key {
        path: Vec<String>,
        value: toml::Value,
    },
    /// `--model`: `llm.model`, and the model of every `[llm.<name>]` section that sets its own
    /// (except `[llm.vision]`, which names the image model on purpose).
    Model(toml::Value),
}

/// A `KEY=VALUE` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("`{text}` is not an override: {reason} (write KEY=VALUE, e.g. llm.temperature=0.2)")]
pub struct OverrideSyntaxError {
    text: String,
    reason: &'static str,
}

impl ConfigOverride {
    /// The override `--model` makes: the model of `[llm]` and of every `[llm.<name>]` section
    /// that names its own model, except `[llm.vision]`.
    #[must_use]
    pub fn model(model: &str) -> Self {
        Self {
            kind: Kind::Model(toml::Value::String(model.to_owned())),
            text: format!("--model {model}"),
        }
    }

    /// The dotted key (`llm.model` for [`ConfigOverride::model`]).
    #[must_use]
    pub fn key(&self) -> String {
        match &self.kind {
            Kind::Key { path, .. } => path.join("."),
            Kind::Model(_) => "llm.model".to_owned(),
        }
    }

    /// The value.
    #[must_use]
    pub fn value(&self) -> &toml::Value {
        match &self.kind {
            Kind::Key { value, .. } | Kind::Model(value) => value,
        }
    }

    /// Whether an error about `key` (a dotted path) is about this override.
    pub(crate) fn concerns(&self, key: &str) -> bool {
        let own = self.key();
        if key == own || key.starts_with(&format!("{own}.")) || own.starts_with(&format!("{key}."))
        {
            return true;
        }
        // `--model` also sets `llm.<name>.model`.
        matches!(self.kind, Kind::Model(_)) && key.starts_with("llm.") && key.ends_with(".model")
    }

    /// Writes the override into `root` (a parsed `config.toml`).
    pub(crate) fn apply(&self, root: &mut toml::Table) -> Result<(), String> {
        match &self.kind {
            Kind::Key { path, value } => set(root, path, value.clone()),
            Kind::Model(value) => {
                let llm = root
                    .entry("llm")
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                let toml::Value::Table(llm) = llm else {
                    return Err("`llm` is not a table".to_owned());
                };
                for (name, section) in llm.iter_mut() {
                    if let toml::Value::Table(section) = section
                        && !name.eq_ignore_ascii_case(VISION)
                        && section.contains_key("model")
                    {
                        section.insert("model".to_owned(), value.clone());
                    }
                }
                llm.insert("model".to_owned(), value.clone());
                Ok(())
            }
        }
    }
}

fn set(root: &mut toml::Table, path: &[String], value: toml::Value) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("the key is empty".to_owned());
    };
    let mut table = root;
    for (depth, key) in parents.iter().enumerate() {
        let entry = table
            .entry(key.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(inner) = entry else {
            return Err(format!(
                "`{}` is a value, not a table",
                path.get(..=depth).unwrap_or_default().join(".")
            ));
        };
        table = inner;
    }
    table.insert(last.clone(), value);
    Ok(())
}

impl FromStr for ConfigOverride {
    type Err = OverrideSyntaxError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |reason| OverrideSyntaxError {
            text: text.to_owned(),
            reason,
        };
        let (key, value) = text.split_once('=').ok_or_else(|| error("no `=`"))?;
        let path: Vec<String> = key.trim().split('.').map(|k| k.trim().to_owned()).collect();
        if path.iter().any(|k| {
            k.is_empty()
                || !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }) {
            return Err(error(
                "the key must be dotted names of letters, digits, `_` and `-`",
            ));
        }
        Ok(Self {
            kind: Kind::Key {
                path,
                value: parse_value(value.trim()),
            },
            text: text.to_owned(),
        })
    }
}

/// `text` as a TOML value, or as a string when it is not one.
fn parse_value(text: &str) -> toml::Value {
    format!("value = {text}")
        .parse::<toml::Table>()
        .ok()
        .filter(|table| table.len() == 1)
        .and_then(|mut table| table.remove("value"))
        .unwrap_or_else(|| toml::Value::String(text.to_owned()))
}

impl fmt::Display for ConfigOverride {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn values_are_toml_and_fall_back_to_strings() {
        let value = |s: &str| s.parse::<ConfigOverride>().unwrap().value().clone();
        assert_eq!(value("a=3"), toml::Value::Integer(3));
        assert_eq!(value("a=true"), toml::Value::Boolean(true));
        assert_eq!(value("a=\"x y\""), toml::Value::String("x y".into()));
        assert_eq!(value("a=x y"), toml::Value::String("x y".into()));
        assert_eq!(
            value("a=[1, 2]"),
            toml::Value::Array(vec![1.into(), 2.into()])
        );
        // Another key smuggled after a newline is text, not a second key.
        assert_eq!(value("a=1\nb = 2"), toml::Value::String("1\nb = 2".into()));
    }

    #[test]
    fn bad_keys_are_rejected() {
        for text in ["=1", "a..b=1", "a b=1", "no-equals"] {
            assert!(text.parse::<ConfigOverride>().is_err(), "{text}");
        }
    }

    #[test]
    fn apply_creates_tables_and_refuses_to_descend_into_values() {
        let mut root = table("[llm]\nmodel = \"a\"\n");
        "agent.max_steps=5"
            .parse::<ConfigOverride>()
            .unwrap()
            .apply(&mut root)
            .unwrap();
        assert_eq!(root["agent"]["max_steps"], toml::Value::Integer(5));
        let err = "llm.model.x=1"
            .parse::<ConfigOverride>()
            .unwrap()
            .apply(&mut root)
            .unwrap_err();
        assert_eq!(err, "`llm.model` is a value, not a table");
    }

    #[test]
    fn model_sets_every_profile_that_names_one_but_vision() {
        let mut root = table(
            "[llm]\nmodel = \"a\"\n[llm.swe]\nmodel = \"b\"\n[llm.vision]\nmodel = \"v\"\n\
             [llm.manus]\ntemperature = 0.5\n",
        );
        ConfigOverride::model("m").apply(&mut root).unwrap();
        assert_eq!(root["llm"]["model"].as_str(), Some("m"));
        assert_eq!(root["llm"]["swe"]["model"].as_str(), Some("m"));
        assert_eq!(root["llm"]["vision"]["model"].as_str(), Some("v"));
        assert!(root["llm"]["manus"].get("model").is_none());
    }
}
