//! Deserialisers for keys where an empty string means "not set".

use std::path::PathBuf;

use serde::{Deserialize, Deserializer};

/// `""` means "not set" for optional strings (OpenManus's examples write `cdp_url = ""`).
pub(crate) fn empty_as_none<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let value = Option::<String>::deserialize(deserializer)?;
    Ok(value.filter(|v| !v.trim().is_empty()))
}

pub(crate) fn empty_path_as_none<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<PathBuf>, D::Error> {
    Ok(empty_as_none(deserializer)?.map(PathBuf::from))
}
