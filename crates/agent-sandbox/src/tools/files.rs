//! `sandbox_files`: create, edit, rewrite, delete and read files of the sandbox workspace.

use std::sync::Arc;

use agent_tools::{ToolContext, ToolError, ToolResult, TypedTool};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::quote;
use crate::{Sandbox, SandboxError};

/// The tool's name.
pub const SANDBOX_FILES: &str = "sandbox_files";

/// What `sandbox_files` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FilesAction {
    /// Create a new file with `file_contents`.
    CreateFile,
    /// Replace the one occurrence of `old_str` by `new_str`.
    StrReplace,
    /// Replace the whole content of an existing file with `file_contents`.
    FullFileRewrite,
    /// Delete a file.
    DeleteFile,
    /// Read a file.
    ReadFile,
}

/// Arguments of `sandbox_files`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FilesArgs {
    /// The action: create_file, str_replace, full_file_rewrite, delete_file or read_file.
    pub action: FilesAction,
    /// The file, relative to the workspace (e.g. `src/main.py`).
    pub file_path: String,
    /// The content for create_file and full_file_rewrite.
    pub file_contents: Option<String>,
    /// The text to replace (str_replace); it must occur exactly once.
    pub old_str: Option<String>,
    /// The replacement (str_replace); may be empty to delete the text.
    pub new_str: Option<String>,
    /// Octal permissions for created or rewritten files (default "644").
    pub permissions: Option<String>,
}

/// `sandbox_files` over a [`Sandbox`].
pub struct SandboxFiles {
    sandbox: Arc<dyn Sandbox>,
}

impl std::fmt::Debug for SandboxFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxFiles").finish_non_exhaustive()
    }
}

impl SandboxFiles {
    /// The tool over `sandbox`.
    pub fn new(sandbox: Arc<dyn Sandbox>) -> Self {
        Self { sandbox }
    }

    /// Whether something exists at `path` (checked on the host side of the workspace,
    /// without reading it).
    async fn exists(&self, path: &str) -> Result<bool, String> {
        let host = self.sandbox.host_path(path).map_err(|e| e.to_string())?;
        match tokio::fs::symlink_metadata(&host).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("cannot check '{path}': {e}")),
        }
    }

    async fn write(&self, path: &str, contents: &str, permissions: &str) -> Result<(), String> {
        self.sandbox
            .write_file(path, contents.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let out = self
            .sandbox
            .run(&format!("chmod {permissions} {}", quote(path)), None)
            .await
            .map_err(|e| e.to_string())?;
        if out.exit_code == Some(0) {
            Ok(())
        } else {
            Err(format!(
                "could not set the permissions of '{path}': {}",
                out.stderr.trim()
            ))
        }
    }

    async fn read_text(&self, path: &str) -> Result<String, String> {
        let bytes = self.sandbox.read_file(path).await.map_err(|e| match e {
            SandboxError::NotFound(_) => format!("File '{path}' does not exist"),
            other => other.to_string(),
        })?;
        String::from_utf8(bytes).map_err(|_| format!("File '{path}' is not UTF-8 text"))
    }

    async fn perform(&self, args: &FilesArgs) -> Result<String, String> {
        let path = args.file_path.trim();
        if path.is_empty() {
            return Err("file_path is required".to_owned());
        }
        let permissions = args.permissions.as_deref().unwrap_or("644");
        if !(3..=4).contains(&permissions.len())
            || !permissions.chars().all(|c| ('0'..='7').contains(&c))
        {
            return Err(format!(
                "permissions must be octal digits such as \"644\", not {permissions:?}"
            ));
        }
        match args.action {
            FilesAction::CreateFile => {
                if self.exists(path).await? {
                    return Err(format!(
                        "File '{path}' already exists. Use full_file_rewrite to modify existing files."
                    ));
                }
                let contents = args.file_contents.as_deref().unwrap_or_default();
                self.write(path, contents, permissions).await?;
                Ok(format!("File '{path}' created successfully."))
            }
            FilesAction::StrReplace => {
                let old = args
                    .old_str
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .ok_or("old_str is required for str_replace")?;
                let new = args.new_str.as_deref().unwrap_or_default();
                let text = self.read_text(path).await?;
                let lines: Vec<usize> = text
                    .match_indices(old)
                    .map(|(at, _)| text[..at].matches('\n').count() + 1)
                    .collect();
                match lines.len() {
                    0 => Err(format!("String '{old}' not found in file")),
                    1 => {
                        let replaced = text.replacen(old, new, 1);
                        self.sandbox
                            .write_file(path, replaced.as_bytes())
                            .await
                            .map_err(|e| e.to_string())?;
                        Ok("Replacement successful.".to_owned())
                    }
                    _ => Err(format!(
                        "Multiple occurrences found in lines {lines:?}. Please ensure string is unique"
                    )),
                }
            }
            FilesAction::FullFileRewrite => {
                if !self.exists(path).await? {
                    return Err(format!(
                        "File '{path}' does not exist. Use create_file to create a new file."
                    ));
                }
                let contents = args.file_contents.as_deref().unwrap_or_default();
                self.write(path, contents, permissions).await?;
                Ok(format!("File '{path}' completely rewritten successfully."))
            }
            FilesAction::DeleteFile => {
                if !self.exists(path).await? {
                    return Err(format!("File '{path}' does not exist"));
                }
                let out = self
                    .sandbox
                    .run(&format!("rm -f -- {}", quote(path)), None)
                    .await
                    .map_err(|e| e.to_string())?;
                if out.exit_code == Some(0) {
                    Ok(format!("File '{path}' deleted successfully."))
                } else {
                    Err(format!("could not delete '{path}': {}", out.stderr.trim()))
                }
            }
            FilesAction::ReadFile => self.read_text(path).await,
        }
    }
}

#[async_trait]
impl TypedTool for SandboxFiles {
    type Args = FilesArgs;

    fn name(&self) -> &str {
        SANDBOX_FILES
    }

    fn description(&self) -> &str {
        "Create, edit, rewrite, delete and read files in the sandbox workspace. Paths are \
         relative to the workspace. create_file makes a new file (never over an existing one), \
         str_replace replaces the one occurrence of old_str by new_str, full_file_rewrite \
         replaces an existing file's content, delete_file removes a file, read_file returns a \
         file's content."
    }

    async fn call(&self, args: FilesArgs, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        Ok(match self.perform(&args).await {
            Ok(text) => ToolResult::success(text),
            Err(message) => ToolResult::failure(message),
        })
    }
}
