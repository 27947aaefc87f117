//! SandboxManus's tools over a [`Sandbox`](crate::Sandbox): `sandbox_shell` (named sessions),
//! `sandbox_files` (create, replace, rewrite, delete, read) and `sandbox_vision` (see an image
//! of the workspace). The fourth, `sandbox_browser`, is agent-browser's `browser_use` started
//! inside the sandbox (see [`LocalSandbox::browser_launcher`](crate::LocalSandbox::browser_launcher)).

mod files;
mod shell;
mod vision;

pub use files::{FilesAction, FilesArgs, SANDBOX_FILES, SandboxFiles};
pub use shell::{SANDBOX_SHELL, SandboxShell, ShellAction, ShellArgs};
pub use vision::{
    Compressed, MAX_IMAGE_BYTES, MAX_OUTPUT_BYTES, MAX_SIZE, SANDBOX_VISION, SandboxVision,
    VisionAction, VisionArgs, compress,
};

/// `text` quoted for a POSIX shell.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `folder` as a path relative to the workspace: the work dir (`/workspace` by default) in
/// front, or a leading `/` or `workspace/`, is dropped (as OpenManus's `clean_path` does); `..`
/// is refused (OpenManus let it through).
pub(crate) fn relative_folder(folder: &str, work_dir: &str) -> Result<String, String> {
    let folder = folder.trim();
    let work_dir = work_dir.trim_end_matches('/');
    let folder = if !work_dir.is_empty() && folder == work_dir {
        ""
    } else {
        folder
            .strip_prefix(&format!("{work_dir}/"))
            .unwrap_or(folder)
    };
    let trimmed = folder.trim_start_matches('/');
    let trimmed = trimmed
        .strip_prefix("workspace/")
        .or_else(|| (trimmed == "workspace").then_some(""))
        .unwrap_or(trimmed);
    if trimmed.split('/').any(|part| part == "..") {
        return Err(format!("the folder {folder:?} leaves the workspace"));
    }
    Ok(trimmed.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn folders_are_relative_to_the_workspace_and_cannot_leave_it() {
        assert_eq!(
            relative_folder("/workspace/src/", "/workspace").unwrap(),
            "src"
        );
        assert_eq!(relative_folder("workspace", "/workspace").unwrap(), "");
        assert_eq!(relative_folder("a/b", "/workspace").unwrap(), "a/b");
        assert_eq!(relative_folder("/sandbox/src", "/sandbox").unwrap(), "src");
        assert_eq!(relative_folder("/sandbox", "/sandbox/").unwrap(), "");
        assert!(relative_folder("../etc", "/workspace").is_err());
        assert!(relative_folder("a/../../x", "/workspace").is_err());
    }
}
