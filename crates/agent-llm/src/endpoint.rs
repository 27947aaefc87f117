//! The chat-completions URL of an OpenAI-compatible endpoint, from the settings: OpenAI's own
//! path, Ollama's `/v1`, Azure's deployment and `api-version`.

use crate::LlmError;
use crate::settings::{ApiType, LlmSettings};

/// Azure's `api-version` when the settings give none.
pub const DEFAULT_AZURE_API_VERSION: &str = "2024-10-21";

/// The chat-completions URL for the settings.
pub(crate) fn endpoint(settings: &LlmSettings) -> Result<String, LlmError> {
    let base = settings.base_url.trim().trim_end_matches('/');
    let parsed = url::Url::parse(base)
        .map_err(|e| LlmError::InvalidRequest(format!("invalid base_url {base:?}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(LlmError::InvalidRequest(format!(
            "base_url must be http or https, got {base:?}"
        )));
    }
    Ok(match settings.api_type {
        ApiType::Openai => format!("{base}/chat/completions"),
        ApiType::Anthropic | ApiType::Aws => {
            return Err(LlmError::InvalidRequest(format!(
                "api_type = \"{}\" is not an OpenAI-compatible endpoint: build the model with \
                 agent_llm::Model::new",
                settings.api_type.as_str()
            )));
        }
        ApiType::Ollama if base.ends_with("/v1") => format!("{base}/chat/completions"),
        ApiType::Ollama => format!("{base}/v1/chat/completions"),
        ApiType::Azure => {
            let version = settings
                .api_version
                .as_deref()
                .filter(|v| !v.is_empty())
                .unwrap_or(DEFAULT_AZURE_API_VERSION);
            let deployment_base = if base.contains("/openai/deployments/") {
                base.to_owned()
            } else {
                let deployment = settings.deployment.as_deref().unwrap_or(&settings.model);
                format!("{base}/openai/deployments/{deployment}")
            };
            format!("{deployment_base}/chat/completions?api-version={version}")
        }
    })
}

/// `url` parsed once, for a client to post to at every request (reqwest would parse the text
/// again each time).
pub(crate) fn parsed(url: &str) -> Result<reqwest::Url, LlmError> {
    reqwest::Url::parse(url)
        .map_err(|e| LlmError::InvalidRequest(format!("invalid endpoint {url:?}: {e}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn endpoints_per_api_type() {
        let url = |settings: LlmSettings| endpoint(&settings).unwrap();
        assert_eq!(
            url(LlmSettings::new("gpt-4o", "https://api.openai.com/v1/")),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            url(LlmSettings::new("llama3.2", "http://localhost:11434")
                .with_api_type(ApiType::Ollama)),
            "http://localhost:11434/v1/chat/completions"
        );
        assert_eq!(
            url(LlmSettings::new("llama3.2", "http://localhost:11434/v1")
                .with_api_type(ApiType::Ollama)),
            "http://localhost:11434/v1/chat/completions"
        );
        let mut azure = LlmSettings::new("gpt-4o", "https://res.openai.azure.com")
            .with_api_type(ApiType::Azure);
        azure.api_version = Some("2024-08-01-preview".into());
        assert_eq!(
            url(azure.clone()),
            "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-08-01-preview"
        );
        azure.deployment = Some("prod-4o".into());
        assert_eq!(
            url(azure),
            "https://res.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2024-08-01-preview"
        );
        let azure = LlmSettings::new(
            "gpt-4o",
            "https://res.openai.azure.com/openai/deployments/dep1",
        )
        .with_api_type(ApiType::Azure);
        assert_eq!(
            url(azure),
            "https://res.openai.azure.com/openai/deployments/dep1/chat/completions?api-version=2024-10-21"
        );
        assert!(endpoint(&LlmSettings::new("m", "ftp://x")).is_err());
        assert!(endpoint(&LlmSettings::new("m", "not a url")).is_err());
    }
}
