//! The bubblewrap launcher of a confinement: the host's root read-only at its own paths, a
//! private `/tmp`, the hidden paths covered, the writable ones bound back read-write.

use std::path::PathBuf;

use agent_config::SandboxMode;

use super::{ConfineError, ConfinementOptions, text};

/// One mount over the read-only root, applied shallowest first so that a hidden directory
/// inside a writable one stays hidden and a writable one inside a hidden one stays writable.
enum Mount {
    /// Bound back read-only: the workspace in `read-only` mode, which would be invisible
    /// under the private `/tmp` otherwise.
    Visible(PathBuf),
    Writable(PathBuf),
    Hidden(PathBuf),
}

impl Mount {
    fn path(&self) -> &PathBuf {
        match self {
            Self::Visible(path) | Self::Writable(path) | Self::Hidden(path) => path,
        }
    }
}

/// `bwrap …options… --` (append the program and its arguments).
pub(super) fn launcher(options: &ConfinementOptions) -> Result<Vec<String>, ConfineError> {
    let mut args: Vec<String> = vec!["bwrap".to_owned()];
    let mut push = |items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
    push(&[
        "--unshare-user",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]);
    if !options.network_allowed() {
        push(&["--unshare-net"]);
    }
    // --new-session: no TIOCSTI into the terminal openmanus runs in; --die-with-parent and the
    // PID namespace: killing bwrap's process group ends every process of the tool.
    push(&["--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
    push(&["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
    push(&["--tmpfs", "/tmp"]);
    let visible = (options.mode == SandboxMode::ReadOnly)
        .then(|| std::fs::canonicalize(&options.workspace).ok())
        .flatten();
    let mut mounts: Vec<Mount> = visible
        .into_iter()
        .map(Mount::Visible)
        .chain(options.writable_dirs().into_iter().map(Mount::Writable))
        .chain(options.hidden_paths().into_iter().map(Mount::Hidden))
        .collect();
    // Shallowest first; at equal depth the hidden after the writable (hidden wins).
    mounts.sort_by_key(|mount| {
        (
            mount.path().components().count(),
            matches!(mount, Mount::Hidden(_)),
        )
    });
    for mount in &mounts {
        match mount {
            Mount::Visible(path) => {
                let path = text(path)?;
                push(&["--ro-bind", &path, &path]);
            }
            Mount::Writable(path) => {
                let path = text(path)?;
                push(&["--bind", &path, &path]);
            }
            Mount::Hidden(path) if path.is_dir() => push(&["--tmpfs", &text(path)?]),
            Mount::Hidden(path) => push(&["--ro-bind", "/dev/null", &text(path)?]),
        }
    }
    if let Some(workspace) = std::fs::canonicalize(&options.workspace)
        .ok()
        .filter(|workspace| workspace.is_dir())
    {
        push(&["--chdir", &text(&workspace)?]);
    }
    push(&["--setenv", "TMPDIR", "/tmp", "--"]);
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(args: &[String], flag: &str) -> Vec<String> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].clone())
            .collect()
    }

    #[test]
    fn a_hidden_directory_inside_the_workspace_is_covered_after_the_workspace_is_bound() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        std::fs::create_dir(workspace.join(".ssh")).unwrap();
        let options = ConfinementOptions {
            hidden: vec![workspace.join(".ssh"), workspace.join("absent")],
            ..ConfinementOptions::new(SandboxMode::WorkspaceWrite, &workspace)
        };
        let args = launcher(&options).unwrap();
        let ws = workspace.to_str().unwrap().to_owned();
        let bind = args.iter().position(|a| a == "--bind").unwrap();
        assert_eq!(args[bind + 1], ws);
        let hidden = format!("{ws}/.ssh");
        let tmpfs = args.iter().rposition(|a| *a == hidden).unwrap();
        assert!(tmpfs > bind, "{args:?}");
        assert!(!args.iter().any(|a| a.ends_with("/absent")));
        assert!(args.contains(&"--unshare-net".to_owned()));
        assert_eq!(args.last().map(String::as_str), Some("--"));
    }

    #[test]
    fn read_only_binds_nothing_writable_and_full_network_needs_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let read_only = launcher(&ConfinementOptions::new(SandboxMode::ReadOnly, dir.path()));
        assert!(pairs(&read_only.unwrap(), "--bind").is_empty());
        let networked = ConfinementOptions {
            network: true,
            ..ConfinementOptions::new(SandboxMode::WorkspaceWrite, dir.path())
        };
        assert!(
            !launcher(&networked)
                .unwrap()
                .contains(&"--unshare-net".to_owned())
        );
        let read_only_networked = ConfinementOptions {
            network: true,
            ..ConfinementOptions::new(SandboxMode::ReadOnly, dir.path())
        };
        assert!(
            launcher(&read_only_networked)
                .unwrap()
                .contains(&"--unshare-net".to_owned()),
            "read-only never has the network"
        );
    }
}
