//! `str_replace_editor` through the editor: when the editor offers `fs/read_text_file` and
//! `fs/write_text_file`, the agent's file tool reads and writes through them, so it sees the
//! editor's unsaved buffers and its edits land in the editor's undo history. What the editor
//! does not offer (listing a directory, what a path is, a file that is not text) stays on this
//! machine's file system.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_tools::editor::{DirEntry, PathKind};
use agent_tools::{FileOperator, LocalFileOperator};
use async_trait::async_trait;
use serde_json::json;

use crate::permission::Asking;
use crate::rpc::{Outbox, RpcError, code};

/// What the editor said it can do with files (`clientCapabilities.fs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EditorFs {
    /// `fs/read_text_file`.
    pub read: bool,
    /// `fs/write_text_file`.
    pub write: bool,
}

impl EditorFs {
    /// Whether the editor does either.
    #[must_use]
    pub fn any(self) -> bool {
        self.read || self.write
    }
}

/// Files of one session, read and written through the editor where it can.
pub struct EditorFiles {
    outbox: Outbox,
    asking: Arc<Mutex<Asking>>,
    fs: EditorFs,
    local: LocalFileOperator,
}

impl std::fmt::Debug for EditorFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditorFiles").field("fs", &self.fs).finish()
    }
}

impl EditorFiles {
    /// The files of the session `asking` names, through `outbox` as far as `fs` allows.
    #[must_use]
    pub fn new(outbox: Outbox, asking: Arc<Mutex<Asking>>, fs: EditorFs) -> Self {
        Self {
            outbox,
            asking,
            fs,
            local: LocalFileOperator::new(),
        }
    }

    fn session(&self) -> Option<String> {
        self.asking
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .session
            .clone()
    }

    async fn ask(&self, method: &str, params: serde_json::Value) -> io::Result<serde_json::Value> {
        match self.outbox.request(method, params).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(io_error(method, &error)),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the editor has gone",
            )),
        }
    }
}

/// A path as the protocol carries it: UTF-8 text (a path that is not stays on this machine).
fn text_path(path: &Path) -> Option<&str> {
    path.to_str()
}

fn io_error(method: &str, error: &RpcError) -> io::Error {
    let kind = if error.code == code::RESOURCE_NOT_FOUND {
        io::ErrorKind::NotFound
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, format!("the editor's {method}: {}", error.message))
}

#[async_trait]
impl FileOperator for EditorFiles {
    async fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let (Some(session), Some(path_text)) =
            (self.session().filter(|_| self.fs.read), text_path(path))
        else {
            return self.local.read_file(path).await;
        };
        let result = self
            .ask(
                "fs/read_text_file",
                json!({ "sessionId": session, "path": path_text }),
            )
            .await?;
        let content = result["content"].as_str().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "the editor sent no content")
        })?;
        Ok(content.as_bytes().to_vec())
    }

    async fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        let text = std::str::from_utf8(contents).ok();
        let (Some(session), Some(text), Some(path_text)) = (
            self.session().filter(|_| self.fs.write),
            text,
            text_path(path),
        ) else {
            return self.local.write_file(path, contents).await;
        };
        self.ask(
            "fs/write_text_file",
            json!({ "sessionId": session, "path": path_text, "content": text }),
        )
        .await
        .map(|_| ())
    }

    async fn kind(&self, path: &Path) -> io::Result<PathKind> {
        self.local.kind(path).await
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        self.local.read_dir(path).await
    }

    async fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        self.local.resolve(path).await
    }
}
