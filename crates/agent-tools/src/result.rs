//! `ToolResult`: what a tool hands back, with OpenManus's rendering and combining rules.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ToolError;

/// The result of one tool call.
///
/// Rendering (`Display`) follows OpenManus: `Error: {error}` when there is error text, otherwise
/// the output; `system` and `base64_image` are never rendered (the image travels separately).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// What the tool produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// What went wrong, as text for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A base64-encoded image (a screenshot, a chart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64_image: Option<String>,
    /// A note for the framework, never shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
}

fn set(field: Option<&String>) -> bool {
    field.is_some_and(|s| !s.is_empty())
}

impl ToolResult {
    /// A successful result with `output`.
    pub fn success(output: impl Into<String>) -> Self {
        Self {
            output: Some(output.into()),
            ..Self::default()
        }
    }

    /// A failed result with `error` (OpenManus's `ToolFailure`).
    pub fn failure(error: impl Into<String>) -> Self {
        Self {
            error: Some(error.into()),
            ..Self::default()
        }
    }

    /// OpenManus's `success_response`: a string is used as is, anything else becomes
    /// pretty-printed JSON (2-space indent).
    pub fn success_response(data: &impl Serialize) -> Self {
        let text = match serde_json::to_value(data) {
            Ok(serde_json::Value::String(s)) => s,
            Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|e| e.to_string()),
            Err(e) => return Self::failure(format!("result could not be serialised: {e}")),
        };
        Self::success(text)
    }

    /// Attaches an image.
    #[must_use]
    pub fn with_image(mut self, base64_image: impl Into<String>) -> Self {
        self.base64_image = Some(base64_image.into());
        self
    }

    /// Attaches a system note.
    #[must_use]
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// OpenManus's falsiness: no field holds anything.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        !(set(self.output.as_ref())
            || set(self.error.as_ref())
            || set(self.base64_image.as_ref())
            || set(self.system.as_ref()))
    }

    /// True when the result carries error text.
    #[must_use]
    pub fn is_error(&self) -> bool {
        set(self.error.as_ref())
    }

    /// The image, if a non-empty one is attached.
    #[must_use]
    pub fn image(&self) -> Option<&str> {
        self.base64_image.as_deref().filter(|s| !s.is_empty())
    }

    /// OpenManus's `a + b`: text fields are concatenated when both are set, otherwise the set one
    /// wins.
    ///
    /// # Errors
    ///
    /// [`ToolError::Failure`] `Cannot combine tool results` when both carry an image.
    pub fn combine(self, other: Self) -> Result<Self, ToolError> {
        fn join(a: Option<String>, b: Option<String>) -> Option<String> {
            match (a.filter(|s| !s.is_empty()), b.filter(|s| !s.is_empty())) {
                (Some(a), Some(b)) => Some(a + &b),
                (a, b) => a.or(b),
            }
        }
        if set(self.base64_image.as_ref()) && set(other.base64_image.as_ref()) {
            return Err(ToolError::Failure("Cannot combine tool results".to_owned()));
        }
        Ok(Self {
            output: join(self.output, other.output),
            error: join(self.error, other.error),
            base64_image: join(self.base64_image, other.base64_image),
            system: join(self.system, other.system),
        })
    }
}

impl fmt::Display for ToolResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.error, &self.output) {
            (Some(error), _) if !error.is_empty() => write!(f, "Error: {error}"),
            (_, Some(output)) => f.write_str(output),
            _ => Ok(()),
        }
    }
}

impl From<String> for ToolResult {
    fn from(output: String) -> Self {
        Self::success(output)
    }
}

impl From<&str> for ToolResult {
    fn from(output: &str) -> Self {
        Self::success(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rendering_follows_openmanus() {
        assert_eq!(ToolResult::success("out").to_string(), "out");
        assert_eq!(ToolResult::failure("bad").to_string(), "Error: bad");
        let both = ToolResult {
            output: Some("out".into()),
            error: Some("warn".into()),
            ..Default::default()
        };
        assert_eq!(
            both.to_string(),
            "Error: warn",
            "error text hides the output, as in OpenManus"
        );
        assert_eq!(ToolResult::default().with_system("note").to_string(), "");
        assert_eq!(ToolResult::success("").with_image("aGk=").to_string(), "");
    }

    #[test]
    fn truthiness_counts_every_field() {
        assert!(ToolResult::default().is_empty());
        assert!(ToolResult::success("").is_empty());
        assert!(!ToolResult::success("x").is_empty());
        assert!(!ToolResult::default().with_image("i").is_empty());
        assert!(!ToolResult::default().with_system("s").is_empty());
        assert!(!ToolResult::failure("e").is_empty());
    }

    #[test]
    fn combining_concatenates_set_fields_and_refuses_two_images() {
        let a = ToolResult::success("a").with_system("s1");
        let b = ToolResult {
            output: Some("b".into()),
            error: Some("e".into()),
            ..Default::default()
        };
        let c = a.combine(b).unwrap();
        assert_eq!(c.output.as_deref(), Some("ab"));
        assert_eq!(c.error.as_deref(), Some("e"));
        assert_eq!(c.system.as_deref(), Some("s1"));

        let img1 = ToolResult::default().with_image("x");
        let img2 = ToolResult::default().with_image("y");
        assert_eq!(
            img1.clone().combine(img2).unwrap_err().to_string(),
            "Cannot combine tool results"
        );
        assert_eq!(
            img1.combine(ToolResult::success("o"))
                .unwrap()
                .base64_image
                .as_deref(),
            Some("x")
        );
    }

    #[test]
    fn success_response_keeps_strings_and_pretty_prints_the_rest() {
        assert_eq!(
            ToolResult::success_response(&"plain").output.as_deref(),
            Some("plain")
        );
        assert_eq!(
            ToolResult::success_response(&json!({"a": 1}))
                .output
                .as_deref(),
            Some("{\n  \"a\": 1\n}")
        );
    }
}
