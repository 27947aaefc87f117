//! The model's check: its key's variable and its endpoint, from the configuration.

use std::time::Duration;

use agent_config::Config;
use agent_llm::{ApiType, Model};
use serde_json::json;

use super::{Check, MODEL, Status};
use crate::config::{Inspected, LoadProblem};
use crate::output::error_text;

/// Where the model's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    /// Set: from this variable, or (`None`) written in the configuration.
    Set(Option<String>),
    /// None is needed (Ollama), or it is not ours to check (Bedrock's credentials).
    NotNeeded(&'static str),
    /// The configuration reads it from this variable, which is not set.
    Unset(String),
    /// Empty: the variable (if any) is set to nothing, or the configuration has none.
    Empty(Option<String>),
}

impl Key {
    fn usable(&self) -> bool {
        matches!(self, Self::Set(_) | Self::NotNeeded(_))
    }

    fn variable(&self) -> Option<&str> {
        match self {
            Self::Set(var) | Self::Empty(var) => var.as_deref(),
            Self::Unset(var) => Some(var),
            Self::NotNeeded(_) => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Set(Some(var)) => format!("key: {var} is set"),
            Self::Set(None) => "key: written in the configuration".to_owned(),
            Self::NotNeeded(why) => format!("key: {why}"),
            Self::Unset(var) => format!("key: {var} is not set"),
            Self::Empty(Some(var)) => format!("key: {var} is empty"),
            Self::Empty(None) => "key: none (no api_key in [llm])".to_owned(),
        }
    }
}

/// The variable the model's `api_key` is read from (`api_key = "${NAME}"`), for the profile
/// Manus uses: its own `[llm.manus]` (else `[llm.default]`) when that sets the key, else
/// `[llm]`'s.
fn key_variable(config: &Config) -> Option<String> {
    let find = |key: &str| {
        config
            .env_references()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, var)| var.to_owned())
    };
    let manus = agents::MANUS.to_lowercase();
    let profile = [manus.as_str(), "default"]
        .into_iter()
        .find(|name| config.llm_profile(name).is_some());
    profile
        .and_then(|name| find(&format!("llm.{name}.api_key")))
        .or_else(|| find("llm.api_key"))
}

pub(super) async fn model(inspected: &Inspected, limit: Duration) -> Check {
    let config = &inspected.config;
    let settings = config.llm_for(agents::MANUS);
    let file = inspected.file.as_ref().map_or_else(
        || "the configuration".to_owned(),
        |f| f.display().to_string(),
    );
    let mut facts = json!({
        "model": settings.model, "api_type": settings.api_type, "base_url": settings.base_url,
        "key_env": null, "key_set": false, "reachable": null, "http_status": null,
    });
    let unset = match &inspected.problem {
        Some(LoadProblem::NoFile(searched)) => {
            return Check::new(
                &MODEL,
                Status::Problem,
                format!("no configuration file (looked for {searched})"),
                facts,
            )
            .with_fix("openmanus config init");
        }
        Some(LoadProblem::Invalid(error)) => {
            return Check::new(
                &MODEL,
                Status::Problem,
                format!("the configuration does not load: {error}"),
                facts,
            )
            .with_fix("correct the configuration (`openmanus config check` shows the error)");
        }
        Some(LoadProblem::Unset(vars)) => vars.as_slice(),
        None => &[],
    };
    let var = key_variable(config);
    let key = if settings.api_type == ApiType::Aws {
        Key::NotNeeded("Amazon Bedrock's credentials come from the AWS SDK's chain (not checked)")
    } else if let Some(var) = var.clone().filter(|v| unset.contains(v)) {
        Key::Unset(var)
    } else if !settings.api_key.is_empty() {
        Key::Set(var)
    } else if settings.api_type == ApiType::Ollama {
        Key::NotNeeded("none needed (Ollama)")
    } else {
        Key::Empty(var)
    };
    facts["key_env"] = json!(key.variable());
    facts["key_set"] = json!(key.usable());
    let mut fixes = Vec::new();
    match &key {
        Key::Unset(var) | Key::Empty(Some(var)) => fixes.push(format!("export {var}=...")),
        Key::Empty(None) => fixes.push(format!(
            "set api_key in [llm] of {file} (e.g. api_key = \"${{OPENAI_API_KEY}}\", then export that variable)"
        )),
        Key::Set(_) | Key::NotNeeded(_) => {}
    }
    let others: Vec<&String> = unset
        .iter()
        .filter(|v| Some(v.as_str()) != key.variable())
        .collect();
    for other in &others {
        fixes.push(format!("export {other}=..."));
    }
    let mut head = format!(
        "{} through {}",
        settings.model,
        crate::config::api_name(settings.api_type)
    );
    let mut reachable = false;
    if let Err(error) = Model::new(settings.clone()) {
        head.push_str(&format!(": the settings are not usable: {error}"));
        fixes.push(format!("correct [llm] in {file}"));
    } else if settings.api_type == ApiType::Aws && settings.base_url.trim().is_empty() {
        head.push_str(" at the regional endpoint (not checked)");
        reachable = true;
    } else {
        match reach(&settings.base_url, limit).await {
            Ok(status) => {
                head.push_str(&format!(
                    " at {}: answers (HTTP {status})",
                    settings.base_url
                ));
                facts["http_status"] = json!(status);
                reachable = true;
            }
            Err(why) => {
                head.push_str(&format!(" at {}: {why}", settings.base_url));
                fixes.push(format!(
                    "check base_url in [llm] of {file}, and that its server runs and can be reached from here"
                ));
            }
        }
        facts["reachable"] = json!(reachable);
    }
    let mut parts = vec![head];
    parts.push(key.describe());
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(|v| v.as_str()).collect();
        parts.push(format!(
            "the configuration also reads {}, not set: runs stop there",
            names.join(", ")
        ));
    }
    let usable = key.usable() && reachable && others.is_empty() && fixes.is_empty();
    let check = Check::new(
        &MODEL,
        if usable { Status::Ok } else { Status::Problem },
        parts.join("; "),
        facts,
    );
    if fixes.is_empty() {
        check
    } else {
        check.with_fix(fixes.join("; "))
    }
}

/// Whether an HTTP server answers at `url` within `limit`: the status of its answer (any
/// status: the endpoint is there), or why none came.
async fn reach(url: &str, limit: Duration) -> Result<u16, String> {
    let client = agent_llm::http::client_builder()
        .connect_timeout(limit)
        .timeout(limit)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| format!("no HTTP client: {}", error_text(&error.into())))?;
    match client.get(url).send().await {
        Ok(response) => Ok(response.status().as_u16()),
        Err(error) if error.is_timeout() => Err(format!("no answer within {} s", limit.as_secs())),
        Err(error) if error.is_connect() => Err(format!(
            "cannot connect ({})",
            innermost(&anyhow::Error::new(error))
        )),
        Err(error) => Err(error_text(&anyhow::Error::new(error))),
    }
}

/// The deepest cause of an error (`Connection refused (os error 111)`), which says most.
fn innermost(error: &anyhow::Error) -> String {
    error
        .chain()
        .last()
        .map_or_else(|| error.to_string(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_usable_when_set_or_not_needed() {
        assert!(Key::Set(Some("K".into())).usable());
        assert!(Key::NotNeeded("none needed (Ollama)").usable());
        assert!(!Key::Unset("K".into()).usable());
        assert!(!Key::Empty(None).usable());
        assert_eq!(
            Key::Unset("OPENAI_API_KEY".into()).describe(),
            "key: OPENAI_API_KEY is not set"
        );
        assert_eq!(Key::Set(Some("K".into())).variable(), Some("K"));
    }
}
