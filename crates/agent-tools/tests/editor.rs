//! `str_replace_editor`: golden outputs of spec §4.5, the W14 fixes, workspace confinement, and
//! the exact observations a `ToolCallAgent` stores.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, Role};
use agent_testkit::{ScriptedModel, tool_call};
use agent_toolcall::ToolCallAgent;
use agent_tools::editor::{
    DirEntry, EditorError, FileOperator, LocalFileOperator, Opened, PathKind, ReadIf,
    StrReplaceEditor, TRUNCATED_MESSAGE,
};
use agent_tools::{Tool, ToolCollection, ToolContext, ToolError};
use async_trait::async_trait;
use serde_json::{Value, json};
use tempfile::TempDir;

const OBSERVED: &str = "Observed output of cmd `str_replace_editor` executed:\n";

const DESCRIPTION: &str = "View, create and edit text files. Changes persist between calls.\n\
* `path` must be an absolute path.\n\
* `view` on a file prints it with line numbers, like `cat -n`; `view_range` limits it to some lines. `view` on a directory lists its files and subdirectories two levels deep, leaving out hidden ones.\n\
* `create` writes a new file (and any missing parent directories); it never replaces an existing file.\n\
* `str_replace` replaces `old_str` with `new_str`. `old_str` must occur exactly once: copy it character for character, whitespace included, and add neighbouring lines until it is unique. Tabs that `view` shows as spaces may be written either way.\n\
* `insert` adds `new_str` after line `insert_line` (0 puts it at the top).\n\
* `undo_edit` reverts the latest `str_replace` or `insert` on the file.\n\
* Long output is cut off and marked `<response clipped>`; find the lines you need with `grep -n` and view just that range.";

const GREEK: &str = "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\n";

/// The editor behind a `ToolCollection`, so results render as the agent renders them
/// (`Error: {message}` for failures).
struct Harness {
    tools: ToolCollection,
}

impl Harness {
    fn new(editor: StrReplaceEditor) -> Self {
        let mut tools = ToolCollection::new();
        tools.add_tool(editor);
        Self { tools }
    }

    async fn call(&self, args: Value) -> String {
        self.tools
            .execute("str_replace_editor", args, &ToolContext::default())
            .await
            .unwrap()
            .to_string()
    }
}

/// A temporary directory and its canonical path as a string.
fn temp() -> (TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path())
        .unwrap()
        .display()
        .to_string();
    (dir, base)
}

fn write(path: &str, content: impl AsRef<[u8]>) {
    if let Some(parent) = Path::new(path).parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn cat_n_header(descriptor: &str) -> String {
    format!("Here's the result of running `cat -n` on {descriptor}:\n")
}

/// Runs a real `ToolCallAgent` whose scripted model makes each call in turn (one per step), then
/// `terminate`; returns the observations stored for `str_replace_editor`.
async fn agent_observations(editor: StrReplaceEditor, calls: &[Value]) -> Vec<String> {
    let model = Arc::new(ScriptedModel::new());
    for (i, args) in calls.iter().enumerate() {
        model.push_tool_calls(
            "",
            [tool_call(
                &format!("call_{i}"),
                "str_replace_editor",
                &args.to_string(),
            )],
        );
    }
    model.push_tool_calls(
        "",
        [tool_call(
            "call_end",
            "terminate",
            r#"{"status":"success"}"#,
        )],
    );
    let steps = u32::try_from(calls.len()).unwrap() + 1;
    let mut agent = ToolCallAgent::new(model.clone())
        .with_tool(editor)
        .with_max_steps(steps);
    agent.run(Some("Edit the files.".into())).await.unwrap();
    assert_eq!(model.remaining(), 0, "every scripted reply was used");
    agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool && m.name.as_deref() == Some("str_replace_editor"))
        .map(|m| m.text().to_owned())
        .collect()
}

fn observed(text: &str) -> String {
    format!("{OBSERVED}{text}")
}

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

#[test]
fn schema_snapshot() {
    assert_eq!(
        serde_json::to_value(StrReplaceEditor::new().to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "str_replace_editor",
                "description": DESCRIPTION,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "command": {
                            "type": "string",
                            "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
                            "description": "Which operation to run: `view`, `create`, `str_replace`, `insert` or `undo_edit`."
                        },
                        "path": {
                            "type": "string",
                            "description": "Absolute path of the file or directory to work on."
                        },
                        "file_text": {
                            "type": "string",
                            "description": "For `create`: the complete content of the new file."
                        },
                        "old_str": {
                            "type": "string",
                            "description": "For `str_replace`: the exact text to replace. It must occur exactly once in the file."
                        },
                        "new_str": {
                            "type": "string",
                            "description": "For `str_replace`: the text that replaces `old_str` (leave it out to delete `old_str`). For `insert`: the text to insert."
                        },
                        "insert_line": {
                            "type": "integer",
                            "description": "For `insert`: the line after which `new_str` goes; 0 inserts it before the first line."
                        },
                        "view_range": {
                            "type": "array",
                            "items": {"type": "integer"},
                            "description": "For `view` of a file: the first and last line to show, counted from 1, such as `[10, 20]`; a last line of -1 shows everything from the first line to the end. Without it the whole file is shown."
                        }
                    },
                    "required": ["command", "path"]
                }
            }
        })
    );
}

#[test]
fn the_description_names_the_workspace_root() {
    let editor = StrReplaceEditor::new().with_workspace_root("/srv/work");
    assert_eq!(
        Tool::description(&editor),
        format!("{DESCRIPTION}\n* Only paths inside /srv/work can be used.")
    );
    assert_eq!(editor.workspace_root(), Some(Path::new("/srv/work")));
}

// ---------------------------------------------------------------------------------------------
// view: files
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn view_file_is_cat_n_with_tabs_expanded_and_the_final_empty_line() {
    let (_dir, base) = temp();
    let path = format!("{base}/f.txt");
    write(&path, "first\nsecond\n\tindented\n");
    let editor = Harness::new(StrReplaceEditor::new());
    assert_eq!(
        editor.call(json!({"command": "view", "path": path})).await,
        format!(
            "{}     1\tfirst\n     2\tsecond\n     3\t        indented\n     4\t\n",
            cat_n_header(&path)
        )
    );
    // No trailing newline: no extra line.
    write(&path, "only");
    assert_eq!(
        editor.call(json!({"command": "view", "path": path})).await,
        format!("{}     1\tonly\n", cat_n_header(&path))
    );
}

#[tokio::test]
async fn view_range_shows_the_requested_lines_with_their_numbers() {
    let (_dir, base) = temp();
    let path = format!("{base}/greek.txt");
    write(&path, GREEK);
    let editor = Harness::new(StrReplaceEditor::new());
    let view =
        |range: Value| editor.call(json!({"command": "view", "path": path, "view_range": range}));

    assert_eq!(
        view(json!([2, 3])).await,
        format!("{}     2\tbeta\n     3\tgamma\n", cat_n_header(&path))
    );
    assert_eq!(
        view(json!([7, -1])).await,
        format!(
            "{}     7\teta\n     8\ttheta\n     9\t\n",
            cat_n_header(&path)
        )
    );
    assert_eq!(
        view(json!([9, 9])).await,
        format!("{}     9\t\n", cat_n_header(&path)),
        "the empty line after the final newline counts"
    );
    let full = editor.call(json!({"command": "view", "path": path})).await;
    assert_eq!(
        view(json!([])).await,
        full,
        "an empty range counts as absent"
    );
    assert_eq!(view(Value::Null).await, full);
}

#[tokio::test]
async fn view_range_messages_in_openmanus_order() {
    let (_dir, base) = temp();
    let path = format!("{base}/greek.txt");
    write(&path, GREEK); // 9 lines, counting the empty one after the final newline
    let editor = Harness::new(StrReplaceEditor::new());
    let view =
        |range: Value| editor.call(json!({"command": "view", "path": path, "view_range": range}));

    let shape = "Error: Invalid `view_range`. It should be a list of two integers.";
    for bad in [
        json!([1]),
        json!([1, 2, 3]),
        json!(["1", 2]),
        json!([1.5, 2]),
        json!("1-2"),
    ] {
        assert_eq!(view(bad.clone()).await, shape, "{bad}");
    }

    // 2. the first element, checked before the second.
    assert_eq!(
        view(json!([0, 2])).await,
        "Error: Invalid `view_range`: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 9]"
    );
    assert_eq!(
        view(json!([10, 99])).await,
        "Error: Invalid `view_range`: [10, 99]. Its first element `10` should be within the range of lines of the file: [1, 9]"
    );
    assert_eq!(
        view(json!([0, -5])).await,
        "Error: Invalid `view_range`: [0, -5]. Its first element `0` should be within the range of lines of the file: [1, 9]"
    );
    // 3. the second element past the end.
    assert_eq!(
        view(json!([2, 10])).await,
        "Error: Invalid `view_range`: [2, 10]. Its second element `10` should be smaller than the number of lines in the file: `9`"
    );
    // 4. the second element before the first (-1 excepted, -2 and lower included).
    assert_eq!(
        view(json!([4, 3])).await,
        "Error: Invalid `view_range`: [4, 3]. Its second element `3` should be larger or equal than its first `4`"
    );
    assert_eq!(
        view(json!([4, -2])).await,
        "Error: Invalid `view_range`: [4, -2]. Its second element `-2` should be larger or equal than its first `4`"
    );
}

#[tokio::test]
async fn long_files_are_clipped_at_16000_characters_before_numbering() {
    let (_dir, base) = temp();
    let path = format!("{base}/long.txt");
    let editor = Harness::new(StrReplaceEditor::new());
    let view = || editor.call(json!({"command": "view", "path": path}));

    // One long line: the notice ends up inside line 1.
    write(&path, "x".repeat(16_001));
    assert_eq!(
        view().await,
        format!(
            "{}     1\t{}<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>\n",
            cat_n_header(&path),
            "x".repeat(16_000)
        )
    );

    // 7-character lines: 2285 whole lines (15995 characters), then 5 characters of line 2286.
    write(&path, "abcdef\n".repeat(3000));
    let mut expected = cat_n_header(&path);
    for number in 1..=2285 {
        expected.push_str(&format!("{number:>6}\tabcdef\n"));
    }
    expected.push_str(&format!("{:>6}\tabcde{TRUNCATED_MESSAGE}\n", 2286));
    assert_eq!(view().await, expected);

    // Characters, not bytes, are counted; exactly 16000 is not clipped.
    write(&path, "é".repeat(16_000));
    assert_eq!(
        view().await,
        format!("{}     1\t{}\n", cat_n_header(&path), "é".repeat(16_000))
    );
    write(&path, "é".repeat(16_001));
    assert_eq!(
        view().await,
        format!(
            "{}     1\t{}{TRUNCATED_MESSAGE}\n",
            cat_n_header(&path),
            "é".repeat(16_000)
        )
    );
}

// ---------------------------------------------------------------------------------------------
// view: directories
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn view_directory_lists_two_levels_sorted_without_hidden_entries() {
    let (_dir, base) = temp();
    write(&format!("{base}/b.txt"), "");
    write(&format!("{base}/a_dir/inner.txt"), "");
    write(&format!("{base}/a_dir/.hidden_inner"), "");
    write(&format!("{base}/a_dir/deeper/too_deep.txt"), "");
    write(&format!("{base}/.git/config"), "");
    write(&format!("{base}/.env"), "");
    std::fs::create_dir(format!("{base}/c_dir")).unwrap();
    std::os::unix::fs::symlink(format!("{base}/a_dir"), format!("{base}/link_dir")).unwrap();

    let editor = Harness::new(StrReplaceEditor::new());
    let listing = |root: &str| {
        format!(
            "Here's the files and directories up to 2 levels deep in {root}, excluding hidden items:\n\
             {root}\n\
             {base}/a_dir\n\
             {base}/a_dir/deeper\n\
             {base}/a_dir/inner.txt\n\
             {base}/b.txt\n\
             {base}/c_dir\n\
             {base}/link_dir\n\n"
        )
    };
    assert_eq!(
        editor.call(json!({"command": "view", "path": base})).await,
        listing(&base)
    );
    // As find prints it: the path as given, no doubled slash after a trailing one.
    let slashed = format!("{base}/");
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": slashed, "view_range": []}))
            .await,
        listing(&slashed)
    );
}

#[tokio::test]
async fn view_directory_refuses_a_view_range() {
    let (_dir, base) = temp();
    let editor = Harness::new(StrReplaceEditor::new());
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": base, "view_range": [1, 2]}))
            .await,
        "Error: The `view_range` parameter is not allowed when `path` points to a directory."
    );
}

/// The local operator, except that one directory cannot be listed.
#[derive(Debug)]
struct Unlistable {
    denied: PathBuf,
}

#[async_trait]
impl FileOperator for Unlistable {
    async fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        LocalFileOperator.read_file(path).await
    }
    async fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        LocalFileOperator.write_file(path, contents).await
    }
    async fn kind(&self, path: &Path) -> io::Result<PathKind> {
        LocalFileOperator.kind(path).await
    }
    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        if path == self.denied {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        LocalFileOperator.read_dir(path).await
    }
    async fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        LocalFileOperator.resolve(path).await
    }
}

/// The local operator, recording what `open` was allowed to read and every separate read.
#[derive(Debug, Default)]
struct Recording {
    /// `(resolved path, whether the editor let open read it)`, per `open`.
    decisions: std::sync::Mutex<Vec<(PathBuf, bool)>>,
    /// Paths read by `read_file` (a second trip).
    reads: std::sync::Mutex<Vec<PathBuf>>,
}

#[async_trait]
impl FileOperator for Recording {
    async fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.reads.lock().unwrap().push(path.to_path_buf());
        LocalFileOperator.read_file(path).await
    }
    async fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        LocalFileOperator.write_file(path, contents).await
    }
    async fn kind(&self, path: &Path) -> io::Result<PathKind> {
        LocalFileOperator.kind(path).await
    }
    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        LocalFileOperator.read_dir(path).await
    }
    async fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        LocalFileOperator.resolve(path).await
    }
    async fn open(&self, path: &Path, read_if: ReadIf) -> io::Result<Opened> {
        let (sender, decision) = std::sync::mpsc::channel();
        let opened = LocalFileOperator
            .open(
                path,
                Box::new(move |real| {
                    let allowed = read_if(real);
                    let _ = sender.send((real.to_path_buf(), allowed));
                    allowed
                }),
            )
            .await;
        self.decisions.lock().unwrap().extend(decision.try_iter());
        opened
    }
}

#[tokio::test]
async fn a_file_is_read_with_its_resolution_and_only_once_it_is_allowed() {
    let (_dir, base) = temp();
    write(&format!("{base}/ws/notes.txt"), "one\ntwo\n");
    write(&format!("{base}/ws/.env"), "KEY=secret\n");
    write(&format!("{base}/outside.txt"), "not yours\n");
    let operator = Arc::new(Recording::default());
    let editor = Harness::new(
        StrReplaceEditor::new()
            .with_file_operator(operator.clone())
            .with_workspace_root(format!("{base}/ws"))
            .with_denied_paths([PathBuf::from(format!("{base}/ws/.env"))]),
    );
    let notes = format!("{base}/ws/notes.txt");
    let shown = editor.call(json!({"command": "view", "path": notes})).await;
    assert!(shown.contains("     1\tone"), "{shown}");
    let edited = editor
        .call(json!({"command": "str_replace", "path": notes, "old_str": "two", "new_str": "2"}))
        .await;
    assert!(edited.contains("has been edited"), "{edited}");
    // Both read the file in the trip that resolved it: no separate read.
    assert!(operator.reads.lock().unwrap().is_empty());
    // The secret and the file outside are refused, and were not read to be refused.
    let secret = editor
        .call(json!({"command": "view", "path": format!("{base}/ws/.env")}))
        .await;
    assert!(secret.starts_with("Error:"), "{secret}");
    let outside = editor
        .call(json!({"command": "view", "path": format!("{base}/outside.txt")}))
        .await;
    assert!(outside.contains("outside"), "{outside}");
    // `create` reads nothing.
    editor
        .call(json!({"command": "create", "path": format!("{base}/ws/new.txt"), "file_text": "x"}))
        .await;
    assert_eq!(
        *operator.decisions.lock().unwrap(),
        vec![
            (PathBuf::from(&notes), true),
            (PathBuf::from(&notes), true),
            (PathBuf::from(format!("{base}/ws/.env")), false),
            (PathBuf::from(format!("{base}/outside.txt")), false),
        ]
    );
}

#[tokio::test]
async fn an_unreadable_subdirectory_is_noted_and_the_listing_kept() {
    let (_dir, base) = temp();
    write(&format!("{base}/open/f.txt"), "");
    write(&format!("{base}/locked/secret.txt"), "");
    let operator = Arc::new(Unlistable {
        denied: PathBuf::from(format!("{base}/locked")),
    });
    let editor = Harness::new(StrReplaceEditor::new().with_file_operator(operator));
    assert_eq!(
        editor.call(json!({"command": "view", "path": base})).await,
        format!(
            "Here's the files and directories up to 2 levels deep in {base}, excluding hidden items:\n\
             {base}\n{base}/locked\n{base}/open\n{base}/open/f.txt\n\n\
             Note: the contents of {base}/locked could not be listed: permission denied\n"
        )
    );
    // The listed directory itself unreadable: a read failure.
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": format!("{base}/locked")}))
            .await,
        format!("Error: Failed to read {base}/locked: permission denied")
    );
}

// ---------------------------------------------------------------------------------------------
// create
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_writes_the_exact_text_and_makes_parent_directories() {
    let (_dir, base) = temp();
    let editor = Harness::new(StrReplaceEditor::new());
    let path = format!("{base}/a.txt");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": path, "file_text": "one\n\ttwo\r\n"}))
            .await,
        format!("File created successfully at: {path}")
    );
    assert_eq!(read(&path), "one\n\ttwo\r\n");

    let nested = format!("{base}/new/deeper/b.txt");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": nested, "file_text": ""}))
            .await,
        format!("File created successfully at: {nested}")
    );
    assert_eq!(read(&nested), "");
}

#[tokio::test]
async fn create_never_overwrites_and_needs_file_text() {
    let (_dir, base) = temp();
    let editor = Harness::new(StrReplaceEditor::new());
    let path = format!("{base}/a.txt");
    write(&path, "original");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": path, "file_text": "new"}))
            .await,
        format!(
            "Error: File already exists at: {path}. Cannot overwrite files using command `create`."
        )
    );
    // The validation messages show the pathlib-normalised path.
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": format!("{base}/.//a.txt/"), "file_text": "new"}))
            .await,
        format!(
            "Error: File already exists at: {path}. Cannot overwrite files using command `create`."
        )
    );
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": base, "file_text": "new"}))
            .await,
        format!(
            "Error: File already exists at: {base}. Cannot overwrite files using command `create`."
        ),
        "a directory exists too"
    );
    // Existence is checked before file_text.
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": path}))
            .await,
        format!(
            "Error: File already exists at: {path}. Cannot overwrite files using command `create`."
        )
    );
    assert_eq!(read(&path), "original");

    let fresh = format!("{base}/fresh.txt");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": fresh}))
            .await,
        "Error: Parameter `file_text` is required for command: create"
    );
    assert!(!Path::new(&fresh).exists());
}

#[tokio::test]
async fn create_reports_write_failures() {
    let (_dir, base) = temp();
    write(&format!("{base}/plain.txt"), "");
    let editor = Harness::new(StrReplaceEditor::new());
    let path = format!("{base}/plain.txt/child.txt");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": path, "file_text": "x"}))
            .await,
        format!("Error: Failed to write to {path}: File exists (os error 17)")
    );
}

#[tokio::test]
async fn undo_after_create_has_no_history() {
    let (_dir, base) = temp();
    let editor = Harness::new(StrReplaceEditor::new());
    let path = format!("{base}/a.txt");
    editor
        .call(json!({"command": "create", "path": path, "file_text": "hello\n"}))
        .await;
    assert_eq!(
        editor
            .call(json!({"command": "undo_edit", "path": path}))
            .await,
        format!("Error: No edit history found for {path}.")
    );
    assert_eq!(read(&path), "hello\n");
}

// ---------------------------------------------------------------------------------------------
// str_replace
// ---------------------------------------------------------------------------------------------

fn edited(path: &str, snippet_descriptor: &str, numbered: &str) -> String {
    format!(
        "The file {path} has been edited. {}{numbered}Review the changes and make sure they are as expected. Edit the file again if necessary.",
        cat_n_header(snippet_descriptor)
    )
}

#[tokio::test]
async fn str_replace_snippet_near_the_start_middle_and_end() {
    let (_dir, base) = temp();
    let path = format!("{base}/greek.txt");
    let snippet_of = format!("a snippet of {path}");
    write(&path, GREEK);
    let editor = Harness::new(StrReplaceEditor::new());
    let replace = |old: &str, new: &str| {
        editor.call(json!({"command": "str_replace", "path": path, "old_str": old, "new_str": new}))
    };

    // Line 2: the snippet starts at line 1 and runs 4 lines past the edit.
    assert_eq!(
        replace("beta", "BETA").await,
        edited(
            &path,
            &snippet_of,
            "     1\talpha\n     2\tBETA\n     3\tgamma\n     4\tdelta\n     5\tepsilon\n     6\tzeta\n"
        )
    );
    // Line 6 with a two-line replacement: 4 lines before, the new lines, 4 after (clamped).
    assert_eq!(
        replace("zeta", "zeta\nzeta two").await,
        edited(
            &path,
            &snippet_of,
            "     2\tBETA\n     3\tgamma\n     4\tdelta\n     5\tepsilon\n     6\tzeta\n     7\tzeta two\n     8\teta\n     9\ttheta\n    10\t\n"
        )
    );
    // The last line.
    assert_eq!(
        replace("theta\n", "THETA\n").await,
        edited(
            &path,
            &snippet_of,
            "     5\tepsilon\n     6\tzeta\n     7\tzeta two\n     8\teta\n     9\tTHETA\n    10\t\n"
        )
    );
    assert_eq!(
        read(&path),
        "alpha\nBETA\ngamma\ndelta\nepsilon\nzeta\nzeta two\neta\nTHETA\n"
    );
}

#[tokio::test]
async fn str_replace_in_the_middle_of_a_long_file_numbers_from_the_real_line() {
    let (_dir, base) = temp();
    let path = format!("{base}/long.txt");
    let content: String = (1..=30).map(|i| format!("row {i:02}\n")).collect();
    write(&path, &content);
    let editor = Harness::new(StrReplaceEditor::new());
    assert_eq!(
        editor
            .call(json!({"command": "str_replace", "path": path, "old_str": "row 15", "new_str": "ROW 15"}))
            .await,
        edited(
            &path,
            &format!("a snippet of {path}"),
            "    11\trow 11\n    12\trow 12\n    13\trow 13\n    14\trow 14\n    15\tROW 15\n    16\trow 16\n    17\trow 17\n    18\trow 18\n    19\trow 19\n"
        )
    );
}

#[tokio::test]
async fn str_replace_without_new_str_deletes() {
    let (_dir, base) = temp();
    let path = format!("{base}/f.txt");
    write(&path, "keep\ndrop me\nkeep too\n");
    let editor = Harness::new(StrReplaceEditor::new());
    assert_eq!(
        editor
            .call(json!({"command": "str_replace", "path": path, "old_str": "drop me\n"}))
            .await,
        edited(
            &path,
            &format!("a snippet of {path}"),
            "     1\tkeep\n     2\tkeep too\n     3\t\n"
        )
    );
    assert_eq!(read(&path), "keep\nkeep too\n");
}

#[tokio::test]
async fn str_replace_zero_and_multiple_occurrences() {
    let (_dir, base) = temp();
    let path = format!("{base}/f.py");
    let content = "x = 1\ny = 2\nx = 1\nz = 3\nx = 1 + x = 1\n";
    write(&path, content);
    let editor = Harness::new(StrReplaceEditor::new());
    let replace = |old: &str| {
        editor.call(json!({"command": "str_replace", "path": path, "old_str": old, "new_str": "w"}))
    };
    assert_eq!(
        replace("omega").await,
        format!(
            "Error: No replacement was performed, old_str `omega` did not appear verbatim in {path}."
        )
    );
    assert_eq!(
        replace("x = 1").await,
        "Error: No replacement was performed. Multiple occurrences of old_str `x = 1` in lines [1, 3, 5]. Please ensure it is unique"
    );
    // Multi-line old_str: the lines where the occurrences start.
    write(&path, "a\nb\na\nb\n");
    assert_eq!(
        replace("a\nb").await,
        "Error: No replacement was performed. Multiple occurrences of old_str `a\nb` in lines [1, 3]. Please ensure it is unique"
    );
    assert_eq!(read(&path), "a\nb\na\nb\n");
    // A tab in old_str is quoted expanded.
    assert_eq!(
        replace("\tnothing").await,
        format!(
            "Error: No replacement was performed, old_str `        nothing` did not appear verbatim in {path}."
        )
    );
    assert_eq!(
        editor
            .call(json!({"command": "str_replace", "path": path, "new_str": "w"}))
            .await,
        "Error: Parameter `old_str` is required for command: str_replace"
    );
}

// ---------------------------------------------------------------------------------------------
// Tabs (W14): the rest of the file keeps its bytes
// ---------------------------------------------------------------------------------------------

const MAKEFILE: &str = "CC = gcc\n\nall:\n\t$(CC) -o app main.c\n\techo built\n";

#[tokio::test]
async fn tabs_elsewhere_in_the_file_are_preserved() {
    let (_dir, base) = temp();
    let path = format!("{base}/Makefile");
    write(&path, MAKEFILE);
    let editor = Harness::new(StrReplaceEditor::new());

    assert_eq!(
        editor
            .call(json!({"command": "str_replace", "path": path, "old_str": "echo built", "new_str": "echo done"}))
            .await,
        edited(
            &path,
            &format!("a snippet of {path}"),
            "     1\tCC = gcc\n     2\t\n     3\tall:\n     4\t        $(CC) -o app main.c\n     5\t        echo done\n     6\t\n"
        ),
        "the snippet shows tabs expanded, as cat -n output does"
    );
    assert_eq!(
        read(&path),
        "CC = gcc\n\nall:\n\t$(CC) -o app main.c\n\techo done\n"
    );

    let inserted = editor
        .call(json!({"command": "insert", "path": path, "insert_line": 3, "new_str": "\tmkdir -p out"}))
        .await;
    assert!(inserted.starts_with(&format!("The file {path} has been edited. ")));
    assert_eq!(
        read(&path),
        "CC = gcc\n\nall:\n\tmkdir -p out\n\t$(CC) -o app main.c\n\techo done\n"
    );

    // Undo restores the exact bytes, tabs included.
    editor
        .call(json!({"command": "undo_edit", "path": path}))
        .await;
    editor
        .call(json!({"command": "undo_edit", "path": path}))
        .await;
    assert_eq!(read(&path), MAKEFILE);
}

#[tokio::test]
async fn old_str_copied_from_view_matches_tabs_and_new_str_is_written_as_given() {
    let (_dir, base) = temp();
    let path = format!("{base}/Makefile");
    write(&path, MAKEFILE);
    let editor = Harness::new(StrReplaceEditor::new());
    let replace = |old: &str, new: &str| {
        editor.call(json!({"command": "str_replace", "path": path, "old_str": old, "new_str": new}))
    };

    // The spaces `view` showed for a tab match the tab; the new text keeps its own tab.
    let output = replace("        echo built", "\techo finished").await;
    assert!(
        output.starts_with(&format!("The file {path} has been edited. ")),
        "{output}"
    );
    assert_eq!(
        read(&path),
        "CC = gcc\n\nall:\n\t$(CC) -o app main.c\n\techo finished\n"
    );

    // Spaces covering only part of a tab do not match.
    assert_eq!(
        replace("    echo finished", "x").await,
        format!(
            "Error: No replacement was performed, old_str `    echo finished` did not appear verbatim in {path}."
        )
    );

    // An exact old_str with a tab matches as is.
    replace("\t$(CC)", "\t$(CC) -Wall").await;
    assert_eq!(
        read(&path),
        "CC = gcc\n\nall:\n\t$(CC) -Wall -o app main.c\n\techo finished\n"
    );
}

// ---------------------------------------------------------------------------------------------
// insert
// ---------------------------------------------------------------------------------------------

fn inserted(path: &str, numbered: &str) -> String {
    format!(
        "The file {path} has been edited. {}{numbered}Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.",
        cat_n_header("a snippet of the edited file")
    )
}

#[tokio::test]
async fn insert_snippets_and_numbering() {
    let (_dir, base) = temp();
    let path = format!("{base}/greek.txt");
    write(&path, GREEK);
    let editor = Harness::new(StrReplaceEditor::new());
    let insert = |line: i64, text: &str| {
        editor
            .call(json!({"command": "insert", "path": path, "insert_line": line, "new_str": text}))
    };

    assert_eq!(
        insert(0, "top").await,
        inserted(
            &path,
            "     1\ttop\n     2\talpha\n     3\tbeta\n     4\tgamma\n     5\tdelta\n"
        )
    );
    // After line 7 (zeta, now that `top` is line 1): 4 lines before, the new lines, 4 after.
    assert_eq!(
        insert(7, "new 1\nnew 2").await,
        inserted(
            &path,
            "     4\tgamma\n     5\tdelta\n     6\tepsilon\n     7\tzeta\n     8\tnew 1\n     9\tnew 2\n    10\teta\n    11\ttheta\n    12\t\n"
        )
    );
    assert_eq!(
        read(&path),
        "top\nalpha\nbeta\ngamma\ndelta\nepsilon\nzeta\nnew 1\nnew 2\neta\ntheta\n"
    );

    // At the end of a file without a final newline.
    let short = format!("{base}/short.txt");
    write(&short, "one\ntwo");
    assert_eq!(
        editor
            .call(json!({"command": "insert", "path": short, "insert_line": 2, "new_str": "three"}))
            .await,
        inserted(&short, "     1\tone\n     2\ttwo\n     3\tthree\n")
    );
    assert_eq!(read(&short), "one\ntwo\nthree");
}

#[tokio::test]
async fn insert_validation_messages() {
    let (_dir, base) = temp();
    let path = format!("{base}/greek.txt");
    write(&path, GREEK);
    let editor = Harness::new(StrReplaceEditor::new());

    for line in [-1, 10] {
        assert_eq!(
            editor
                .call(
                    json!({"command": "insert", "path": path, "insert_line": line, "new_str": "x"})
                )
                .await,
            format!(
                "Error: Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, 9]"
            )
        );
    }
    assert_eq!(
        editor
            .call(json!({"command": "insert", "path": path}))
            .await,
        "Error: Parameter `insert_line` is required for command: insert",
        "insert_line is checked first"
    );
    assert_eq!(
        editor
            .call(json!({"command": "insert", "path": path, "new_str": "x"}))
            .await,
        "Error: Parameter `insert_line` is required for command: insert"
    );
    assert_eq!(
        editor
            .call(json!({"command": "insert", "path": path, "insert_line": 1}))
            .await,
        "Error: Parameter `new_str` is required for command: insert"
    );
    assert_eq!(read(&path), GREEK);
}

// ---------------------------------------------------------------------------------------------
// undo_edit and the history
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn undo_restores_the_previous_text_one_edit_at_a_time() {
    let (_dir, base) = temp();
    let path = format!("{base}/f.txt");
    write(&path, "one\ntwo\n");
    let editor = Harness::new(StrReplaceEditor::new());
    editor
        .call(json!({"command": "str_replace", "path": path, "old_str": "two", "new_str": "TWO"}))
        .await;
    editor
        .call(json!({"command": "insert", "path": path, "insert_line": 0, "new_str": "zero"}))
        .await;
    assert_eq!(read(&path), "zero\none\nTWO\n");

    assert_eq!(
        editor
            .call(json!({"command": "undo_edit", "path": path}))
            .await,
        format!(
            "Last edit to {path} undone successfully. {}     1\tone\n     2\tTWO\n     3\t\n",
            cat_n_header(&path)
        )
    );
    assert_eq!(read(&path), "one\nTWO\n");
    assert_eq!(
        editor
            .call(json!({"command": "undo_edit", "path": path}))
            .await,
        format!(
            "Last edit to {path} undone successfully. {}     1\tone\n     2\ttwo\n     3\t\n",
            cat_n_header(&path)
        )
    );
    assert_eq!(read(&path), "one\ntwo\n");
    assert_eq!(
        editor
            .call(json!({"command": "undo_edit", "path": path}))
            .await,
        format!("Error: No edit history found for {path}.")
    );
}

#[tokio::test]
async fn history_is_keyed_by_the_normalised_path() {
    let (_dir, base) = temp();
    std::fs::create_dir(format!("{base}/a")).unwrap();
    let path = format!("{base}/a/b.txt");
    write(&path, "v1");
    let editor = Harness::new(StrReplaceEditor::new());
    editor
        .call(json!({"command": "str_replace", "path": format!("{base}/a/./b.txt"), "old_str": "v1", "new_str": "v2"}))
        .await;
    let other_spelling = format!("{base}//a/../a/b.txt");
    assert_eq!(
        editor
            .call(json!({"command": "undo_edit", "path": other_spelling}))
            .await,
        format!(
            "Last edit to {other_spelling} undone successfully. {}     1\tv1\n",
            cat_n_header(&other_spelling)
        ),
        "later messages show the path as given"
    );
    assert_eq!(read(&path), "v1");
}

#[tokio::test]
async fn the_history_is_bounded() {
    let (_dir, base) = temp();
    let path = format!("{base}/f.txt");
    write(&path, "0");
    let editor = Harness::new(StrReplaceEditor::new().with_history_limit(2));
    for (old, new) in [("0", "1"), ("1", "2"), ("2", "3")] {
        editor
            .call(json!({"command": "str_replace", "path": path, "old_str": old, "new_str": new}))
            .await;
    }
    editor
        .call(json!({"command": "undo_edit", "path": path}))
        .await;
    editor
        .call(json!({"command": "undo_edit", "path": path}))
        .await;
    assert_eq!(read(&path), "1", "the oldest version was forgotten");
    assert_eq!(
        editor
            .call(json!({"command": "undo_edit", "path": path}))
            .await,
        format!("Error: No edit history found for {path}.")
    );

    let without = Harness::new(StrReplaceEditor::new().with_history_limit(0));
    without
        .call(json!({"command": "str_replace", "path": path, "old_str": "1", "new_str": "2"}))
        .await;
    assert_eq!(
        without
            .call(json!({"command": "undo_edit", "path": path}))
            .await,
        format!("Error: No edit history found for {path}.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_tool_do_not_lose_updates() {
    let (_dir, base) = temp();
    let path = format!("{base}/f.txt");
    let lines: String = (0..16).map(|i| format!("line {i:02}\n")).collect();
    write(&path, &lines);
    let editor = Arc::new(Harness::new(StrReplaceEditor::new()));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (editor, path) = (editor.clone(), path.clone());
            tokio::spawn(async move {
                editor
                    .call(json!({"command": "str_replace", "path": path, "old_str": format!("line {i:02}"), "new_str": format!("LINE {i:02}")}))
                    .await
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap().starts_with("The file "));
    }
    assert_eq!(read(&path), lines.replace("line", "LINE"));
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn relative_paths_are_refused_first() {
    let editor = Harness::new(StrReplaceEditor::new());
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": "rel.txt", "file_text": "x"}))
            .await,
        "Error: The path rel.txt is not an absolute path"
    );
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": "rel/./x.txt"}))
            .await,
        "Error: The path rel/x.txt is not an absolute path"
    );
    assert_eq!(
        editor
            .call(json!({"command": "undo_edit", "path": ""}))
            .await,
        "Error: The path . is not an absolute path"
    );
    assert!(!Path::new("rel.txt").exists());
}

#[tokio::test]
async fn missing_paths_and_directories_are_refused_with_the_normalised_path() {
    let (_dir, base) = temp();
    let editor = Harness::new(StrReplaceEditor::new());
    for command in ["view", "str_replace", "insert", "undo_edit"] {
        assert_eq!(
            editor
                .call(json!({"command": command, "path": format!("{base}/./missing.txt/")}))
                .await,
            format!(
                "Error: The path {base}/missing.txt does not exist. Please provide a valid path."
            ),
            "{command}"
        );
    }
    for command in ["str_replace", "insert", "undo_edit"] {
        assert_eq!(
            editor
                .call(json!({"command": command, "path": format!("{base}//"), "old_str": "x"}))
                .await,
            format!(
                "Error: The path {base} is a directory and only the `view` command can be used on directories"
            ),
            "{command}"
        );
    }
}

#[tokio::test]
async fn invalid_arguments_never_reach_the_tool() {
    let editor = StrReplaceEditor::new();
    let error = editor
        .execute(
            json!({"command": "delete", "path": "/tmp/x"}),
            &ToolContext::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(_)), "{error}");
    let error = editor
        .execute(
            json!({"command": "insert", "path": "/tmp/x", "insert_line": "3"}),
            &ToolContext::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(_)), "{error}");
}

// ---------------------------------------------------------------------------------------------
// Non-UTF-8 and non-regular files
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn non_utf8_files_are_refused_untouched() {
    let (_dir, base) = temp();
    let path = format!("{base}/latin1.txt");
    let bytes = b"caf\xe9\nsecond\n";
    write(&path, bytes);
    let editor = Harness::new(StrReplaceEditor::new());
    let expected = format!(
        "Error: Failed to read {path}: the file is not valid UTF-8 text (invalid byte at offset 3); only UTF-8 text files can be viewed or edited"
    );
    for args in [
        json!({"command": "view", "path": path}),
        json!({"command": "str_replace", "path": path, "old_str": "second", "new_str": "2"}),
        json!({"command": "insert", "path": path, "insert_line": 0, "new_str": "x"}),
    ] {
        assert_eq!(editor.call(args.clone()).await, expected, "{args}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[tokio::test]
async fn a_fifo_is_refused_instead_of_blocking() {
    let (_dir, base) = temp();
    let path = format!("{base}/pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    let editor = Harness::new(StrReplaceEditor::new());
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        editor.call(json!({"command": "view", "path": path})),
    )
    .await
    .expect("reading a FIFO must not block");
    assert_eq!(
        result,
        format!("Error: Failed to read {path}: not a regular file")
    );
}

// ---------------------------------------------------------------------------------------------
// Workspace confinement
// ---------------------------------------------------------------------------------------------

/// `{base}/ws` (the root, with `a.txt`) and `{base}/outside` (with `secret.txt`).
fn workspace() -> (TempDir, String, String, String) {
    let (dir, base) = temp();
    let ws = format!("{base}/ws");
    let outside = format!("{base}/outside");
    write(&format!("{ws}/a.txt"), "inside\n");
    write(&format!("{outside}/secret.txt"), "secret\n");
    (dir, base, ws, outside)
}

#[tokio::test]
async fn confinement_refuses_relative_paths_with_a_hint() {
    let (_dir, _base, ws, _outside) = workspace();
    let editor = Harness::new(StrReplaceEditor::new().with_workspace_root(&ws));
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": "rel.txt"}))
            .await,
        format!(
            "Error: The path rel.txt is not an absolute path. Use an absolute path inside the workspace root {ws}, for example {ws}/rel.txt"
        )
    );
}

/// Issue 21: the example a refused relative path suggests is itself accepted, even when the
/// relative path climbs out with `..`.
#[tokio::test]
async fn the_suggested_example_path_is_accepted() {
    let (_dir, _base, ws, _outside) = workspace();
    let editor = Harness::new(StrReplaceEditor::new().with_workspace_root(&ws));
    for relative in [
        "new.txt",
        "./sub/../new2.txt",
        "../outside/new3.txt",
        "../../x/new4.txt",
    ] {
        let refused = editor
            .call(json!({"command": "create", "path": relative, "file_text": "x\n"}))
            .await;
        let example = refused
            .rsplit_once(", for example ")
            .unwrap_or_else(|| panic!("no example in {refused:?}"))
            .1
            .to_owned();
        assert!(example.starts_with(&format!("{ws}/")), "{refused}");
        let created = editor
            .call(json!({"command": "create", "path": example, "file_text": "x\n"}))
            .await;
        assert_eq!(
            created,
            format!("File created successfully at: {example}"),
            "the example {example} of {relative} was refused"
        );
    }
}

/// Issue 21: a NUL byte or an escape sequence in a path reaches the model escaped, never raw.
#[tokio::test]
async fn control_characters_in_a_path_are_escaped() {
    let (_dir, _base, ws, _outside) = workspace();
    let editor = Harness::new(StrReplaceEditor::new().with_workspace_root(&ws));
    for (path, shown) in [
        (format!("{ws}/a\0b.txt"), format!("{ws}/a\\0b.txt")),
        (
            format!("{ws}/\x1b[2Jx.txt"),
            format!("{ws}/\\u{{1b}}[2Jx.txt"),
        ),
        ("rel\0.txt".to_owned(), "rel\\0.txt".to_owned()),
    ] {
        for command in ["view", "create"] {
            let text = editor
                .call(json!({"command": command, "path": path, "file_text": "x"}))
                .await;
            if path.contains('\0') {
                assert!(text.starts_with("Error: "), "{text:?}");
            }
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "a raw control character in {text:?}"
            );
            assert!(text.contains(&shown), "{text:?} does not show {shown:?}");
        }
    }
}

#[tokio::test]
async fn confinement_refuses_paths_outside_the_root_and_through_dot_dot() {
    let (_dir, _base, ws, outside) = workspace();
    let editor = Harness::new(StrReplaceEditor::new().with_workspace_root(&ws));
    let secret = format!("{outside}/secret.txt");
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": secret}))
            .await,
        format!(
            "Error: The path {secret} is outside the workspace root {ws}. Only paths inside {ws} can be used."
        )
    );
    let escape = format!("{ws}/../outside/secret.txt");
    assert_eq!(
        editor
            .call(json!({"command": "str_replace", "path": escape, "old_str": "secret", "new_str": "leaked"}))
            .await,
        format!("Error: The path {escape} is outside the workspace root {ws} (it resolves to {secret}). Only paths inside {ws} can be used.")
    );
    let created = format!("{ws}/../outside/new.txt");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": created, "file_text": "x"}))
            .await,
        format!(
            "Error: The path {created} is outside the workspace root {ws} (it resolves to {outside}/new.txt). Only paths inside {ws} can be used."
        )
    );
    assert!(!Path::new(&format!("{outside}/new.txt")).exists());
    assert_eq!(read(&secret), "secret\n");

    // `..` that stays inside is fine.
    let inside = format!("{ws}/sub/../a.txt");
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": inside}))
            .await,
        format!("{}     1\tinside\n     2\t\n", cat_n_header(&inside))
    );
}

#[tokio::test]
async fn confinement_refuses_symlinks_that_lead_outside() {
    let (_dir, _base, ws, outside) = workspace();
    std::os::unix::fs::symlink(&outside, format!("{ws}/escape")).unwrap();
    std::os::unix::fs::symlink(
        format!("{outside}/nothing-yet.txt"),
        format!("{ws}/dangling"),
    )
    .unwrap();
    let editor = Harness::new(StrReplaceEditor::new().with_workspace_root(&ws));
    let refused = |path: &str, resolved: &str| {
        format!(
            "Error: The path {path} is outside the workspace root {ws} (it resolves to {resolved}). Only paths inside {ws} can be used."
        )
    };

    let through = format!("{ws}/escape/secret.txt");
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": through}))
            .await,
        refused(&through, &format!("{outside}/secret.txt"))
    );
    assert_eq!(
        editor
            .call(json!({"command": "str_replace", "path": through, "old_str": "secret", "new_str": "leaked"}))
            .await,
        refused(&through, &format!("{outside}/secret.txt"))
    );
    // A path that does not exist yet is checked through its existing ancestor.
    let new_file = format!("{ws}/escape/sub/new.txt");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": new_file, "file_text": "x"}))
            .await,
        refused(&new_file, &format!("{outside}/sub/new.txt"))
    );
    // A dangling symlink is followed to where it points.
    let dangling = format!("{ws}/dangling");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": dangling, "file_text": "x"}))
            .await,
        refused(&dangling, &format!("{outside}/nothing-yet.txt"))
    );
    assert_eq!(
        editor
            .call(json!({"command": "view", "path": format!("{ws}/escape")}))
            .await,
        refused(&format!("{ws}/escape"), &outside)
    );
    assert!(!Path::new(&format!("{outside}/sub")).exists());
    assert!(!Path::new(&format!("{outside}/nothing-yet.txt")).exists());
    assert_eq!(read(&format!("{outside}/secret.txt")), "secret\n");

    // Listing the root shows the symlink but does not enter it.
    assert_eq!(
        editor.call(json!({"command": "view", "path": ws})).await,
        format!(
            "Here's the files and directories up to 2 levels deep in {ws}, excluding hidden items:\n\
             {ws}\n{ws}/a.txt\n{ws}/dangling\n{ws}/escape\n\n"
        )
    );
}

#[tokio::test]
async fn symlinks_inside_the_root_are_fine_and_share_history() {
    let (_dir, base, ws, _outside) = workspace();
    std::fs::create_dir(format!("{ws}/real")).unwrap();
    std::os::unix::fs::symlink(format!("{ws}/real"), format!("{ws}/alias")).unwrap();
    let editor = Harness::new(StrReplaceEditor::new().with_workspace_root(&ws));

    let via_alias = format!("{ws}/alias/f.txt");
    assert_eq!(
        editor
            .call(json!({"command": "create", "path": via_alias, "file_text": "one\n"}))
            .await,
        format!("File created successfully at: {via_alias}")
    );
    let real = format!("{ws}/real/f.txt");
    assert_eq!(read(&real), "one\n");
    editor
        .call(json!({"command": "str_replace", "path": via_alias, "old_str": "one", "new_str": "two"}))
        .await;
    assert_eq!(read(&real), "two\n");
    assert!(
        editor
            .call(json!({"command": "undo_edit", "path": real}))
            .await
            .starts_with(&format!("Last edit to {real} undone successfully. "))
    );
    assert_eq!(read(&real), "one\n");

    // A root that is itself a symlink confines to its target.
    std::os::unix::fs::symlink(&ws, format!("{base}/ws-link")).unwrap();
    let linked =
        Harness::new(StrReplaceEditor::new().with_workspace_root(format!("{base}/ws-link")));
    assert!(
        linked
            .call(json!({"command": "view", "path": format!("{ws}/a.txt")}))
            .await
            .starts_with("Here's the result of running `cat -n`")
    );
    assert!(
        linked
            .call(json!({"command": "view", "path": format!("{base}/ws-link/a.txt")}))
            .await
            .starts_with("Here's the result of running `cat -n`")
    );
}

#[tokio::test]
async fn without_a_root_dot_dot_paths_work() {
    let (_dir, _base, ws, outside) = workspace();
    let editor = Harness::new(StrReplaceEditor::new());
    let path = format!("{ws}/../outside/secret.txt");
    assert_eq!(
        editor.call(json!({"command": "view", "path": path})).await,
        format!("{}     1\tsecret\n     2\t\n", cat_n_header(&path))
    );
    assert_eq!(read(&format!("{outside}/secret.txt")), "secret\n");
}

#[test]
fn editor_errors_become_tool_failures() {
    let error: ToolError = EditorError::NoHistory { path: "/x".into() }.into();
    assert!(matches!(&error, ToolError::Failure(m) if m == "No edit history found for /x."));
}

// ---------------------------------------------------------------------------------------------
// Through a real ToolCallAgent
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn agent_sees_the_success_observations() {
    let (_dir, base) = temp();
    let path = format!("{base}/src/a.txt");
    let observations = agent_observations(
        StrReplaceEditor::new().with_workspace_root(&base),
        &[
            json!({"command": "create", "path": path, "file_text": "fn main() {\n\tprintln!(\"hi\");\n}\n"}),
            json!({"command": "view", "path": path, "view_range": [2, -1]}),
            json!({"command": "str_replace", "path": path, "old_str": "\"hi\"", "new_str": "\"hello\""}),
            json!({"command": "insert", "path": path, "insert_line": 0, "new_str": "// demo"}),
            json!({"command": "undo_edit", "path": path}),
            json!({"command": "view", "path": base}),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed(&format!("File created successfully at: {path}")),
            observed(&format!(
                "{}     2\t        println!(\"hi\");\n     3\t}}\n     4\t\n",
                cat_n_header(&path)
            )),
            observed(&edited(
                &path,
                &format!("a snippet of {path}"),
                "     1\tfn main() {\n     2\t        println!(\"hello\");\n     3\t}\n     4\t\n"
            )),
            observed(&inserted(
                &path,
                "     1\t// demo\n     2\tfn main() {\n     3\t        println!(\"hello\");\n     4\t}\n     5\t\n"
            )),
            observed(&format!(
                "Last edit to {path} undone successfully. {}     1\tfn main() {{\n     2\t        println!(\"hello\");\n     3\t}}\n     4\t\n",
                cat_n_header(&path)
            )),
            observed(&format!(
                "Here's the files and directories up to 2 levels deep in {base}, excluding hidden items:\n{base}\n{base}/src\n{base}/src/a.txt\n\n"
            )),
        ]
    );
    assert_eq!(read(&path), "fn main() {\n\tprintln!(\"hello\");\n}\n");
}

#[tokio::test]
async fn agent_sees_the_error_observations() {
    let (_dir, _base, ws, outside) = workspace();
    write(&format!("{ws}/dup.txt"), "x\nx\n");
    let observations = agent_observations(
        StrReplaceEditor::new(),
        &[
            json!({"command": "create", "path": "rel.txt", "file_text": "x"}),
            json!({"command": "view", "path": format!("{ws}/missing.txt")}),
            json!({"command": "create", "path": format!("{ws}/a.txt"), "file_text": "x"}),
            json!({"command": "str_replace", "path": format!("{ws}/dup.txt"), "old_str": "x", "new_str": "y"}),
            json!({"command": "view", "path": format!("{ws}/a.txt"), "view_range": [3, 1]}),
            json!({"command": "undo_edit", "path": format!("{ws}/a.txt")}),
        ],
    )
    .await;
    assert_eq!(
        observations,
        [
            observed("Error: The path rel.txt is not an absolute path"),
            observed(&format!(
                "Error: The path {ws}/missing.txt does not exist. Please provide a valid path."
            )),
            observed(&format!(
                "Error: File already exists at: {ws}/a.txt. Cannot overwrite files using command `create`."
            )),
            observed(
                "Error: No replacement was performed. Multiple occurrences of old_str `x` in lines [1, 2]. Please ensure it is unique"
            ),
            observed(
                "Error: Invalid `view_range`: [3, 1]. Its first element `3` should be within the range of lines of the file: [1, 2]"
            ),
            observed(&format!("Error: No edit history found for {ws}/a.txt.")),
        ]
    );

    let confined = agent_observations(
        StrReplaceEditor::new().with_workspace_root(&ws),
        &[
            json!({"command": "view", "path": format!("{outside}/secret.txt")}),
            json!({"command": "delete", "path": format!("{ws}/a.txt")}),
        ],
    )
    .await;
    assert_eq!(
        confined,
        [
            observed(&format!("Error: The path {outside}/secret.txt is outside the workspace root {ws}. Only paths inside {ws} can be used.")),
            "Error: ⚠️ Tool 'str_replace_editor' encountered a problem: Invalid arguments: unknown variant `delete`, expected one of `view`, `create`, `str_replace`, `insert`, `undo_edit`".to_owned(),
        ]
    );
}

#[tokio::test]
async fn a_read_only_editor_views_and_refuses_every_write() {
    let (_dir, base) = temp();
    let file = format!("{base}/notes.txt");
    write(&file, GREEK);
    let editor = Harness::new(
        StrReplaceEditor::new()
            .with_workspace_root(&base)
            .read_only(),
    );
    let shown = editor.call(json!({"command": "view", "path": file})).await;
    assert!(shown.contains("alpha"), "{shown}");
    for (command, args) in [
        (
            "create",
            json!({"command": "create", "path": format!("{base}/new.txt"), "file_text": "x"}),
        ),
        (
            "str_replace",
            json!({"command": "str_replace", "path": file, "old_str": "beta", "new_str": "BETA"}),
        ),
        (
            "insert",
            json!({"command": "insert", "path": file, "insert_line": 0, "new_str": "top"}),
        ),
        ("undo_edit", json!({"command": "undo_edit", "path": file})),
    ] {
        let said = editor.call(args).await;
        assert!(
            said.contains("read-only") && said.contains(&format!("`{command}`")),
            "{said}"
        );
    }
    assert_eq!(read(&file), GREEK);
    assert!(!Path::new(&format!("{base}/new.txt")).exists());
}
