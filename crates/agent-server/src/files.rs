//! The files of a session's workspace, as the API lists and serves them: every path is
//! resolved inside the workspace or refused.
//!
//! A requested path is relative, `/`-separated, and may not hold `..`, `.`, empty parts,
//! backslashes or NUL (the router has already decoded `%2F`, so an encoded slash is just a
//! slash here and meets the same rules). The joined path is then canonicalised, which resolves
//! every symbolic link, and must still lie inside the canonical workspace. The session's own
//! records (`.openmanus/`) are neither listed nor served.

use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Serialize;

/// The directory of the workspace that holds the session's records, never listed or served.
pub const PRIVATE_DIR: &str = ".openmanus";

/// At most this many entries are listed (the listing says when it stopped).
pub const MAX_LISTED: usize = 5_000;

/// One file of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    /// The path relative to the workspace, `/`-separated.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Last modification, milliseconds since the Unix epoch (0 when unknown).
    pub modified_ms: u64,
    /// The type it is served with.
    pub content_type: &'static str,
}

/// A listing of the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// The files, sorted by path.
    pub files: Vec<FileEntry>,
    /// True when the listing stopped at [`MAX_LISTED`] files.
    pub truncated: bool,
}

/// Why a path is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// The path breaks the syntax rules (`..`, absolute, NUL, backslash, empty part).
    #[error("the path is not a plain relative path inside the workspace")]
    Invalid,
    /// The path leaves the workspace (through a symbolic link), or names its private records.
    #[error("the path is outside the workspace")]
    Outside,
    /// Nothing is there, or it is not a regular file.
    #[error("no such file")]
    NotFound,
}

/// Resolves `requested` (relative, `/`-separated) to a regular file inside `workspace`.
///
/// # Errors
///
/// See [`PathError`].
pub fn resolve(workspace: &Path, requested: &str) -> Result<PathBuf, PathError> {
    let relative = plain_relative(requested)?;
    let root = workspace.canonicalize().map_err(|_| PathError::NotFound)?;
    let joined = root.join(&relative);
    let real = joined.canonicalize().map_err(|_| PathError::NotFound)?;
    let inside = real.strip_prefix(&root).map_err(|_| PathError::Outside)?;
    if is_private(inside) {
        return Err(PathError::Outside);
    }
    let metadata = std::fs::metadata(&real).map_err(|_| PathError::NotFound)?;
    if !metadata.is_file() {
        return Err(PathError::NotFound);
    }
    Ok(real)
}

/// Checks the syntax of a requested path and returns it as a relative path.
fn plain_relative(requested: &str) -> Result<PathBuf, PathError> {
    let trimmed = requested.trim_start_matches('/');
    if trimmed.is_empty() || trimmed.contains(['\0', '\\']) || requested.starts_with("//") {
        return Err(PathError::Invalid);
    }
    let mut relative = PathBuf::new();
    for part in trimmed.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(PathError::Invalid);
        }
        relative.push(part);
    }
    // A part like "C:" on a platform that reads it as a prefix would not be Normal.
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(PathError::Invalid);
    }
    Ok(relative)
}

/// True for the session's private records.
fn is_private(relative: &Path) -> bool {
    relative
        .components()
        .next()
        .is_some_and(|c| c.as_os_str() == PRIVATE_DIR)
}

/// Lists the regular files of `workspace` (not following symbolic links, skipping the private
/// records), sorted by path, at most [`MAX_LISTED`].
///
/// # Errors
///
/// The workspace itself cannot be read.
pub fn list(workspace: &Path) -> std::io::Result<Listing> {
    let mut files = Vec::new();
    let mut truncated = false;
    let mut pending = vec![PathBuf::new()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(workspace.join(&dir)) {
            Ok(entries) => entries,
            Err(error) if dir.as_os_str().is_empty() => return Err(error),
            Err(_) => continue,
        };
        for entry in entries.flatten() {
            let relative = dir.join(entry.file_name());
            if is_private(&relative) {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(relative);
            } else if kind.is_file() {
                if files.len() == MAX_LISTED {
                    truncated = true;
                    pending.clear();
                    break;
                }
                let Some(path) = slash_path(&relative) else {
                    continue;
                };
                let metadata = entry.metadata().ok();
                let modified_ms = metadata
                    .as_ref()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                files.push(FileEntry {
                    content_type: content_type(&path),
                    path,
                    size: metadata.map_or(0, |m| m.len()),
                    modified_ms,
                });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Listing { files, truncated })
}

/// A relative path as `/`-separated UTF-8 (`None` for a name that is not UTF-8).
fn slash_path(relative: &Path) -> Option<String> {
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    parts.map(|parts| parts.join("/"))
}

/// The type a file is served with, from its extension.
#[must_use]
pub fn content_type(path: &str) -> &'static str {
    let extension = path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "txt" | "md" | "py" | "rs" | "csv" | "json" | "toml" | "yaml" | "yml" | "log" | "sh"
        | "js" | "ts" | "css" | "html" | "htm" | "svg" | "xml" | "jsonl" => {
            "text/plain; charset=utf-8"
        }
        _ => "application/octet-stream",
    }
}

/// True when a file of this type is shown in the page rather than downloaded.
#[must_use]
pub fn is_inline(content_type: &str) -> bool {
    content_type.starts_with("image/") || content_type.starts_with("text/plain")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("sub/b.png"), [0x89, b'P']).unwrap();
        std::fs::create_dir_all(dir.path().join(PRIVATE_DIR)).unwrap();
        std::fs::write(dir.path().join(PRIVATE_DIR).join("sessions.db"), "x").unwrap();
        dir
    }

    #[test]
    fn plain_paths_resolve_inside() {
        let dir = workspace();
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(resolve(dir.path(), "a.txt").unwrap(), root.join("a.txt"));
        assert_eq!(
            resolve(dir.path(), "sub/b.png").unwrap(),
            root.join("sub/b.png")
        );
    }

    #[test]
    fn traversal_and_odd_syntax_are_refused() {
        let dir = workspace();
        for bad in [
            "../a.txt",
            "sub/../a.txt",
            "./a.txt",
            "sub//b.png",
            "sub\\b.png",
            "a.txt\0",
            "",
            "//etc/passwd",
        ] {
            assert_eq!(resolve(dir.path(), bad), Err(PathError::Invalid), "{bad:?}");
        }
    }

    #[test]
    fn symlinks_out_of_the_workspace_and_private_records_are_refused() {
        let dir = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("dirlink")).unwrap();
        assert_eq!(resolve(dir.path(), "link"), Err(PathError::Outside));
        assert_eq!(
            resolve(dir.path(), "dirlink/secret"),
            Err(PathError::Outside)
        );
        assert_eq!(
            resolve(dir.path(), ".openmanus/sessions.db"),
            Err(PathError::Outside)
        );
        assert_eq!(resolve(dir.path(), "sub"), Err(PathError::NotFound));
        assert_eq!(resolve(dir.path(), "missing"), Err(PathError::NotFound));
    }

    #[test]
    fn listing_skips_links_and_private_records() {
        let dir = workspace();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        let listing = list(dir.path()).unwrap();
        let paths: Vec<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.txt", "sub/b.png"]);
        assert_eq!(listing.files[1].content_type, "image/png");
        assert_eq!(listing.files[0].size, 1);
        assert!(!listing.truncated);
    }
}
