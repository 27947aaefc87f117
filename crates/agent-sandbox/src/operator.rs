//! [`SandboxFileOperator`]: `str_replace_editor`'s file access confined to a sandbox workspace.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_tools::FileOperator;
use agent_tools::editor::{DirEntry, PathKind};
use async_trait::async_trait;

use crate::{Sandbox, SandboxError};

/// A [`FileOperator`] that reaches files only through a [`Sandbox`]'s confined file access:
/// every path must lie in the sandbox workspace, given either as a host path (under
/// [`Sandbox::workspace`]) or as a sandbox path (under the work dir); `..` escapes and
/// symbolic links leading out of the workspace are refused (`PermissionDenied`), as the
/// sandbox's own [`Sandbox::read_file`] and [`Sandbox::write_file`] refuse them.
///
/// With [`LocalSandboxOptions::mirrored`](crate::LocalSandboxOptions::mirrored) the two kinds of
/// path are the same, so the editor, `bash` and `python_execute` in the sandbox agree on paths.
#[derive(Clone)]
pub struct SandboxFileOperator {
    sandbox: Arc<dyn Sandbox>,
}

impl std::fmt::Debug for SandboxFileOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxFileOperator")
            .field("workspace", &self.sandbox.workspace())
            .field("work_dir", &self.sandbox.work_dir())
            .finish()
    }
}

impl SandboxFileOperator {
    /// The operator of `sandbox`.
    #[must_use]
    pub fn new(sandbox: Arc<dyn Sandbox>) -> Self {
        Self { sandbox }
    }

    /// The sandbox.
    #[must_use]
    pub fn sandbox(&self) -> &Arc<dyn Sandbox> {
        &self.sandbox
    }

    /// `path` as a path relative to the workspace, or refused.
    fn relative(&self, path: &Path) -> io::Result<String> {
        let relative = path
            .strip_prefix(self.sandbox.workspace())
            .or_else(|_| path.strip_prefix(self.sandbox.work_dir()))
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "{} is outside the sandbox workspace {}",
                        path.display(),
                        self.sandbox.workspace().display()
                    ),
                )
            })?;
        let text = relative.to_str().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the path {} is not UTF-8", path.display()),
            )
        })?;
        Ok(if text.is_empty() {
            ".".to_owned()
        } else {
            text.to_owned()
        })
    }

    /// The host path of `path`, checked by the sandbox's path confinement.
    fn host(&self, path: &Path) -> io::Result<PathBuf> {
        let relative = self.relative(path)?;
        self.sandbox.host_path(&relative).map_err(to_io)
    }
}

/// A sandbox error as the I/O error the editor words.
fn to_io(error: SandboxError) -> io::Error {
    match error {
        SandboxError::Io { source, .. } => source,
        SandboxError::NotFound(what) => io::Error::new(io::ErrorKind::NotFound, what),
        refused @ SandboxError::PathRefused { .. } => {
            io::Error::new(io::ErrorKind::PermissionDenied, refused.to_string())
        }
        other => io::Error::other(other.to_string()),
    }
}

#[async_trait]
impl FileOperator for SandboxFileOperator {
    async fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let host = self.host(path)?;
        // Checked before opening: opening a FIFO for reading would wait for a writer forever.
        if !tokio::fs::metadata(&host).await?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        self.sandbox
            .read_file(&self.relative(path)?)
            .await
            .map_err(to_io)
    }

    async fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        self.sandbox
            .write_file(&self.relative(path)?, contents)
            .await
            .map_err(to_io)
    }

    async fn kind(&self, path: &Path) -> io::Result<PathKind> {
        let host = self.host(path)?;
        match tokio::fs::metadata(&host).await {
            Ok(metadata) if metadata.is_dir() => Ok(PathKind::Directory),
            Ok(metadata) if metadata.is_file() => Ok(PathKind::File),
            Ok(_) => Ok(PathKind::Other),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(PathKind::Missing)
            }
            Err(e) => Err(e),
        }
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let host = self.host(path)?;
        let mut reader = tokio::fs::read_dir(&host).await?;
        let mut entries = Vec::new();
        while let Some(entry) = reader.next_entry().await? {
            entries.push(DirEntry {
                name: entry.file_name(),
                is_dir: entry.file_type().await?.is_dir(),
            });
        }
        Ok(entries)
    }

    async fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let workspace = self.sandbox.workspace();
        let work_dir = self.sandbox.work_dir();
        // A sandbox path is resolved as its host path, and given back as a sandbox path.
        let sandbox_path = !path.starts_with(workspace) && path.starts_with(work_dir);
        let host = match path.strip_prefix(work_dir) {
            Ok(rest) if sandbox_path => workspace.join(rest),
            _ => path.to_path_buf(),
        };
        let resolved = agent_tools::LocalFileOperator::new().resolve(&host).await?;
        Ok(match resolved.strip_prefix(workspace) {
            Ok(rest) if sandbox_path => work_dir.join(rest),
            _ => resolved,
        })
    }
}
