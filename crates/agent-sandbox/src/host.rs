//! File operations on a sandbox's workspace from the host side: the workspace is a host
//! directory, so both backends read, write and copy there, with the same path checks.

use std::path::{Path, PathBuf};

use crate::{SandboxError, path};

/// The host path of the sandbox path `path`, refused when it leaves the workspace.
fn resolve(workspace: &Path, work_dir: &Path, path: &str) -> Result<PathBuf, SandboxError> {
    path::resolve(workspace, work_dir, path)
}

/// [`Sandbox::read_file`](crate::Sandbox::read_file) on the host side of the workspace.
pub(crate) async fn read(
    workspace: &Path,
    work_dir: &Path,
    path: &str,
) -> Result<Vec<u8>, SandboxError> {
    let host = resolve(workspace, work_dir, path)?;
    let workspace = workspace.to_path_buf();
    blocking(move || {
        use std::io::Read;
        // Non-blocking, so that a FIFO does not wait for a writer; then only regular files.
        let mut file = open_beneath(
            &workspace,
            &host,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK,
        )?;
        let meta = file
            .metadata()
            .map_err(|e| SandboxError::at(&host, "reading", e))?;
        if !meta.is_file() {
            return Err(SandboxError::at(
                &host,
                "reading",
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
            ));
        }
        let mut contents = Vec::new();
        file.read_to_end(&mut contents)
            .map_err(|e| SandboxError::at(&host, "reading", e))?;
        Ok(contents)
    })
    .await
}

/// [`Sandbox::write_file`](crate::Sandbox::write_file) on the host side of the workspace.
pub(crate) async fn write(
    workspace: &Path,
    work_dir: &Path,
    path: &str,
    contents: &[u8],
) -> Result<(), SandboxError> {
    let host = resolve(workspace, work_dir, path)?;
    if let Some(parent) = host.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| SandboxError::at(parent, "creating", e))?;
        // The directories just created may have raced with a link; check again.
        resolve(workspace, work_dir, path)?;
    }
    let workspace = workspace.to_path_buf();
    let contents = contents.to_vec();
    blocking(move || {
        use rustix::fs::OFlags;
        use std::io::Write;
        let mut file = open_beneath(
            &workspace,
            &host,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC,
        )?;
        file.write_all(&contents)
            .map_err(|e| SandboxError::at(&host, "writing", e))
    })
    .await
}

/// [`Sandbox::copy_in`](crate::Sandbox::copy_in) on the host side of the workspace.
pub(crate) async fn copy_in(
    workspace: &Path,
    work_dir: &Path,
    host_source: &Path,
    path: &str,
) -> Result<(), SandboxError> {
    let target = resolve(workspace, work_dir, path)?;
    let source = host_source.to_path_buf();
    let workspace = workspace.to_path_buf();
    blocking(move || copy_tree(&source, &target, None, &workspace)).await
}

/// [`Sandbox::copy_out`](crate::Sandbox::copy_out) on the host side of the workspace.
pub(crate) async fn copy_out(
    workspace: &Path,
    work_dir: &Path,
    path: &str,
    host_target: &Path,
) -> Result<(), SandboxError> {
    let source = resolve(workspace, work_dir, path)?;
    let target = host_target.to_path_buf();
    let workspace = workspace.to_path_buf();
    blocking(move || copy_tree(&source, &target, Some(&workspace), &workspace)).await
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SandboxError> + Send + 'static,
) -> Result<T, SandboxError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| SandboxError::io("a file operation", std::io::Error::other(e)))?
}

/// Opens `host` (a checked path inside `workspace`) relative to the workspace with the kernel's
/// `RESOLVE_BENEATH`: whatever the path became since it was checked (a directory swapped for a
/// symbolic link by a process in the sandbox), the open cannot leave the workspace. Kernels
/// older than 5.6 lack `openat2`; there the path is opened as checked.
fn open_beneath(
    workspace: &Path,
    host: &Path,
    flags: rustix::fs::OFlags,
) -> Result<std::fs::File, SandboxError> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let relative = host
        .strip_prefix(workspace)
        .map_err(|_| SandboxError::PathRefused {
            path: host.display().to_string(),
            reason: format!("it is not inside the workspace {}", workspace.display()),
        })?;
    let relative = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    let dir = rustix::fs::open(
        workspace,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| SandboxError::at(workspace, "opening", e.into()))?;
    let opened = rustix::fs::openat2(
        &dir,
        relative,
        flags | OFlags::CLOEXEC,
        // A mode is only allowed (and used) when the open may create the file.
        if flags.contains(OFlags::CREATE) {
            Mode::from_raw_mode(0o644)
        } else {
            Mode::empty()
        },
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    );
    match opened {
        Ok(fd) => Ok(std::fs::File::from(fd)),
        Err(rustix::io::Errno::XDEV) => Err(SandboxError::PathRefused {
            path: host.display().to_string(),
            reason: format!("it leads out of the workspace {}", workspace.display()),
        }),
        Err(rustix::io::Errno::NOSYS) => {
            let mut options = std::fs::OpenOptions::new();
            options
                .read(!flags.contains(OFlags::WRONLY))
                .write(flags.contains(OFlags::WRONLY))
                .create(flags.contains(OFlags::CREATE))
                .truncate(flags.contains(OFlags::TRUNC));
            options
                .open(host)
                .map_err(|e| SandboxError::at(host, "opening", e))
        }
        Err(e) => Err(SandboxError::at(host, "opening", e.into())),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_refuses_an_open_that_a_link_leads_out_of_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::fs::create_dir(workspace.join("inner")).unwrap();
        std::fs::write(workspace.join("inner/ok.txt"), "ok").unwrap();
        // As if a process in the sandbox swapped a directory for a link after the check.
        std::os::unix::fs::symlink(outside.path(), workspace.join("swapped")).unwrap();
        std::os::unix::fs::symlink("inner", workspace.join("alias")).unwrap();
        let refused = open_beneath(
            &workspace,
            &workspace.join("swapped/secret"),
            rustix::fs::OFlags::RDONLY,
        );
        assert!(
            matches!(refused, Err(SandboxError::PathRefused { .. })),
            "{refused:?}"
        );
        let written = open_beneath(
            &workspace,
            &workspace.join("swapped/planted"),
            rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE,
        );
        assert!(written.is_err());
        assert!(!outside.path().join("planted").exists());
        // Links that stay inside still work.
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut open_beneath(
                &workspace,
                &workspace.join("alias/ok.txt"),
                rustix::fs::OFlags::RDONLY,
            )
            .unwrap(),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "ok");
    }
}
