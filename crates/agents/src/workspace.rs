//! The workspace: the directory an agent's files live in, and what a run changed there
//! (OpenManus users had to go looking for their files).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

/// The default workspace, relative to the current directory (OpenManus's `workspace/`).
pub const DEFAULT_WORKSPACE: &str = "workspace";

/// Directories inside the workspace that are not part of the user's files.
const IGNORED: &[&str] = &[".openmanus"];

/// A listing of the files under a directory with their size and modification time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    files: BTreeMap<PathBuf, (u64, Option<SystemTime>)>,
    /// The listing stopped at [`SNAPSHOT_LIMIT`] files.
    partial: bool,
}

/// A snapshot lists at most this many files.
pub const SNAPSHOT_LIMIT: usize = 10_000;

/// What changed in the workspace between two snapshots (paths relative to the workspace).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WorkspaceChanges {
    /// New files.
    pub created: Vec<PathBuf>,
    /// Files whose size or modification time changed.
    pub modified: Vec<PathBuf>,
    /// Files that are gone.
    pub deleted: Vec<PathBuf>,
    /// A snapshot stopped at [`SNAPSHOT_LIMIT`] files, so changes beyond it are not listed
    /// (and deletions are not reported, since unlisted files would look deleted).
    pub partial: bool,
}

impl WorkspaceChanges {
    /// True when nothing changed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.created.is_empty() && self.modified.is_empty() && self.deleted.is_empty()
    }
}

impl Snapshot {
    /// Lists `root` (up to [`SNAPSHOT_LIMIT`] files, hidden bookkeeping directories skipped;
    /// [`Snapshot::is_partial`] tells whether the limit was hit). A missing or unreadable
    /// directory gives an empty snapshot.
    #[must_use]
    pub fn take(root: &Path) -> Self {
        let mut files = BTreeMap::new();
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if files.len() >= SNAPSHOT_LIMIT {
                    return Self {
                        files,
                        partial: true,
                    };
                }
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    let name = entry.file_name();
                    if !IGNORED.iter().any(|i| name == *i) {
                        pending.push(path);
                    }
                } else if kind.is_file()
                    && let Ok(meta) = entry.metadata()
                    && let Ok(relative) = path.strip_prefix(root)
                {
                    files.insert(relative.to_path_buf(), (meta.len(), meta.modified().ok()));
                }
            }
        }
        Self {
            files,
            partial: false,
        }
    }

    /// Whether the listing stopped at [`SNAPSHOT_LIMIT`] files.
    #[must_use]
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// What changed from `self` (before) to `after`.
    #[must_use]
    pub fn changes(&self, after: &Self) -> WorkspaceChanges {
        let mut changes = WorkspaceChanges::default();
        for (path, stamp) in &after.files {
            match self.files.get(path) {
                None => changes.created.push(path.clone()),
                Some(before) if before != stamp => changes.modified.push(path.clone()),
                Some(_) => {}
            }
        }
        changes.partial = self.partial || after.partial;
        if !changes.partial {
            changes.deleted = self
                .files
                .keys()
                .filter(|p| !after.files.contains_key(*p))
                .cloned()
                .collect();
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_modified_and_deleted_files_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("keep.txt"), "a").unwrap();
        std::fs::write(root.join("edit.txt"), "a").unwrap();
        std::fs::write(root.join("gone.txt"), "a").unwrap();
        std::fs::create_dir_all(root.join(".openmanus/runs")).unwrap();
        let before = Snapshot::take(root);

        std::fs::write(root.join("edit.txt"), "longer").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/new.txt"), "x").unwrap();
        std::fs::write(root.join(".openmanus/runs/journal.jsonl"), "{}").unwrap();
        let changes = before.changes(&Snapshot::take(root));

        assert_eq!(changes.created, [PathBuf::from("sub/new.txt")]);
        assert_eq!(changes.modified, [PathBuf::from("edit.txt")]);
        assert_eq!(changes.deleted, [PathBuf::from("gone.txt")]);
        assert!(
            Snapshot::take(&root.join("missing"))
                .changes(&Snapshot::default())
                .is_empty()
        );
    }

    #[test]
    fn a_workspace_over_the_limit_gives_partial_changes_without_false_deletions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for i in 0..SNAPSHOT_LIMIT + 5 {
            std::fs::write(root.join(format!("f{i}")), "").unwrap();
        }
        let before = Snapshot::take(root);
        assert!(before.is_partial());
        let after = Snapshot::take(root);
        let changes = before.changes(&after);
        assert!(changes.partial);
        assert!(changes.deleted.is_empty());
        let small = tempfile::tempdir().unwrap();
        std::fs::write(small.path().join("a"), "").unwrap();
        let snapshot = Snapshot::take(small.path());
        assert!(!snapshot.is_partial());
        assert!(!snapshot.changes(&snapshot).partial);
    }
}
