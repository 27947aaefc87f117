//! The read cover of the Landlock mechanism: Landlock only grants, so "read everything but the
//! hidden paths" becomes rules on every directory and file beside the path to each hidden one.

use std::path::{Path, PathBuf};

/// What the tools may read.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Cover {
    /// Read (and execute) beneath each of these.
    pub(super) beneath: Vec<PathBuf>,
    /// Only list each of these: the directories on the way to a hidden path.
    pub(super) listed: Vec<PathBuf>,
}

/// The cover of `root` without `hidden` (canonical paths). Symbolic links are not followed: a
/// link's target is covered, or not, where it really is.
pub(super) fn cover(root: &Path, hidden: &[PathBuf]) -> Cover {
    let mut cover = Cover::default();
    walk(root, hidden, &mut cover);
    cover
}

fn walk(dir: &Path, hidden: &[PathBuf], cover: &mut Cover) {
    if hidden.iter().any(|path| path == dir) {
        return;
    }
    if !hidden.iter().any(|path| path.starts_with(dir)) {
        cover.beneath.push(dir.to_path_buf());
        return;
    }
    cover.listed.push(dir.to_path_buf());
    // A directory that cannot be listed cannot be read through the cover either: left out.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_symlink() {
            continue;
        }
        if kind.is_dir() {
            walk(&path, hidden, cover);
        } else if !hidden.contains(&path) {
            cover.beneath.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_way_to_a_hidden_path_is_listed_and_everything_beside_it_covered() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["home/u/.ssh", "home/u/code", "home/v", "usr/bin"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("home/u/.netrc"), "secret").unwrap();
        std::fs::write(root.join("home/u/notes"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("home/u/.ssh"), root.join("home/u/keys")).unwrap();
        let hidden = vec![root.join("home/u/.ssh"), root.join("home/u/.netrc")];
        let cover = cover(&root, &hidden);
        assert_eq!(
            cover.listed,
            [root.clone(), root.join("home"), root.join("home/u")]
        );
        assert_eq!(
            cover.beneath,
            [
                root.join("home/u/code"),
                root.join("home/u/notes"),
                root.join("home/v"),
                root.join("usr"),
            ]
        );
    }

    #[test]
    fn without_hidden_paths_the_root_is_covered_whole() {
        let cover = cover(Path::new("/"), &[]);
        assert_eq!(cover.beneath, [PathBuf::from("/")]);
        assert!(cover.listed.is_empty());
    }
}
