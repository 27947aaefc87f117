//! The paths a tool call names, for rules by path (`[[permissions.rules]]` with `path`): its
//! `path` argument (the editor's), and the absolute, `~` and relative (`dir/file`, from the
//! workspace) paths in its command or code. A
//! reading of words, not of the shell: a path built at run time (`$HOME/x`, `"/e" + "tc"`) is
//! not seen — rules by path narrow what a call may name, and the confinement still decides
//! what it can reach.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// Characters that end a word of a command or of code.
const SEPARATORS: &[char] = &[
    ' ', '\t', '\n', '\r', ';', '|', '&', '<', '>', '(', ')', '\'', '"', '`', '=', ',', '[', ']',
    '{', '}',
];

/// The absolute paths `args` and `text` name, lexically normalised (`..` resolved, so that a
/// path cannot climb out from under a rule's directory), relative `path` arguments taken from
/// `workspace`, `~` from `home`.
#[must_use]
pub fn named_paths(
    args: &Value,
    text: &str,
    workspace: &Path,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if let Some(path) = args.get("path").and_then(Value::as_str) {
        let path = expand(path, home).unwrap_or_else(|| PathBuf::from(path));
        paths.push(normalise(&workspace.join(path)));
    }
    for word in text.split(SEPARATORS) {
        if word.starts_with('/') || word == "~" || word.starts_with("~/") {
            if let Some(path) = expand(word, home) {
                paths.push(normalise(&path));
            }
        } else if relative(word) {
            paths.push(normalise(&workspace.join(word)));
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// A word that reads as a relative path (`notes/a.txt`, `./x`, `../y`): it has a `/` and is
/// not a URL.
fn relative(word: &str) -> bool {
    word.contains('/')
        && !word.contains("://")
        && word
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '.' || c == '_')
}

/// `~` and `~/…` from `home`; other paths as they are; `None` for `~` without a home.
fn expand(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    if path == "~" {
        return home.map(Path::to_path_buf);
    }
    match path.strip_prefix("~/") {
        Some(rest) => home.map(|home| home.join(rest)),
        None => Some(PathBuf::from(path)),
    }
}

/// `path` with `.` dropped and `..` taking off the previous component (never above `/`).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_come_from_the_path_argument_and_the_words_of_the_text() {
        let ws = Path::new("/w");
        let home = Some(Path::new("/home/me"));
        assert_eq!(
            named_paths(&json!({"path": "notes/../a.txt"}), "", ws, home),
            [PathBuf::from("/w/a.txt")]
        );
        assert_eq!(
            named_paths(
                &json!({"command": "x"}),
                "cat ~/.ssh/id; cp /w/x \"/tmp/y\" && ls ../../etc>/w/../etc/out",
                ws,
                home
            ),
            [
                PathBuf::from("/etc"),
                PathBuf::from("/etc/out"),
                PathBuf::from("/home/me/.ssh/id"),
                PathBuf::from("/tmp/y"),
                PathBuf::from("/w/x"),
            ]
        );
        assert_eq!(
            named_paths(&json!({}), "open('/etc/passwd').read()", ws, None),
            [PathBuf::from("/etc/passwd")]
        );
        assert!(named_paths(&json!({}), "echo ~", ws, None).is_empty());
        assert_eq!(
            named_paths(
                &json!({}),
                "cat private/key ../up; curl https://example.com/x",
                ws,
                None
            ),
            [PathBuf::from("/up"), PathBuf::from("/w/private/key")]
        );
    }
}
