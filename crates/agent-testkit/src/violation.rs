//! A broken wire rule, as the strict mocks of the Anthropic and Bedrock APIs record it.

use std::fmt;

use thiserror::Error;

/// A request that broke a rule of the real service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolViolation {
    /// The request's number (from 0, in order of arrival).
    pub request_index: usize,
    /// What the real service would answer.
    pub message: String,
}

impl fmt::Display for ProtocolViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request #{}: {}", self.request_index, self.message)
    }
}

/// The violations a mock recorded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the mock recorded {} violation(s):\n{}", .0.len(), .0.iter().map(|v| format!("  - {v}")).collect::<Vec<_>>().join("\n"))]
pub struct ViolationList(pub Vec<ProtocolViolation>);
