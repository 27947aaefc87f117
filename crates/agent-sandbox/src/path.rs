//! Resolution of sandbox paths to host paths inside the workspace.

use std::path::{Component, Path, PathBuf};

use crate::SandboxError;

/// Resolves `path` (absolute under `work_dir`, or relative to it) to a host path inside
/// `workspace` (canonical). Refuses `..` segments, absolute paths elsewhere, and any existing
/// symbolic link on the way that points out of the workspace (or nowhere).
pub(crate) fn resolve(
    workspace: &Path,
    work_dir: &Path,
    path: &str,
) -> Result<PathBuf, SandboxError> {
    let refuse = |reason: &str| SandboxError::PathRefused {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    if path.is_empty() {
        return Err(refuse("the path is empty"));
    }
    let given = Path::new(path);
    let relative = if given.is_absolute() {
        given.strip_prefix(work_dir).map_err(|_| {
            refuse(&format!(
                "it is outside the workspace {}",
                work_dir.display()
            ))
        })?
    } else {
        given
    };
    let mut host = workspace.to_path_buf();
    for component in relative.components() {
        match component {
            Component::Normal(part) => {
                host.push(part);
                check_link(workspace, &host).map_err(|reason| refuse(&reason))?;
            }
            Component::CurDir => {}
            Component::ParentDir => return Err(refuse("it contains a `..` segment")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse("it is not a plain path"));
            }
        }
    }
    Ok(host)
}

/// Fails when `host` is a symbolic link whose target is not inside `workspace`.
fn check_link(workspace: &Path, host: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(host) else {
        return Ok(());
    };
    if !meta.file_type().is_symlink() {
        return Ok(());
    }
    match std::fs::canonicalize(host) {
        Ok(target) if target.starts_with(workspace) => Ok(()),
        Ok(target) => Err(format!(
            "the symbolic link {} points outside the workspace, to {}",
            host.display(),
            target.display()
        )),
        Err(_) => Err(format!(
            "the symbolic link {} points to nothing (it could be used to create a file outside the workspace)",
            host.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::resolve;
    use std::path::Path;

    #[test]
    fn resolves_and_refuses() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let ws = std::fs::canonicalize(dir.path())?;
        let wd = Path::new("/workspace");
        assert_eq!(resolve(&ws, wd, "a/b.txt").ok(), Some(ws.join("a/b.txt")));
        assert_eq!(resolve(&ws, wd, "/workspace/./c").ok(), Some(ws.join("c")));
        assert!(resolve(&ws, wd, "../x").is_err());
        assert!(resolve(&ws, wd, "a/../../x").is_err());
        assert!(resolve(&ws, wd, "/etc/passwd").is_err());
        assert!(resolve(&ws, wd, "/workspacex/a").is_err());
        assert!(resolve(&ws, wd, "").is_err());
        std::os::unix::fs::symlink("/etc", ws.join("out"))?;
        assert!(resolve(&ws, wd, "out/passwd").is_err());
        std::os::unix::fs::symlink("/nonexistent/file", ws.join("dangling"))?;
        assert!(resolve(&ws, wd, "dangling").is_err());
        std::fs::create_dir(ws.join("in"))?;
        std::os::unix::fs::symlink(ws.join("in"), ws.join("inlink"))?;
        assert_eq!(resolve(&ws, wd, "inlink/f").ok(), Some(ws.join("inlink/f")));
        Ok(())
    }
}
