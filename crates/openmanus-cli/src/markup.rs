//! What the spinner line may show of a reply that is still streaming: the prose, never the
//! tool-call markup of a text-mode model (`<tool_call>{…}</tool_call>`, or a fenced block), nor
//! the first characters of one that has only begun to arrive (`<tool_c`, a lone backtick).

/// The tags of a text-mode tool call (agent-llm's `text_mode` reads the same ones).
const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const FENCE: &str = "```";

/// `streamed` without its tool-call markup: every `<tool_call>…</tool_call>` and fenced block is
/// cut (to the end when it has not closed yet), and so is a trailing piece that may be the start
/// of one. The second value says whether anything was cut (a call is being written).
pub fn visible(streamed: &str) -> (String, bool) {
    let mut shown = String::new();
    let mut rest = streamed;
    let mut cut = false;
    loop {
        let tag = rest.find(OPEN).map(|at| (at, OPEN, CLOSE));
        let fence = rest.find(FENCE).map(|at| (at, FENCE, FENCE));
        let next = match (tag, fence) {
            (Some(t), Some(f)) => Some(if t.0 <= f.0 { t } else { f }),
            (t, f) => t.or(f),
        };
        let Some((at, open, close)) = next else {
            break;
        };
        shown.push_str(&rest[..at]);
        cut = true;
        let inside = &rest[at + open.len()..];
        match inside.find(close) {
            Some(end) => rest = &inside[end + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    // A trailing piece that may grow into a tag or a fence is held back.
    let held = partial_start(rest);
    cut |= held > 0;
    shown.push_str(&rest[..rest.len() - held]);
    (shown, cut)
}

/// The length of the longest end of `text` that is a proper beginning of `<tool_call>`, or of a
/// fence at the start of a line (a backtick after other text closes inline code).
fn partial_start(text: &str) -> usize {
    let tag = (1..OPEN.len())
        .map(|n| &OPEN[..n])
        .filter(|prefix| text.ends_with(prefix))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = (1..FENCE.len())
        .map(|n| &FENCE[..n])
        .filter(|prefix| {
            text.strip_suffix(prefix)
                .is_some_and(|before| before.is_empty() || before.ends_with('\n'))
        })
        .map(str::len)
        .max()
        .unwrap_or(0);
    tag.max(fence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_is_shown_as_it_is() {
        assert_eq!(
            visible("Let me look at the files."),
            ("Let me look at the files.".into(), false)
        );
        assert_eq!(visible("a < b and `x`"), ("a < b and `x`".into(), false));
    }

    #[test]
    fn a_tool_call_is_cut_whether_or_not_it_has_closed() {
        let call =
            "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>";
        assert_eq!(
            visible(&format!("Listing.\n{call}\nThen more.")),
            ("Listing.\n\nThen more.".into(), true)
        );
        assert_eq!(
            visible("Listing.\n<tool_call>{\"name\": \"ba"),
            ("Listing.\n".into(), true)
        );
    }

    #[test]
    fn a_tag_or_fence_that_has_only_begun_is_held_back() {
        for partial in ["<", "<tool", "<tool_call", "`", "``"] {
            assert_eq!(
                visible(&format!("Listing.\n{partial}")),
                ("Listing.\n".into(), true),
                "{partial}"
            );
        }
    }

    #[test]
    fn fenced_calls_are_cut_too() {
        assert_eq!(
            visible("Running it:\n```json\n{\"name\": \"bash\", \"arguments\": {}}\n```\nDone."),
            ("Running it:\n\nDone.".into(), true)
        );
        assert_eq!(
            visible("Running it:\n```json\n{\"name\": \"ba"),
            ("Running it:\n".into(), true)
        );
    }
}
