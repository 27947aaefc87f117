//! Overrides given on the command line (`-c llm.temperature=0.2`, `--model gpt-4o-mini`): each
//! replaces one key of the parsed `config.toml` before the file is validated, so an override is
//! checked exactly as the file is (an unknown key or a mistyped value is an error naming it).
//! The file is parsed once: the overrides are written into its parsed tree, never into its text.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use thiserror::Error;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::llm_settings::VISION;

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
    /// The value, for [`ConfigOverride::value`].
    value: toml::Value,
    /// The value as it is written into the parsed file.
    written: Written,
    /// As the user wrote it, for messages.
    text: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// One key.
    Key(Vec<String>),
    /// `--model`: `llm.model`, and the model of every `[llm.<name>]` section that sets its own
    /// (except `[llm.vision]`, which names the image model on purpose).
    Model,
}

/// The value of an override in the form the parsed file's tree holds.
#[derive(Debug, Clone, PartialEq)]
enum Written {
    /// A TOML value, kept as the one-key document `value = VALUE` it was read from.
    Toml(String),
    /// Not TOML: this text is the string.
    Text(String),
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
            kind: Kind::Model,
            value: toml::Value::String(model.to_owned()),
            written: Written::Text(model.to_owned()),
            text: format!("--model {model}"),
        }
    }

    /// The override `--sandbox MODE` makes: `permissions.sandbox = "MODE"`.
    #[must_use]
    pub fn sandbox(mode: crate::SandboxMode) -> Self {
        Self::word(&["permissions", "sandbox"], mode.as_str(), "--sandbox")
    }

    /// The override `--ask-for-approval POLICY` makes: `permissions.approval = "POLICY"`.
    #[must_use]
    pub fn approval(policy: crate::ApprovalPolicy) -> Self {
        Self::word(
            &["permissions", "approval"],
            policy.as_str(),
            "--ask-for-approval",
        )
    }

    /// The override a flag of the command line makes: the key at `path` set to the string
    /// `word`, shown as `flag word`.
    fn word(path: &[&str], word: &str, flag: &str) -> Self {
        Self {
            kind: Kind::Key(path.iter().map(|part| (*part).to_owned()).collect()),
            value: toml::Value::String(word.to_owned()),
            written: Written::Text(word.to_owned()),
            text: format!("{flag} {word}"),
        }
    }

    /// The dotted key (`llm.model` for [`ConfigOverride::model`]).
    #[must_use]
    pub fn key(&self) -> String {
        match &self.kind {
            Kind::Key(path) => path.join("."),
            Kind::Model => "llm.model".to_owned(),
        }
    }

    /// The value.
    #[must_use]
    pub fn value(&self) -> &toml::Value {
        &self.value
    }

    /// Whether an error about `key` (a dotted path) is about this override.
    pub(crate) fn concerns(&self, key: &str) -> bool {
        let own = self.key();
        if key == own || key.starts_with(&format!("{own}.")) || own.starts_with(&format!("{key}."))
        {
            return true;
        }
        // `--model` also sets `llm.<name>.model`.
        matches!(self.kind, Kind::Model) && key.starts_with("llm.") && key.ends_with(".model")
    }

    /// Writes the override into `root`, the parsed `config.toml`. Every key and value it adds
    /// (and every table it creates on the way) is placed at `span`, which lies outside the file's
    /// text, so that an error found later at `span` is known to be this override's.
    pub(crate) fn apply<'a>(
        &'a self,
        root: &mut DeTable<'a>,
        span: &Range<usize>,
    ) -> Result<(), String> {
        let value = self.parsed_value(span)?;
        match &self.kind {
            Kind::Key(path) => set(root, path, value, span),
            Kind::Model => {
                let llm = root
                    .entry(key_at(span, "llm"))
                    .or_insert_with(|| Spanned::new(span.clone(), DeValue::Table(DeTable::new())));
                let DeValue::Table(llm) = llm.get_mut() else {
                    return Err("`llm` is not a table".to_owned());
                };
                for (name, section) in llm.iter_mut() {
                    if let DeValue::Table(section) = section.get_mut()
                        && !name.get_ref().eq_ignore_ascii_case(VISION)
                        && section.contains_key("model")
                    {
                        section.insert(key_at(span, "model"), value.clone());
                    }
                }
                llm.insert(key_at(span, "model"), value);
                Ok(())
            }
        }
    }

    /// The value as a node of the parsed file, at `span`.
    fn parsed_value(&self, span: &Range<usize>) -> Result<Spanned<DeValue<'_>>, String> {
        match &self.written {
            Written::Text(text) => Ok(Spanned::new(
                span.clone(),
                DeValue::String(Cow::Borrowed(text)),
            )),
            // `from_str` read this very text as a TOML value; it reads the same way again.
            Written::Toml(document) => DeTable::parse(document)
                .ok()
                .and_then(|table| table.into_inner().remove("value"))
                .map(|value| placed(value.into_inner(), span))
                .ok_or_else(|| "the value is not a TOML value".to_owned()),
        }
    }
}

/// A key of the parsed file, at `span`.
fn key_at<'a>(span: &Range<usize>, key: &'a str) -> Spanned<Cow<'a, str>> {
    Spanned::new(span.clone(), Cow::Borrowed(key))
}

/// `value`, and everything inside it, placed at `span`.
fn placed<'a>(value: DeValue<'a>, span: &Range<usize>) -> Spanned<DeValue<'a>> {
    let value = match value {
        DeValue::Array(mut items) => {
            for item in items.iter_mut() {
                let inner = std::mem::replace(item.get_mut(), DeValue::Boolean(false));
                *item = placed(inner, span);
            }
            DeValue::Array(items)
        }
        DeValue::Table(table) => DeValue::Table(
            table
                .into_iter()
                .map(|(key, value)| {
                    (
                        Spanned::new(span.clone(), key.into_inner()),
                        placed(value.into_inner(), span),
                    )
                })
                .collect(),
        ),
        other => other,
    };
    Spanned::new(span.clone(), value)
}

fn set<'a>(
    root: &mut DeTable<'a>,
    path: &'a [String],
    value: Spanned<DeValue<'a>>,
    span: &Range<usize>,
) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("the key is empty".to_owned());
    };
    let mut table = root;
    for (depth, key) in parents.iter().enumerate() {
        let entry = table
            .entry(key_at(span, key))
            .or_insert_with(|| Spanned::new(span.clone(), DeValue::Table(DeTable::new())));
        let DeValue::Table(inner) = entry.get_mut() else {
            return Err(format!(
                "`{}` is a value, not a table",
                path.get(..=depth).unwrap_or_default().join(".")
            ));
        };
        table = inner;
    }
    table.insert(key_at(span, last), value);
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
        let (value, written) = parse_value(value.trim());
        Ok(Self {
            kind: Kind::Key(path),
            value,
            written,
            text: text.to_owned(),
        })
    }
}

/// `text` as a TOML value, or as a string when it is not one.
fn parse_value(text: &str) -> (toml::Value, Written) {
    let document = format!("value = {text}");
    match document
        .parse::<toml::Table>()
        .ok()
        .filter(|table| table.len() == 1)
        .and_then(|mut table| table.remove("value"))
    {
        Some(value) => (value, Written::Toml(document)),
        None => (
            toml::Value::String(text.to_owned()),
            Written::Text(text.to_owned()),
        ),
    }
}

impl fmt::Display for ConfigOverride {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use serde::Deserialize as _;

    use super::*;

    /// Where the tests place the overrides: past the end of any text they use.
    const AT: Range<usize> = 1000..1001;

    fn over(text: &str) -> ConfigOverride {
        text.parse().unwrap()
    }

    /// `text` parsed, with `overrides` applied in order, as a plain table.
    fn applied(text: &str, overrides: &[ConfigOverride]) -> Result<toml::Table, String> {
        let mut root = DeTable::parse(text).unwrap().into_inner();
        for over in overrides {
            over.apply(&mut root, &AT)?;
        }
        let whole = Spanned::new(0..text.len(), root);
        Ok(toml::Table::deserialize(toml::de::Deserializer::from(whole)).unwrap())
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
    fn the_parsed_value_is_the_value() {
        for text in [
            "a=3",
            "a=-0.5",
            "a=true",
            "a=\"x y\"",
            "a=x y",
            "a=1\nb = 2",
            "a=[1, \"two\", [3.5]]",
            "a={ b = 1, c = { d = \"e\" } }",
            "a=1979-05-27T07:32:00Z",
        ] {
            let over = over(text);
            let table = applied("", std::slice::from_ref(&over)).unwrap();
            assert_eq!(&table["a"], over.value(), "{text}");
        }
    }

    #[test]
    fn bad_keys_are_rejected() {
        for text in ["=1", "a..b=1", "a b=1", "no-equals"] {
            assert!(text.parse::<ConfigOverride>().is_err(), "{text}");
        }
    }

    #[test]
    fn apply_creates_tables_and_refuses_to_descend_into_values() {
        let root = applied("[llm]\nmodel = \"a\"\n", &[over("agent.max_steps=5")]).unwrap();
        assert_eq!(root["agent"]["max_steps"], toml::Value::Integer(5));
        assert_eq!(root["llm"]["model"].as_str(), Some("a"));
        let err = applied("[llm]\nmodel = \"a\"\n", &[over("llm.model.x=1")]).unwrap_err();
        assert_eq!(err, "`llm.model` is a value, not a table");
    }

    #[test]
    fn later_overrides_replace_earlier_ones_and_keep_the_rest_of_a_table() {
        let root = applied(
            "[browser]\nheadless = true\n[browser.proxy]\nserver = \"p\"\n",
            &[
                over("browser.proxy.username=u"),
                over("browser.headless=false"),
                over("browser.headless=true"),
            ],
        )
        .unwrap();
        assert_eq!(root["browser"]["headless"].as_bool(), Some(true));
        assert_eq!(root["browser"]["proxy"]["server"].as_str(), Some("p"));
        assert_eq!(root["browser"]["proxy"]["username"].as_str(), Some("u"));
    }

    #[test]
    fn everything_an_override_adds_is_placed_at_its_span() {
        let text = "[llm]\nmodel = \"a\"\n";
        let over = over("search.base_urls={ bing = \"http://b\" }");
        let mut root = DeTable::parse(text).unwrap().into_inner();
        over.apply(&mut root, &AT).unwrap();
        let (key, search) = root.get_key_value("search").unwrap();
        assert_eq!((key.span(), search.span()), (AT, AT));
        let DeValue::Table(search) = search.get_ref() else {
            panic!("not a table")
        };
        let (key, urls) = search.get_key_value("base_urls").unwrap();
        assert_eq!((key.span(), urls.span()), (AT, AT));
        let DeValue::Table(urls) = urls.get_ref() else {
            panic!("not a table")
        };
        let (key, bing) = urls.get_key_value("bing").unwrap();
        assert_eq!((key.span(), bing.span()), (AT, AT));
        // The file's own keys keep their places.
        assert!(root.get("llm").unwrap().span().end <= text.len());
    }

    #[test]
    fn model_sets_every_profile_that_names_one_but_vision() {
        let root = applied(
            "[llm]\nmodel = \"a\"\n[llm.swe]\nmodel = \"b\"\n[llm.vision]\nmodel = \"v\"\n\
             [llm.manus]\ntemperature = 0.5\n",
            &[ConfigOverride::model("m")],
        )
        .unwrap();
        assert_eq!(root["llm"]["model"].as_str(), Some("m"));
        assert_eq!(root["llm"]["swe"]["model"].as_str(), Some("m"));
        assert_eq!(root["llm"]["vision"]["model"].as_str(), Some("v"));
        assert!(root["llm"]["manus"].get("model").is_none());
    }
}
