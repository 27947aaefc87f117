//! `EditorError`: every failure `str_replace_editor` reports, with OpenManus's wording.

use thiserror::Error;

use crate::ToolError;

/// Why a `str_replace_editor` call failed. The `Display` text is what the model reads (after
/// `Error: `); the wording is OpenManus's (spec §4.5) except for the variants marked as ours.
///
/// Every variant becomes a [`ToolError::Failure`], so the agent shows it as the call's error
/// result.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EditorError {
    /// The path is relative. `hint` is empty, or (ours) a sentence pointing at the workspace root.
    #[error("The path {path} is not an absolute path{hint}")]
    NotAbsolute {
        /// The path, normalised the way Python's `pathlib` prints it.
        path: String,
        /// Extra guidance, starting with `. ` when present.
        hint: String,
    },
    /// (Ours.) The path lies outside the workspace root, lexically or through a symlink.
    #[error(
        "The path {path} is outside the workspace root {root}{resolved}. Only paths inside {root} can be used."
    )]
    OutsideWorkspace {
        /// The path, normalised the way Python's `pathlib` prints it.
        path: String,
        /// The workspace root as configured.
        root: String,
        /// Empty, or ` (it resolves to {real path})` when symlinks or `..` lead elsewhere.
        resolved: String,
    },
    /// (Ours.) The path is one of the agent's configuration files, which hold its API keys.
    #[error(
        "The path {path} is the agent's configuration, which holds its API keys: the file tools do not open it."
    )]
    Secret {
        /// The path, normalised the way Python's `pathlib` prints it.
        path: String,
    },
    /// (Ours.) The run's file system is read-only (`[permissions] sandbox = "read-only"`): the
    /// command would write.
    #[error(
        "The file system is read-only in this run (sandbox mode read-only): `{command}` would write {path}, so it was not run. Only `view` works; tell the user if a change is needed."
    )]
    ReadOnly {
        /// The command (`create`, `str_replace`, `insert`, `undo_edit`).
        command: &'static str,
        /// The path as given.
        path: String,
    },
    /// (Ours.) The workspace root itself cannot be resolved.
    #[error("The workspace root {root} cannot be used: {reason}")]
    WorkspaceRoot {
        /// The workspace root as configured.
        root: String,
        /// The operating system's reason.
        reason: String,
    },
    /// (Ours.) The path cannot be resolved (a symlink loop, an unreadable directory on the way).
    #[error("The path {path} cannot be resolved: {reason}")]
    Unresolvable {
        /// The path, normalised the way Python's `pathlib` prints it.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
    /// Nothing exists at the path (every command except `create`).
    #[error("The path {path} does not exist. Please provide a valid path.")]
    NotFound {
        /// The path, normalised the way Python's `pathlib` prints it.
        path: String,
    },
    /// A command other than `view` on a directory.
    #[error(
        "The path {path} is a directory and only the `view` command can be used on directories"
    )]
    IsDirectory {
        /// The path, normalised the way Python's `pathlib` prints it.
        path: String,
    },
    /// `create` on a path that exists.
    #[error("File already exists at: {path}. Cannot overwrite files using command `create`.")]
    AlreadyExists {
        /// The path, normalised the way Python's `pathlib` prints it.
        path: String,
    },
    /// A parameter the command needs is missing.
    #[error("Parameter `{parameter}` is required for command: {command}")]
    MissingParameter {
        /// The parameter's name.
        parameter: &'static str,
        /// The command's name.
        command: &'static str,
    },
    /// `view_range` with a directory.
    #[error("The `view_range` parameter is not allowed when `path` points to a directory.")]
    ViewRangeOnDirectory,
    /// `view_range` is not two integers.
    #[error("Invalid `view_range`. It should be a list of two integers.")]
    ViewRangeShape,
    /// The first line of `view_range` is not a line of the file.
    #[error(
        "Invalid `view_range`: [{start}, {end}]. Its first element `{start}` should be within the range of lines of the file: [1, {lines}]"
    )]
    ViewRangeStart {
        /// The first element.
        start: i64,
        /// The second element.
        end: i64,
        /// How many lines the file has.
        lines: usize,
    },
    /// The last line of `view_range` is past the end of the file.
    #[error(
        "Invalid `view_range`: [{start}, {end}]. Its second element `{end}` should be smaller than the number of lines in the file: `{lines}`"
    )]
    ViewRangeEnd {
        /// The first element.
        start: i64,
        /// The second element.
        end: i64,
        /// How many lines the file has.
        lines: usize,
    },
    /// The last line of `view_range` is before its first (and is not `-1`).
    #[error(
        "Invalid `view_range`: [{start}, {end}]. Its second element `{end}` should be larger or equal than its first `{start}`"
    )]
    ViewRangeOrder {
        /// The first element.
        start: i64,
        /// The second element.
        end: i64,
    },
    /// `old_str` does not occur in the file.
    #[error("No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")]
    NoMatch {
        /// `old_str` with its tabs expanded.
        old: String,
        /// The path as given.
        path: String,
    },
    /// `old_str` occurs more than once.
    #[error(
        "No replacement was performed. Multiple occurrences of old_str `{old}` in lines {lines}. Please ensure it is unique"
    )]
    MultipleMatches {
        /// `old_str` with its tabs expanded.
        old: String,
        /// The line numbers as a Python list, for example `[2, 5]`.
        lines: String,
    },
    /// `insert_line` is outside `[0, lines]`.
    #[error(
        "Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {lines}]"
    )]
    InsertLine {
        /// The requested line.
        line: i64,
        /// How many lines the file has.
        lines: usize,
    },
    /// `undo_edit` with nothing to undo.
    #[error("No edit history found for {path}.")]
    NoHistory {
        /// The path as given.
        path: String,
    },
    /// The file cannot be read, or is not UTF-8 text.
    #[error("Failed to read {path}: {reason}")]
    Read {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file cannot be written.
    #[error("Failed to write to {path}: {reason}")]
    Write {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
}

impl From<EditorError> for ToolError {
    fn from(error: EditorError) -> Self {
        ToolError::Failure(error.to_string())
    }
}
