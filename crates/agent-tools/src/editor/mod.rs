//! `str_replace_editor`: view, create and edit text files (OpenManus's
//! `app/tool/str_replace_editor.py`, spec §4.5), with the weaknesses of spec §13 W14 fixed.
//!
//! [`StrReplaceEditor`] is the tool; it reaches files through a [`FileOperator`]
//! ([`LocalFileOperator`] by default). Its failures are [`EditorError`]s, which the model reads as
//! `Error: {message}`.
//!
//! ```
//! use agent_tools::editor::StrReplaceEditor;
//! use agent_tools::{Tool, ToolContext};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("notes.txt").display().to_string();
//! let editor = StrReplaceEditor::new().with_workspace_root(dir.path());
//! let ctx = ToolContext::default();
//!
//! let created = editor
//!     .execute(json!({"command": "create", "path": path, "file_text": "one\ntwo\n"}), &ctx)
//!     .await
//!     .unwrap();
//! assert_eq!(created.to_string(), format!("File created successfully at: {path}"));
//!
//! let viewed = editor
//!     .execute(json!({"command": "view", "path": path, "view_range": [2, -1]}), &ctx)
//!     .await
//!     .unwrap();
//! assert_eq!(
//!     viewed.to_string(),
//!     format!("Here's the result of running `cat -n` on {path}:\n     2\ttwo\n     3\t\n")
//! );
//!
//! let refused = editor
//!     .execute(json!({"command": "view", "path": "/etc/hostname"}), &ctx)
//!     .await
//!     .unwrap_err();
//! assert!(refused.to_string().starts_with("The path /etc/hostname is outside the workspace root"));
//! # });
//! ```
//!
//! Why one file past 700 lines (its tests included): the five commands and every message of spec §4.5 (compatibility
//! strings the model reads) stand together so they can be checked against the spec side by side;
//! file access, text handling and errors are already apart (`operator.rs`, `text.rs`,
//! `error.rs`).

mod error;
mod operator;
mod text;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde_json::Value;
use tracing::debug;

pub use error::EditorError;
pub use operator::{DirEntry, FileOperator, LocalFileOperator, Opened, PathKind, ReadIf};
pub use text::{MAX_RESPONSE_LEN, SNIPPET_LINES, TRUNCATED_MESSAGE};

use crate::{ToolContext, ToolError, ToolResult, TypedTool};
use text::{cat_n, find_occurrences, line_slice, list_repr, start_lines};

/// The tool's name, as the model calls it.
pub const STR_REPLACE_EDITOR: &str = "str_replace_editor";

/// How many earlier versions of one file `undo_edit` can go back to by default.
pub const DEFAULT_HISTORY_LIMIT: usize = 20;

/// The operation `str_replace_editor` performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EditorCommand {
    /// Show a file with line numbers, or list a directory.
    View,
    /// Write a new file.
    Create,
    /// Replace the one occurrence of `old_str` with `new_str`.
    StrReplace,
    /// Insert `new_str` after line `insert_line`.
    Insert,
    /// Restore the file as it was before its last edit.
    UndoEdit,
}

impl EditorCommand {
    /// The name the model uses (`view`, `create`, `str_replace`, `insert`, `undo_edit`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Create => "create",
            Self::StrReplace => "str_replace",
            Self::Insert => "insert",
            Self::UndoEdit => "undo_edit",
        }
    }

    /// Whether the command writes to the file system.
    fn writes(self) -> bool {
        !matches!(self, Self::View)
    }

    /// Whether it reads the file (which is then read with the path's resolution).
    fn reads(self) -> bool {
        matches!(self, Self::View | Self::StrReplace | Self::Insert)
    }
}

/// Arguments of `str_replace_editor` (the parameter names are OpenManus's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EditorArgs {
    /// Which operation to run: `view`, `create`, `str_replace`, `insert` or `undo_edit`.
    pub command: EditorCommand,
    /// Absolute path of the file or directory to work on.
    pub path: String,
    /// For `create`: the complete content of the new file.
    pub file_text: Option<String>,
    /// For `str_replace`: the exact text to replace. It must occur exactly once in the file.
    pub old_str: Option<String>,
    /// For `str_replace`: the text that replaces `old_str` (leave it out to delete `old_str`).
    /// For `insert`: the text to insert.
    pub new_str: Option<String>,
    /// For `insert`: the line after which `new_str` goes; 0 inserts it before the first line.
    #[serde(default)]
    #[schemars(schema_with = "integer_schema")]
    pub insert_line: Option<i64>,
    /// For `view` of a file: the first and last line to show, counted from 1, such as `[10, 20]`;
    /// a last line of -1 shows everything from the first line to the end. Without it the whole
    /// file is shown.
    // Kept as raw JSON so that a malformed range gets OpenManus's message instead of a
    // deserialisation error; the schema still says "array of integers".
    #[serde(default)]
    #[schemars(schema_with = "integer_array_schema")]
    pub view_range: Option<Value>,
}

/// `{"type": "integer"}`, without the `format` schemars would add for `i64`.
fn integer_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer"})
}

/// `{"type": "array", "items": {"type": "integer"}}`.
fn integer_array_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "array", "items": {"type": "integer"}})
}

/// `str_replace_editor`: views, creates and edits text files, with an undo history per file.
///
/// Every message of OpenManus's tool (spec §4.5) is kept word for word: the validation messages,
/// the `cat -n` blocks (numbers right-aligned in six columns, a tab, the line; tabs shown
/// expanded), the 16000-character clip with its `<response clipped><NOTE>…</NOTE>` notice, the
/// ±4-line snippets, the success sentences and the `view_range` checks in their order.
///
/// # Where it differs from OpenManus
///
/// These are deliberate (spec §13 W14 and W31) and change what the model sees only where noted:
///
/// * **Directory listing in Rust.** No shell `find` (OpenManus passed the path unquoted). The
///   listing looks like the output of `find {path} -maxdepth 2 -not -path '*/.*'`: the path as
///   given, then every entry's path, one per line, inside the same sentence. Differences: entries
///   are sorted (by name, each directory followed by its own entries); hidden entries (names
///   starting with `.`) are skipped at both levels while the listed path itself is always shown
///   (find's pattern also hid everything below a path such as `/a/.b` or `/a/./b`); symlinks to
///   directories are listed but not entered (as find does); an unreadable subdirectory adds a line
///   `Note: the contents of {dir} could not be listed: {reason}` after the listing instead of
///   replacing the whole listing with `Error: {stderr}`.
/// * **Tabs are preserved.** OpenManus ran `expandtabs()` over the whole file on every
///   `str_replace` and `insert`, destroying tabs in Makefiles and Go code. Here only the replaced
///   or inserted text changes; every other byte stays as it was. Matching `old_str`: an exact
///   match is looked for first. If there is none and a tab is involved, `old_str` is matched
///   against the file as `view` shows it (tabs expanded, 8 columns, as in OpenManus), and only
///   matches that begin and end on whole characters of the file count; the matched text of the
///   file (tabs and all) is what gets replaced. `new_str` is written exactly as given (a tab
///   stays a tab, spaces stay spaces). Messages quote `old_str` tab-expanded, as OpenManus did.
/// * **Exact undo.** The history holds the file's previous text exactly (OpenManus kept the
///   tab-expanded text). It is keyed by the resolved path (symlinks and `.`/`..` resolved), so
///   `/tmp/a/./b`, `/tmp/a/b` and a symlink to it share one history (OpenManus keyed by the raw
///   string). It is bounded: [`DEFAULT_HISTORY_LIMIT`] versions per file by default
///   ([`StrReplaceEditor::with_history_limit`]); the oldest is forgotten first.
/// * **`create` is not an edit to undo.** OpenManus pushed `file_text` onto the history, so an
///   `undo_edit` right after `create` rewrote the same text and claimed success. Here it answers
///   `No edit history found for {path}.`
/// * **`create` makes missing parent directories.**
/// * **The "Multiple occurrences" line list** gives the line on which each occurrence starts
///   (without duplicates). For a one-line `old_str` this is OpenManus's list; for a multi-line
///   one OpenManus printed `[]`.
/// * **Paths are resolved before use.** Symlinks and `..` are resolved (like `realpath -m`) and
///   the file system is used through the resolved path; every message still shows the path as
///   OpenManus did (the validation messages the `pathlib`-normalised form, the others the path as
///   given). One visible effect: `/a/missing/../b` reaches `/a/b`, where Python failed.
/// * **Workspace confinement** (optional, [`StrReplaceEditor::with_workspace_root`]): a path
///   whose resolved form is outside the root — directly, through `..` or through a symlink,
///   including a dangling one, for paths that do not exist yet as well — is refused with
///   [`EditorError::OutsideWorkspace`], which names the root. With a root set, the message for a
///   relative path adds a hint naming the root. The tool description then names the root too.
///   The check and the file access are separate steps: this keeps a model's paths inside the
///   workspace, but does not defend against another process swapping symlinks in between.
/// * **Only UTF-8 text.** A file that is not valid UTF-8, or not a regular file (a FIFO, a
///   device), gives `Failed to read {path}: {reason}` instead of garbage or a hang. Error reasons
///   are Rust's `io::Error` texts, not Python's.
/// * **Line endings are kept.** OpenManus read files with universal newlines and so turned CRLF
///   into LF on every edit. Here a `\r` stays part of its line (and shows in `view`); an
///   `old_str` spanning lines of a CRLF file must contain the `\r`.
/// * **Arguments are validated by serde** (architecture W16): an unknown `command` is an
///   invalid-arguments problem, so OpenManus's `Unrecognized command …` text never appears. A
///   `view_range` that is not a list of two integers still gets OpenManus's message.
/// * **Edits are serialised.** Calls that write hold a per-tool lock, so two concurrent edits of
///   one tool cannot interleave their read-modify-write.
pub struct StrReplaceEditor {
    operator: Arc<dyn FileOperator>,
    workspace_root: Option<PathBuf>,
    denied: Vec<PathBuf>,
    /// The resolved root and denied paths, worked out on the first call that needs them: they
    /// do not move during a run, and resolving them every call cost a file-system round trip
    /// each. A failed resolution is not kept (the next call tries again).
    fixed: tokio::sync::OnceCell<Arc<Fixed>>,
    description: String,
    history_limit: usize,
    history: Mutex<HashMap<PathBuf, VecDeque<String>>>,
    edits: tokio::sync::Mutex<()>,
    read_only: bool,
}

impl std::fmt::Debug for StrReplaceEditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrReplaceEditor")
            .field("operator", &self.operator)
            .field("workspace_root", &self.workspace_root)
            .field("denied", &self.denied)
            .field("history_limit", &self.history_limit)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl Default for StrReplaceEditor {
    fn default() -> Self {
        Self::new()
    }
}

/// The resolved forms of the editor's fixed paths.
#[derive(Debug)]
struct Fixed {
    root: Option<PathBuf>,
    denied: Vec<PathBuf>,
}

impl Fixed {
    /// Whether the resolved path `real` is outside the workspace.
    fn outside(&self, real: &Path) -> bool {
        self.root
            .as_ref()
            .is_some_and(|root| !real.starts_with(root))
    }

    /// Whether the resolved path `real` is one of the denied paths.
    fn denies(&self, real: &Path) -> bool {
        self.denied.iter().any(|denied| denied == real)
    }
}

/// The path of one call in its three forms.
struct Target {
    /// As given (control characters escaped, [`printable`]): used in every message after
    /// validation, as OpenManus does.
    raw: String,
    /// Normalised like Python's `pathlib`: used in the validation messages.
    shown: String,
    /// Resolved: used for file-system access and as the history key.
    real: PathBuf,
    /// The file's content, read with the resolution (taken by the first read).
    content: std::sync::Mutex<Option<std::io::Result<Vec<u8>>>>,
}

impl Target {
    fn read_error(&self, error: &std::io::Error) -> EditorError {
        EditorError::Read {
            path: self.raw.clone(),
            reason: error.to_string(),
        }
    }
}

impl StrReplaceEditor {
    /// An editor on the local file system, with no workspace root and the default history limit.
    #[must_use]
    pub fn new() -> Self {
        Self {
            operator: Arc::new(LocalFileOperator),
            workspace_root: None,
            denied: Vec::new(),
            fixed: tokio::sync::OnceCell::new(),
            description: describe(None),
            history_limit: DEFAULT_HISTORY_LIMIT,
            history: Mutex::new(HashMap::new()),
            edits: tokio::sync::Mutex::new(()),
            read_only: false,
        }
    }

    /// Reaches files through `operator` instead of the local file system (for example a sandbox).
    #[must_use]
    pub fn with_file_operator(mut self, operator: Arc<dyn FileOperator>) -> Self {
        self.operator = operator;
        // The root and the denied paths are resolved through the operator: again, by this one.
        self.fixed = tokio::sync::OnceCell::new();
        self
    }

    /// Confines every path to `root`: a path that is, or resolves (through `..` or symlinks) to,
    /// a place outside `root` is refused. `root` itself is resolved once, on the first call, so a
    /// root that is a symlink works; a relative `root` is taken from the process's current
    /// directory.
    #[must_use]
    pub fn with_workspace_root(mut self, root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        self.description = describe(Some(&root));
        self.workspace_root = Some(root);
        self.fixed = tokio::sync::OnceCell::new();
        self
    }

    /// Refuses `paths` even inside the workspace (they, or what they resolve to on the first
    /// call): the agent's own configuration files, which hold its API keys.
    #[must_use]
    pub fn with_denied_paths(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.denied.extend(paths);
        self.fixed = tokio::sync::OnceCell::new();
        self
    }

    /// Refuses every command that writes (`create`, `str_replace`, `insert`, `undo_edit`):
    /// the run's sandbox mode is `read-only`. `view` works as usual.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Keeps at most `limit` earlier versions per file for `undo_edit` (0 disables undo).
    #[must_use]
    pub fn with_history_limit(mut self, limit: usize) -> Self {
        self.history_limit = limit;
        self
    }

    /// The workspace root, if paths are confined.
    #[must_use]
    pub fn workspace_root(&self) -> Option<&Path> {
        self.workspace_root.as_deref()
    }

    /// Checks that `raw` is absolute and inside the workspace, resolves it, and says what it
    /// points to.
    /// With `read`, the file's content is read in the same trip when the path is an allowed
    /// regular file (see [`FileOperator::open`]).
    async fn target(&self, raw: &str, read: bool) -> Result<(Target, PathKind), EditorError> {
        let shown = pathlib_form(raw);
        if !Path::new(raw).is_absolute() {
            let hint = self
                .workspace_root
                .as_ref()
                .map_or_else(String::new, |root| {
                    format!(
                        ". Use an absolute path inside the workspace root {}, for example {}",
                        printable(&root.display().to_string()),
                        printable(&example_inside(root, raw).display().to_string())
                    )
                });
            return Err(EditorError::NotAbsolute { path: shown, hint });
        }
        let fixed = Arc::clone(self.fixed().await?);
        let read_if: ReadIf = if read {
            let fixed = Arc::clone(&fixed);
            Box::new(move |real| !fixed.outside(real) && !fixed.denies(real))
        } else {
            Box::new(|_| false)
        };
        let Opened {
            real,
            kind,
            content,
        } = self
            .operator
            .open(Path::new(raw), read_if)
            .await
            .map_err(|e| EditorError::Unresolvable {
                path: shown.clone(),
                reason: e.to_string(),
            })?;
        if let Some(root) = &self.workspace_root
            && fixed.outside(&real)
        {
            let resolved = if Path::new(&shown) == real {
                String::new()
            } else {
                format!(" (it resolves to {})", real.display())
            };
            return Err(EditorError::OutsideWorkspace {
                path: shown,
                root: root.display().to_string(),
                resolved,
            });
        }
        if fixed.denies(&real) {
            return Err(EditorError::Secret { path: shown });
        }
        let target = Target {
            raw: printable(raw),
            shown,
            real,
            content: std::sync::Mutex::new(content),
        };
        // Asked with the resolution (one trip), reported only now that the path is allowed.
        let kind = kind.map_err(|e| target.read_error(&e))?;
        Ok((target, kind))
    }

    /// The resolved root and denied paths (resolved on the first call).
    async fn fixed(&self) -> Result<&Arc<Fixed>, EditorError> {
        self.fixed
            .get_or_try_init(|| async {
                let root = match &self.workspace_root {
                    Some(root) => Some(self.operator.resolve(root).await.map_err(|e| {
                        EditorError::WorkspaceRoot {
                            root: root.display().to_string(),
                            reason: e.to_string(),
                        }
                    })?),
                    None => None,
                };
                let mut denied = Vec::with_capacity(self.denied.len());
                for path in &self.denied {
                    denied.push(
                        self.operator
                            .resolve(path)
                            .await
                            .unwrap_or_else(|_| path.clone()),
                    );
                }
                Ok(Arc::new(Fixed { root, denied }))
            })
            .await
    }

    async fn read_text(&self, target: &Target) -> Result<String, EditorError> {
        let read = target
            .content
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let bytes = match read {
            Some(read) => read,
            None => self.operator.read_file(&target.real).await,
        }
        .map_err(|e| target.read_error(&e))?;
        String::from_utf8(bytes).map_err(|e| EditorError::Read {
            path: target.raw.clone(),
            reason: format!(
                "the file is not valid UTF-8 text (invalid byte at offset {}); only UTF-8 text files can be viewed or edited",
                e.utf8_error().valid_up_to()
            ),
        })
    }

    async fn write_text(&self, target: &Target, content: &str) -> Result<(), EditorError> {
        self.operator
            .write_file(&target.real, content.as_bytes())
            .await
            .map_err(|e| EditorError::Write {
                path: target.raw.clone(),
                reason: e.to_string(),
            })
    }

    fn history(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, VecDeque<String>>> {
        self.history.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `previous` as the version before the latest edit of `key`.
    fn remember(&self, key: &Path, previous: String) {
        if self.history_limit == 0 {
            return;
        }
        let mut history = self.history();
        let versions = history.entry(key.to_path_buf()).or_default();
        while versions.len() >= self.history_limit {
            versions.pop_front();
        }
        versions.push_back(previous);
    }

    async fn view_file(
        &self,
        target: &Target,
        view_range: Option<&Value>,
    ) -> Result<String, EditorError> {
        let content = self.read_text(target).await?;
        let Some((start, end)) = parse_view_range(view_range)? else {
            return Ok(cat_n(&content, &target.raw, 1));
        };
        let lines: Vec<&str> = content.split('\n').collect();
        let count = lines.len();
        let last = i64::try_from(count).unwrap_or(i64::MAX);
        let start_error = EditorError::ViewRangeStart {
            start,
            end,
            lines: count,
        };
        if start < 1 || start > last {
            return Err(start_error);
        }
        if end > last {
            return Err(EditorError::ViewRangeEnd {
                start,
                end,
                lines: count,
            });
        }
        if end != -1 && end < start {
            return Err(EditorError::ViewRangeOrder { start, end });
        }
        let first = usize::try_from(start - 1).map_err(|_| start_error)?;
        let until = if end == -1 {
            count
        } else {
            usize::try_from(end).unwrap_or(count)
        };
        Ok(cat_n(
            &lines[first..until].join("\n"),
            &target.raw,
            first + 1,
        ))
    }

    async fn view_directory(
        &self,
        target: &Target,
        view_range: Option<&Value>,
    ) -> Result<String, EditorError> {
        if view_range_given(view_range) {
            return Err(EditorError::ViewRangeOnDirectory);
        }
        let entries = self
            .operator
            .read_dir(&target.real)
            .await
            .map_err(|e| target.read_error(&e))?;
        let mut listing = vec![target.raw.clone()];
        let mut notes = Vec::new();
        for entry in visible(entries) {
            let shown = join_listed(&target.raw, &printable(&entry.name.to_string_lossy()));
            listing.push(shown.clone());
            if !entry.is_dir {
                continue;
            }
            match self.operator.read_dir(&target.real.join(&entry.name)).await {
                Ok(children) => {
                    listing.extend(visible(children).iter().map(|child| {
                        join_listed(&shown, &printable(&child.name.to_string_lossy()))
                    }))
                }
                Err(e) => notes.push(format!(
                    "Note: the contents of {shown} could not be listed: {e}\n"
                )),
            }
        }
        Ok(format!(
            "Here's the files and directories up to 2 levels deep in {}, excluding hidden items:\n{}\n\n{}",
            target.raw,
            listing.join("\n"),
            notes.concat()
        ))
    }

    async fn create(
        &self,
        target: &Target,
        file_text: Option<String>,
    ) -> Result<String, EditorError> {
        let file_text = file_text.ok_or(EditorError::MissingParameter {
            parameter: "file_text",
            command: "create",
        })?;
        self.write_text(target, &file_text).await?;
        Ok(format!("File created successfully at: {}", target.raw))
    }

    async fn str_replace(
        &self,
        target: &Target,
        old_str: &str,
        new_str: &str,
    ) -> Result<String, EditorError> {
        let content = self.read_text(target).await?;
        let found = find_occurrences(&content, old_str);
        let range = match found.ranges.as_slice() {
            [] => {
                return Err(EditorError::NoMatch {
                    old: found.quoted,
                    path: target.raw.clone(),
                });
            }
            [only] => only.clone(),
            several => {
                return Err(EditorError::MultipleMatches {
                    lines: list_repr(&start_lines(&content, several)),
                    old: found.quoted,
                });
            }
        };
        let edited = format!(
            "{}{new_str}{}",
            &content[..range.start],
            &content[range.end..]
        );
        self.write_text(target, &edited).await?;
        let line = content[..range.start].matches('\n').count();
        self.remember(&target.real, content);

        let first = line.saturating_sub(SNIPPET_LINES);
        let last = line + SNIPPET_LINES + new_str.matches('\n').count();
        let snippet = line_slice(&edited, first, last);
        Ok(format!(
            "The file {} has been edited. {}Review the changes and make sure they are as expected. Edit the file again if necessary.",
            target.raw,
            cat_n(&snippet, &format!("a snippet of {}", target.raw), first + 1)
        ))
    }

    async fn insert(
        &self,
        target: &Target,
        insert_line: i64,
        new_str: &str,
    ) -> Result<String, EditorError> {
        let content = self.read_text(target).await?;
        let lines: Vec<&str> = content.split('\n').collect();
        let count = lines.len();
        let at = usize::try_from(insert_line)
            .ok()
            .filter(|&at| at <= count)
            .ok_or(EditorError::InsertLine {
                line: insert_line,
                lines: count,
            })?;
        let new_lines: Vec<&str> = new_str.split('\n').collect();

        let mut edited_lines = Vec::with_capacity(count + new_lines.len());
        edited_lines.extend_from_slice(&lines[..at]);
        edited_lines.extend_from_slice(&new_lines);
        edited_lines.extend_from_slice(&lines[at..]);
        let edited = edited_lines.join("\n");

        let mut snippet_lines = Vec::with_capacity(2 * SNIPPET_LINES + new_lines.len());
        snippet_lines.extend_from_slice(&lines[at.saturating_sub(SNIPPET_LINES)..at]);
        snippet_lines.extend_from_slice(&new_lines);
        snippet_lines.extend_from_slice(&lines[at..(at + SNIPPET_LINES).min(count)]);
        let snippet = snippet_lines.join("\n");

        self.write_text(target, &edited).await?;
        self.remember(&target.real, content);
        Ok(format!(
            "The file {} has been edited. {}Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.",
            target.raw,
            cat_n(
                &snippet,
                "a snippet of the edited file",
                (at + 1).saturating_sub(SNIPPET_LINES).max(1)
            )
        ))
    }

    async fn undo_edit(&self, target: &Target) -> Result<String, EditorError> {
        let previous = self
            .history()
            .get_mut(&target.real)
            .and_then(VecDeque::pop_back)
            .ok_or_else(|| EditorError::NoHistory {
                path: target.raw.clone(),
            })?;
        if let Err(e) = self.write_text(target, &previous).await {
            // Nothing was undone: keep the version for another try.
            self.history()
                .entry(target.real.clone())
                .or_default()
                .push_back(previous);
            return Err(e);
        }
        Ok(format!(
            "Last edit to {} undone successfully. {}",
            target.raw,
            cat_n(&previous, &target.raw, 1)
        ))
    }

    async fn run(&self, args: EditorArgs) -> Result<String, EditorError> {
        let command = args.command;
        if self.read_only && command.writes() {
            return Err(EditorError::ReadOnly {
                command: command.as_str(),
                path: args.path,
            });
        }
        let _edit_guard = if command.writes() {
            Some(self.edits.lock().await)
        } else {
            None
        };
        let (target, kind) = self.target(&args.path, command.reads()).await?;
        match (command, kind) {
            (EditorCommand::Create, PathKind::Missing) => {}
            (EditorCommand::Create, _) => {
                return Err(EditorError::AlreadyExists { path: target.shown });
            }
            (_, PathKind::Missing) => return Err(EditorError::NotFound { path: target.shown }),
            (EditorCommand::View, _) | (_, PathKind::File | PathKind::Other) => {}
            (_, PathKind::Directory) => {
                return Err(EditorError::IsDirectory { path: target.shown });
            }
        }
        match command {
            EditorCommand::View if kind == PathKind::Directory => {
                self.view_directory(&target, args.view_range.as_ref()).await
            }
            EditorCommand::View => self.view_file(&target, args.view_range.as_ref()).await,
            EditorCommand::Create => self.create(&target, args.file_text).await,
            EditorCommand::StrReplace => {
                let old_str = args.old_str.ok_or(EditorError::MissingParameter {
                    parameter: "old_str",
                    command: "str_replace",
                })?;
                let new_str = args.new_str.unwrap_or_default();
                self.str_replace(&target, &old_str, &new_str).await
            }
            EditorCommand::Insert => {
                let insert_line = args.insert_line.ok_or(EditorError::MissingParameter {
                    parameter: "insert_line",
                    command: "insert",
                })?;
                let new_str = args.new_str.ok_or(EditorError::MissingParameter {
                    parameter: "new_str",
                    command: "insert",
                })?;
                self.insert(&target, insert_line, &new_str).await
            }
            EditorCommand::UndoEdit => self.undo_edit(&target).await,
        }
    }
}

#[async_trait]
impl TypedTool for StrReplaceEditor {
    type Args = EditorArgs;

    fn name(&self) -> &str {
        STR_REPLACE_EDITOR
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(&self, args: EditorArgs, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let command = args.command.as_str();
        debug!(command, path = %args.path, "str_replace_editor call");
        match self.run(args).await {
            Ok(output) => Ok(ToolResult::success(output)),
            Err(error) => {
                debug!(command, %error, "str_replace_editor call failed");
                Err(error.into())
            }
        }
    }
}

/// The tool description, naming the workspace root when there is one.
fn describe(root: Option<&Path>) -> String {
    let mut description = String::from(
        "View, create and edit text files. Changes persist between calls.\n\
         * `path` must be an absolute path.\n\
         * `view` on a file prints it with line numbers, like `cat -n`; `view_range` limits it to \
         some lines. `view` on a directory lists its files and subdirectories two levels deep, \
         leaving out hidden ones.\n\
         * `create` writes a new file (and any missing parent directories); it never replaces an \
         existing file.\n\
         * `str_replace` replaces `old_str` with `new_str`. `old_str` must occur exactly once: copy \
         it character for character, whitespace included, and add neighbouring lines until it is \
         unique. Tabs that `view` shows as spaces may be written either way.\n\
         * `insert` adds `new_str` after line `insert_line` (0 puts it at the top).\n\
         * `undo_edit` reverts the latest `str_replace` or `insert` on the file.\n\
         * Long output is cut off and marked `<response clipped>`; find the lines you need with \
         `grep -n` and view just that range.",
    );
    if let Some(root) = root {
        description.push_str(&format!(
            "\n* Only paths inside {} can be used.",
            root.display()
        ));
    }
    description
}

/// An absolute path inside `root` standing for the relative `raw`, that the editor accepts:
/// `raw` joined to `root` with `.` and `..` applied lexically; when `..` would climb out of the
/// root, the root joined with `raw`'s last name (or the root itself when it has none).
fn example_inside(root: &Path, raw: &str) -> PathBuf {
    let mut parts: Vec<&str> = Vec::new();
    let mut climbed_out = false;
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => climbed_out |= parts.pop().is_none(),
            name => parts.push(name),
        }
    }
    if climbed_out {
        let last = raw
            .split('/')
            .rev()
            .find(|part| !matches!(*part, "" | "." | ".."));
        return last.map_or_else(|| root.to_path_buf(), |name| root.join(name));
    }
    parts
        .iter()
        .fold(root.to_path_buf(), |path, part| path.join(part))
}

/// `text` with every control character written as an escape (`\0`, `\n`, `\u{1b}`): a path
/// holding a NUL or an escape sequence is shown, never sent raw to the model or a terminal.
fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// How Python's `pathlib` prints `raw`: repeated slashes, `.` segments and a trailing slash
/// removed (`..` is kept); exactly two leading slashes are kept; an empty path is `.`. Control
/// characters are escaped ([`printable`]).
fn pathlib_form(raw: &str) -> String {
    let root = if raw.starts_with("//") && !raw.starts_with("///") {
        "//"
    } else if raw.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = raw
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let joined = format!("{root}{}", parts.join("/"));
    if joined.is_empty() {
        ".".to_owned()
    } else {
        printable(&joined)
    }
}

/// True when `view_range` holds anything (`null` and `[]` count as absent, as in OpenManus).
fn view_range_given(view_range: Option<&Value>) -> bool {
    match view_range {
        None | Some(Value::Null) => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(_) => true,
    }
}

/// The `[start, end]` of a given `view_range`.
fn parse_view_range(view_range: Option<&Value>) -> Result<Option<(i64, i64)>, EditorError> {
    if !view_range_given(view_range) {
        return Ok(None);
    }
    match view_range {
        Some(Value::Array(items)) => match items.as_slice() {
            [start, end] => match (start.as_i64(), end.as_i64()) {
                (Some(start), Some(end)) => Ok(Some((start, end))),
                _ => Err(EditorError::ViewRangeShape),
            },
            _ => Err(EditorError::ViewRangeShape),
        },
        _ => Err(EditorError::ViewRangeShape),
    }
}

/// The entries that are not hidden, sorted by name.
fn visible(mut entries: Vec<DirEntry>) -> Vec<DirEntry> {
    entries.retain(|entry| entry.name.as_encoded_bytes().first() != Some(&b'.'));
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// `base/name` the way find prints it: no slash is added after a base that ends with one.
fn join_listed(base: &str, name: &str) -> String {
    if base.ends_with('/') {
        format!("{base}{name}")
    } else {
        format!("{base}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathlib_form_matches_python() {
        assert_eq!(pathlib_form("/tmp/a/./b/"), "/tmp/a/b");
        assert_eq!(pathlib_form("/tmp//a"), "/tmp/a");
        assert_eq!(pathlib_form("/tmp/a/../b"), "/tmp/a/../b");
        assert_eq!(pathlib_form("rel/./x.txt"), "rel/x.txt");
        assert_eq!(pathlib_form("./x"), "x");
        assert_eq!(pathlib_form(""), ".");
        assert_eq!(pathlib_form("."), ".");
        assert_eq!(pathlib_form("/"), "/");
        assert_eq!(pathlib_form("//a/b"), "//a/b");
        assert_eq!(pathlib_form("///a"), "/a");
        assert_eq!(pathlib_form("/tmp/a\0b\x1b[2J"), "/tmp/a\\0b\\u{1b}[2J");
    }

    #[test]
    fn the_example_path_stays_inside_the_root() {
        let root = Path::new("/work/ws");
        for (raw, example) in [
            ("notes.txt", "/work/ws/notes.txt"),
            ("./a/./b.txt", "/work/ws/a/b.txt"),
            ("a/../b.txt", "/work/ws/b.txt"),
            ("../etc/passwd", "/work/ws/passwd"),
            ("a/../../../x/y", "/work/ws/y"),
            ("..", "/work/ws"),
            (".", "/work/ws"),
        ] {
            assert_eq!(example_inside(root, raw), Path::new(example), "{raw}");
        }
    }

    #[test]
    fn view_range_forms() {
        use serde_json::json;
        let parse = |v: Value| parse_view_range(Some(&v));
        assert_eq!(parse(json!(null)), Ok(None));
        assert_eq!(parse(json!([])), Ok(None));
        assert_eq!(parse(json!([2, -1])), Ok(Some((2, -1))));
        for bad in [
            json!([1]),
            json!([1, 2, 3]),
            json!([1.5, 2]),
            json!(["1", 2]),
            json!([true, 2]),
            json!("1,2"),
            json!(3),
        ] {
            assert_eq!(parse(bad), Err(EditorError::ViewRangeShape));
        }
    }

    #[test]
    fn listing_joins_like_find() {
        assert_eq!(join_listed("/a", "b"), "/a/b");
        assert_eq!(join_listed("/a/", "b"), "/a/b");
        assert_eq!(join_listed("/", "b"), "/b");
    }
}
