//! File operations on a sandbox's workspace from the host side: the workspace is a host
//! directory, so both backends read, write and copy there, with the same path checks.

use std::path::{Path, PathBuf};

use crate::{SandboxError, path};

/// The host side of a sandbox workspace.
#[derive(Debug, Clone)]
pub(crate) struct HostFiles {
    workspace: PathBuf,
    work_dir: PathBuf,
}

impl HostFiles {
    /// `workspace` (canonical host path) shown at `work_dir` inside the sandbox.
    pub(crate) fn new(workspace: PathBuf, work_dir: PathBuf) -> Self {
        Self {
            workspace,
            work_dir,
        }
    }

    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The host path of the sandbox path `path`, refused when it leaves the workspace.
    pub(crate) fn resolve(&self, path: &str) -> Result<PathBuf, SandboxError> {
        path::resolve(&self.workspace, &self.work_dir, path)
    }

    pub(crate) async fn read(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let host = self.resolve(path)?;
        tokio::fs::read(&host)
            .await
            .map_err(|e| SandboxError::at(&host, "reading", e))
    }

    pub(crate) async fn write(&self, path: &str, contents: &[u8]) -> Result<(), SandboxError> {
        let host = self.resolve(path)?;
        if let Some(parent) = host.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| SandboxError::at(parent, "creating", e))?;
            // The directories just created may have raced with a link; check again.
            self.resolve(path)?;
        }
        tokio::fs::write(&host, contents)
            .await
            .map_err(|e| SandboxError::at(&host, "writing", e))
    }

    pub(crate) async fn copy_in(&self, host_source: &Path, path: &str) -> Result<(), SandboxError> {
        let target = self.resolve(path)?;
        let source = host_source.to_path_buf();
        let workspace = self.workspace.clone();
        tokio::task::spawn_blocking(move || copy_tree(&source, &target, None, &workspace))
            .await
            .map_err(|e| SandboxError::io("copying", std::io::Error::other(e)))?
    }

    pub(crate) async fn copy_out(
        &self,
        path: &str,
        host_target: &Path,
    ) -> Result<(), SandboxError> {
        let source = self.resolve(path)?;
        let target = host_target.to_path_buf();
        let workspace = self.workspace.clone();
        tokio::task::spawn_blocking(move || {
            copy_tree(&source, &target, Some(&workspace), &workspace)
        })
        .await
        .map_err(|e| SandboxError::io("copying", std::io::Error::other(e)))?
    }
}

/// Copies a file or a directory tree. With `inside` set (copying out of the workspace), symbolic
/// links are refused rather than followed; links are never created.
fn copy_tree(
    source: &Path,
    target: &Path,
    inside: Option<&Path>,
    workspace: &Path,
) -> Result<(), SandboxError> {
    let meta =
        std::fs::symlink_metadata(source).map_err(|e| SandboxError::at(source, "reading", e))?;
    let meta = if meta.file_type().is_symlink() {
        if inside.is_some() {
            return Err(SandboxError::PathRefused {
                path: source.display().to_string(),
                reason: "symbolic links are not copied out of the sandbox".into(),
            });
        }
        std::fs::metadata(source).map_err(|e| SandboxError::at(source, "reading", e))?
    } else {
        meta
    };
    if meta.is_dir() {
        std::fs::create_dir_all(target).map_err(|e| SandboxError::at(target, "creating", e))?;
        let entries =
            std::fs::read_dir(source).map_err(|e| SandboxError::at(source, "listing", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SandboxError::at(source, "listing", e))?;
            let to = target.join(entry.file_name());
            // Copying in: the target must stay inside the workspace (no link planted on the way).
            if inside.is_none()
                && std::fs::symlink_metadata(&to).is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(SandboxError::PathRefused {
                    path: to.display().to_string(),
                    reason: format!(
                        "it is a symbolic link inside the workspace {}",
                        workspace.display()
                    ),
                });
            }
            copy_tree(&entry.path(), &to, inside, workspace)?;
        }
        Ok(())
    } else {
        std::fs::copy(source, target)
            .map(|_| ())
            .map_err(|e| SandboxError::at(target, "copying to", e))
    }
}
