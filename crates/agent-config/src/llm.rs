//! `[llm]` and its named `[llm.<name>]` sections.
//!
//! As in OpenManus, `[llm]` is the default model and every sub-table is a named profile built
//! as the default's keys overlaid, key by key, with the sub-table's. Unlike OpenManus, the
//! profiles are really used: [`crate::Config::llm_for`] picks the profile by agent name and
//! [`crate::Config::vision_llm`] the `vision` one.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crate::llm_settings::{LlmSettings, VISION};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::document::Document;
use crate::error::ConfigError;

/// The default LLM and the named profiles, names lower-cased.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LlmProfiles {
    pub(crate) default: LlmSettings,
    pub(crate) named: BTreeMap<String, LlmSettings>,
    /// The keys each named section sets itself (the rest it inherits from `[llm]`).
    pub(crate) own_keys: BTreeMap<String, BTreeSet<String>>,
    /// Each named section's name as written in the file.
    pub(crate) spelled: BTreeMap<String, String>,
}

const REQUIRED: [&str; 2] = ["model", "base_url"];

/// Builds the profiles from the `[llm]` entry of `doc` (`None`: the document has no `[llm]`).
pub(crate) fn build(
    doc: &Document<'_>,
    entry: Option<(Range<usize>, Spanned<DeValue<'_>>)>,
) -> Result<LlmProfiles, ConfigError> {
    let missing = |line: Option<usize>, key: &str| ConfigError::MissingKey {
        path: doc.path.to_owned(),
        line,
        section: "llm".into(),
        key: key.into(),
    };
    let Some((key_span, value)) = entry else {
        return Err(missing(None, REQUIRED[0]));
    };
    let header_line = doc.line_of(key_span.start);
    let table_span = value.span();
    let DeValue::Table(llm) = value.into_inner() else {
        return Err(doc.invalid_at(key_span, "llm", "expected a table ([llm])"));
    };

    // Keys holding tables are named profiles; the rest is the default model.
    let mut base = DeTable::new();
    let mut sections = Vec::new();
    for (key, value) in llm {
        if matches!(value.get_ref(), DeValue::Table(_)) {
            sections.push((key, value));
        } else {
            base.insert(key, value);
        }
    }
    for key in REQUIRED {
        if !base.contains_key(key) {
            return Err(missing(header_line, key));
        }
    }
    lowercase_api_type(&mut base);
    let default: LlmSettings = doc.deserialize_table(base.clone(), table_span, "llm")?;

    let mut named = BTreeMap::new();
    let mut own_keys = BTreeMap::new();
    let mut spelled = BTreeMap::new();
    for (key, value) in sections {
        let name = key.get_ref().to_lowercase();
        let section_key = format!("llm.{}", key.get_ref());
        let span = value.span();
        let DeValue::Table(overrides) = value.into_inner() else {
            continue;
        };
        if named.contains_key(&name) {
            return Err(doc.invalid_at(
                key.span(),
                &section_key,
                &format!(
                    "a second [llm.*] section named `{name}` (names are matched \
                     case-insensitively)"
                ),
            ));
        }
        let sets_images = overrides.contains_key("supports_images");
        own_keys.insert(
            name.clone(),
            overrides.keys().map(|k| k.get_ref().to_string()).collect(),
        );
        spelled.insert(name.clone(), key.get_ref().to_string());
        let mut overrides = overrides;
        lowercase_api_type(&mut overrides);
        let mut merged = base.clone();
        for (k, v) in overrides {
            merged.remove(k.get_ref().as_ref());
            merged.insert(k, v);
        }
        let mut settings: LlmSettings = doc.deserialize_table(merged, span, &section_key)?;
        if name == VISION && !sets_images {
            // The section exists to describe the image model: take it at its word.
            settings.supports_images = Some(true);
        }
        named.insert(name, settings);
    }
    Ok(LlmProfiles {
        default,
        named,
        own_keys,
        spelled,
    })
}

/// `api_type = "Azure"` means `azure` (OpenManus compares the exact string and would treat
/// `"Azure"` as OpenAI-compatible, silently).
fn lowercase_api_type(table: &mut DeTable<'_>) {
    if let Some(value) = table.get_mut("api_type")
        && let DeValue::String(s) = value.get_mut()
        && s.chars().any(|c| c.is_ascii_uppercase())
    {
        *s = std::borrow::Cow::Owned(s.to_ascii_lowercase());
    }
}

impl LlmProfiles {
    /// Where the value of `field` in profile `name` is written: `llm.<Section>.<field>` when the
    /// section sets it, else `llm.<field>`.
    pub(crate) fn key_path(&self, name: &str, field: &str) -> String {
        let name = name.to_lowercase();
        match (self.own_keys.get(&name), self.spelled.get(&name)) {
            (Some(keys), Some(section)) if keys.contains(field) => {
                format!("llm.{section}.{field}")
            }
            _ => format!("llm.{field}"),
        }
    }

    pub(crate) fn get(&self, name: &str) -> &LlmSettings {
        self.named
            .get(&name.to_lowercase())
            .or_else(|| self.named.get("default"))
            .unwrap_or(&self.default)
    }
}
