//! The file-access layer of `str_replace_editor`: the [`FileOperator`] trait and the
//! [`LocalFileOperator`] that works on this machine's file system.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;

/// What a path points to, following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// Nothing (also a dangling symlink, or a path through a regular file).
    Missing,
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// Something else: a FIFO, a socket, a device.
    Other,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's file name.
    pub name: OsString,
    /// True for a directory itself; false for anything else, including a symlink to a directory
    /// (the listing does not descend into symlinks).
    pub is_dir: bool,
}

/// How `str_replace_editor` reaches files. [`LocalFileOperator`] uses this machine's file system;
/// a sandboxed operator can run the same operations inside a container.
///
/// Every path the editor passes is absolute and has gone through [`FileOperator::resolve`].
/// Errors are plain [`io::Error`]s; the editor words the messages.
#[async_trait]
pub trait FileOperator: fmt::Debug + Send + Sync {
    /// The whole content of the regular file at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read, or is not a regular file.
    async fn read_file(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// Replaces the content of the file at `path` with `contents`, creating the file and any
    /// missing parent directories.
    ///
    /// # Errors
    ///
    /// A directory or the file cannot be created or written.
    async fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()>;

    /// What `path` points to, following symlinks. A path that does not exist is
    /// `Ok(PathKind::Missing)`, not an error.
    ///
    /// # Errors
    ///
    /// The answer cannot be known (for example, permission denied).
    async fn kind(&self, path: &Path) -> io::Result<PathKind>;

    /// The entries of the directory at `path`, in no particular order, without `.` and `..`.
    ///
    /// # Errors
    ///
    /// The directory cannot be read.
    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;

    /// The absolute path with every symlink resolved and `.`/`..` applied, like `realpath -m`:
    /// the part of the path that does not exist is kept as written (with `..` applied lexically),
    /// and a dangling symlink is followed to where it points.
    ///
    /// # Errors
    ///
    /// A symlink loop, or a component that cannot be inspected.
    async fn resolve(&self, path: &Path) -> io::Result<PathBuf>;

    /// [`FileOperator::resolve`], then [`FileOperator::kind`] of the result: what the editor
    /// asks about every path. An operator that can answer both at once (one trip to the
    /// blocking pool, one round trip to a sandbox) overrides it.
    ///
    /// # Errors
    ///
    /// As [`FileOperator::resolve`]; the error of [`FileOperator::kind`] is given with the
    /// resolved path, for the editor to word.
    async fn resolve_kind(&self, path: &Path) -> io::Result<(PathBuf, io::Result<PathKind>)> {
        let real = self.resolve(path).await?;
        let kind = self.kind(&real).await;
        Ok((real, kind))
    }

    /// [`FileOperator::resolve_kind`], and the file's content too when the resolved path is a
    /// regular file that `read_if` (given the resolved path) allows: what the editor asks
    /// before it views or edits a file. An operator that can do it all at once (one trip to
    /// the blocking pool) overrides it.
    ///
    /// # Errors
    ///
    /// As [`FileOperator::resolve_kind`]; the errors of the kind and of the read are given in
    /// [`Opened`], for the editor to word.
    async fn open(&self, path: &Path, read_if: ReadIf) -> io::Result<Opened> {
        let (real, kind) = self.resolve_kind(path).await?;
        let content = if matches!(kind, Ok(PathKind::File)) && read_if(&real) {
            Some(self.read_file(&real).await)
        } else {
            None
        };
        Ok(Opened {
            real,
            kind,
            content,
        })
    }
}

/// Whether [`FileOperator::open`] may read the file at the resolved path it is given (the
/// editor refuses paths outside the workspace and denied ones before reading them).
pub type ReadIf = Box<dyn FnOnce(&Path) -> bool + Send>;

/// What [`FileOperator::open`] found.
#[derive(Debug)]
pub struct Opened {
    /// The resolved path.
    pub real: PathBuf,
    /// What it points to.
    pub kind: io::Result<PathKind>,
    /// Its content: `None` when it was not read (not a regular file, or refused by the
    /// `read_if` given).
    pub content: Option<io::Result<Vec<u8>>>,
}

/// The [`FileOperator`] of this machine. All IO runs on tokio's blocking pool, never on the
/// runtime's worker threads.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFileOperator;

impl LocalFileOperator {
    /// The local operator.
    #[must_use]
    pub fn new() -> Self {
        Self
    }
}

/// Runs blocking file-system work on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(io::Error::other)?
}

#[async_trait]
impl FileOperator for LocalFileOperator {
    async fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let path = path.to_path_buf();
        // One trip to the blocking pool for the check and the read.
        blocking(move || read_regular(&path)).await
    }

    async fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(parent).await?;
        }
        tokio::fs::write(path, contents).await
    }

    async fn kind(&self, path: &Path) -> io::Result<PathKind> {
        let path = path.to_path_buf();
        blocking(move || Ok(kind_local(&path))).await?
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let path = path.to_path_buf();
        blocking(move || {
            let mut entries = Vec::new();
            for entry in std::fs::read_dir(&path)? {
                let entry = entry?;
                entries.push(DirEntry {
                    name: entry.file_name(),
                    is_dir: entry.file_type()?.is_dir(),
                });
            }
            Ok(entries)
        })
        .await
    }

    async fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let path = path.to_path_buf();
        blocking(move || resolve_local(&path)).await
    }

    async fn resolve_kind(&self, path: &Path) -> io::Result<(PathBuf, io::Result<PathKind>)> {
        let path = path.to_path_buf();
        // One trip to the blocking pool where the default takes two.
        blocking(move || {
            let real = resolve_local(&path)?;
            let kind = kind_local(&real);
            Ok((real, kind))
        })
        .await
    }

    async fn open(&self, path: &Path, read_if: ReadIf) -> io::Result<Opened> {
        let path = path.to_path_buf();
        // One trip to the blocking pool where the default takes two (three before
        // `resolve_kind`): a view costs the agent's thread two wake-ups, not six.
        blocking(move || {
            let real = resolve_local(&path)?;
            let kind = kind_local(&real);
            let content =
                (matches!(kind, Ok(PathKind::File)) && read_if(&real)).then(|| read_regular(&real));
            Ok(Opened {
                real,
                kind,
                content,
            })
        })
        .await
    }
}

/// The content of the regular file at `path`.
fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    // Checked before opening: opening a FIFO for reading would wait for a writer forever.
    if !std::fs::metadata(path)?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    std::fs::read(path)
}

/// [`FileOperator::kind`] on the local file system.
fn kind_local(path: &Path) -> io::Result<PathKind> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => Ok(PathKind::Directory),
        Ok(metadata) if metadata.is_file() => Ok(PathKind::File),
        Ok(_) => Ok(PathKind::Other),
        Err(e) if is_missing(&e) => Ok(PathKind::Missing),
        Err(e) => Err(e),
    }
}

/// Errors that mean "there is nothing there" (Python's `pathlib` treats them the same way).
fn is_missing(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// How many symlinks one resolution may follow (Linux's limit).
const MAX_SYMLINKS: usize = 40;

/// `realpath -m` on the local file system (see [`FileOperator::resolve`]).
fn resolve_local(path: &Path) -> io::Result<PathBuf> {
    let path = std::path::absolute(path)?;
    // Components still to walk, last one first.
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, &path);
    let mut resolved = root_of(&path);
    let mut missing = false;
    let mut followed = 0usize;
    while let Some(component) = pending.pop() {
        if component == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&component);
        if missing {
            resolved = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                followed += 1;
                if followed > MAX_SYMLINKS {
                    return Err(io::Error::other(format!(
                        "too many levels of symbolic links at {}",
                        candidate.display()
                    )));
                }
                let target = std::fs::read_link(&candidate)?;
                if target.is_absolute() {
                    resolved = root_of(&target);
                }
                push_components(&mut pending, &target);
            }
            Ok(_) => resolved = candidate,
            Err(e) if is_missing(&e) => {
                missing = true;
                resolved = candidate;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(resolved)
}

/// The root (`/`, or a Windows prefix and root) of an absolute path.
fn root_of(path: &Path) -> PathBuf {
    path.components()
        .take_while(|c| matches!(c, Component::Prefix(_) | Component::RootDir))
        .collect()
}

/// Pushes the `Normal` and `..` components of `path` onto `pending` so that the first one is
/// popped first.
fn push_components(pending: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    pending.extend(parts.into_iter().rev());
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn resolves_dot_dot_symlinks_and_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("abs")).unwrap();
        std::os::unix::fs::symlink("real", base.join("rel")).unwrap();
        std::os::unix::fs::symlink("/nowhere/target", base.join("dangling")).unwrap();

        assert_eq!(
            resolve_local(&base.join("./real/../real/x")).unwrap(),
            base.join("real/x")
        );
        assert_eq!(
            resolve_local(&base.join("abs/f.txt")).unwrap(),
            base.join("real/f.txt")
        );
        assert_eq!(
            resolve_local(&base.join("rel/sub/../f")).unwrap(),
            base.join("real/f")
        );
        assert_eq!(
            resolve_local(&base.join("missing/../../x")).unwrap(),
            base.parent().unwrap().join("x"),
            "`..` after a missing component is lexical"
        );
        assert_eq!(
            resolve_local(&base.join("dangling")).unwrap(),
            PathBuf::from("/nowhere/target"),
            "a dangling symlink is followed"
        );
        assert_eq!(resolve_local(Path::new("/../..")).unwrap(), Path::new("/"));
    }

    #[test]
    fn symlink_loops_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(base.join("b"), base.join("a")).unwrap();
        std::os::unix::fs::symlink(base.join("a"), base.join("b")).unwrap();
        let error = resolve_local(&base.join("a/x")).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("too many levels of symbolic links")
        );
    }
}
