//! The parsed `config.toml` with the source spans of every key and value, so that errors from
//! any later step can name the line, column and key. The command line's overrides are written
//! into this parsed tree (never into the text), each at a span of its own past the end of the
//! text, so the file is parsed once and an error in an override's value names the override's key.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::env::{Env, ExpandError, expand, reference_name};
use crate::error::{ConfigError, line_col, without_value};
use crate::overrides::ConfigOverride;

/// A parsed document: its text (for positions), its file (for messages) and its root table.
pub(crate) struct Document<'i> {
    pub(crate) text: &'i str,
    pub(crate) path: &'i Path,
    root: DeTable<'i>,
    /// The original tree, kept for mapping error spans back to key paths.
    original: DeTable<'i>,
    root_span: Range<usize>,
    /// `(key path, variable)` for every value read from the environment.
    pub(crate) env_refs: Vec<(String, String)>,
}

impl<'i> Document<'i> {
    /// Parses `text`, writes `overrides` into it in order, and expands every whole-value
    /// `${VAR}` reference in the result.
    pub(crate) fn parse(
        text: &'i str,
        path: &'i Path,
        env: &Env,
        overrides: &'i [ConfigOverride],
    ) -> Result<Self, ConfigError> {
        let parsed = DeTable::parse(text).map_err(|e| {
            let (line, column) = line_col(text, e.span().map_or(0, |s| s.start));
            ConfigError::Syntax {
                path: path.to_owned(),
                line,
                column,
                message: e.message().trim().to_owned(),
            }
        })?;
        let root_span = parsed.span();
        let mut original = parsed.into_inner();
        for (index, over) in overrides.iter().enumerate() {
            over.apply(&mut original, &override_span(text, index))
                .map_err(|message| ConfigError::Override {
                    text: over.to_string(),
                    message,
                })?;
        }
        let mut root = original.clone();
        let mut env_refs = Vec::new();
        let expanded = expand_table(&mut root, &mut Vec::new(), env, &mut env_refs);
        let doc = Self {
            text,
            path,
            root,
            original,
            root_span,
            env_refs,
        };
        match expanded {
            Ok(()) => Ok(doc),
            Err((key, span, error)) => Err(doc.expand_error(&key, span, error)),
        }
    }

    /// Whether the document sets the key at `path` (before anything was taken out of it).
    pub(crate) fn has(&self, path: &[&str]) -> bool {
        let mut table = &self.original;
        let Some((last, parents)) = path.split_last() else {
            return false;
        };
        for key in parents {
            match table.get(*key).map(Spanned::get_ref) {
                Some(DeValue::Table(inner)) => table = inner,
                _ => return false,
            }
        }
        table.contains_key(*last)
    }

    /// Removes and returns a top-level entry (with its key's span).
    pub(crate) fn take(&mut self, key: &str) -> Option<(Range<usize>, Spanned<DeValue<'i>>)> {
        self.root.remove_entry(key).map(|(k, v)| (k.span(), v))
    }

    /// Deserializes what is left of the root table into `T`.
    pub(crate) fn deserialize_rest<T: Deserialize<'i>>(&mut self) -> Result<T, ConfigError> {
        let root = std::mem::take(&mut self.root);
        self.deserialize_table(root, self.root_span.clone(), "")
    }

    /// Deserializes `table` (spans from this document) into `T`; errors without a span are
    /// placed at `span` and named `fallback_key`.
    pub(crate) fn deserialize_table<T: Deserialize<'i>>(
        &self,
        table: DeTable<'i>,
        span: Range<usize>,
        fallback_key: &str,
    ) -> Result<T, ConfigError> {
        let deserializer = toml::de::Deserializer::from(Spanned::new(span.clone(), table));
        T::deserialize(deserializer).map_err(|e| {
            let at = e.span().unwrap_or(span);
            self.invalid_at(at, fallback_key, &without_value(e.message().trim()))
        })
    }

    /// An [`ConfigError::Invalid`] at `span`, naming the deepest key whose key or value covers
    /// it (or `fallback_key`).
    pub(crate) fn invalid_at(
        &self,
        span: Range<usize>,
        fallback_key: &str,
        message: &str,
    ) -> ConfigError {
        let (line, column) = line_col(self.text, span.start);
        let mut key = Vec::new();
        key_path_at(&self.original, span.start, &mut Vec::new(), &mut key);
        let key = if key.is_empty() {
            fallback_key.to_owned()
        } else {
            key.join(".")
        };
        ConfigError::Invalid {
            path: self.path.to_owned(),
            line,
            column,
            key,
            message: message.to_owned(),
        }
    }

    /// The 1-based line of a byte offset; `None` for an offset past the text (a key an
    /// override added).
    pub(crate) fn line_of(&self, offset: usize) -> Option<usize> {
        (offset <= self.text.len()).then(|| line_col(self.text, offset).0)
    }

    fn expand_error(&self, key: &str, span: Range<usize>, error: ExpandError) -> ConfigError {
        match error {
            ExpandError::Unset(var) => {
                let (line, column) = line_col(self.text, span.start);
                ConfigError::EnvVar {
                    path: self.path.to_owned(),
                    line,
                    column,
                    key: key.to_owned(),
                    var,
                }
            }
            bad @ ExpandError::BadName(_) => self.invalid_at(span, key, &bad.to_string()),
        }
    }
}

/// Where the `index`-th override's keys and values are placed: one byte of its own past the end
/// of `text`, so no span of the file covers it.
fn override_span(text: &str, index: usize) -> Range<usize> {
    let start = text.len() + 1 + index;
    start..start + 1
}

type ExpandFailure = (String, Range<usize>, ExpandError);

fn expand_value(
    value: &mut Spanned<DeValue<'_>>,
    path: &mut Vec<String>,
    env: &Env,
    refs: &mut Vec<(String, String)>,
) -> Result<(), ExpandFailure> {
    let span = value.span();
    match value.get_mut() {
        DeValue::String(s) => match expand(s, env) {
            Ok(Some(expanded)) => {
                if let Some(var) = reference_name(s) {
                    refs.push((path.join("."), var.to_owned()));
                }
                *s = Cow::Owned(expanded);
            }
            Ok(None) => {}
            Err(e) => return Err((path.join("."), span, e)),
        },
        DeValue::Table(table) => expand_table(table, path, env, refs)?,
        DeValue::Array(items) => {
            for item in items.iter_mut() {
                expand_value(item, path, env, refs)?;
            }
        }
        DeValue::Integer(_) | DeValue::Float(_) | DeValue::Boolean(_) | DeValue::Datetime(_) => {}
    }
    Ok(())
}

fn expand_table(
    table: &mut DeTable<'_>,
    path: &mut Vec<String>,
    env: &Env,
    refs: &mut Vec<(String, String)>,
) -> Result<(), ExpandFailure> {
    for (key, value) in table.iter_mut() {
        path.push(key.get_ref().to_string());
        let result = expand_value(value, path, env, refs);
        path.pop();
        result?;
    }
    Ok(())
}

/// Fills `best` with the deepest key path whose key or value span contains `pos`.
fn key_path_at(table: &DeTable<'_>, pos: usize, prefix: &mut Vec<String>, best: &mut Vec<String>) {
    for (key, value) in table {
        prefix.push(key.get_ref().to_string());
        if (key.span().contains(&pos) || value.span().contains(&pos)) && prefix.len() > best.len() {
            best.clone_from(prefix);
        }
        match value.get_ref() {
            DeValue::Table(inner) => key_path_at(inner, pos, prefix, best),
            DeValue::Array(items) => {
                for item in items.iter() {
                    if let DeValue::Table(inner) = item.get_ref() {
                        key_path_at(inner, pos, prefix, best);
                    }
                }
            }
            _ => {}
        }
        prefix.pop();
    }
}
