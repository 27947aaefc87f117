//! The planning flow's prompts (our own words for OpenManus's duties), the strings it shares with
//! OpenManus (the default plan, `Plan completed:` and the run_flow messages) and the `[AGENT_KEY]`
//! step tag.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

/// The steps of the plan made when the planner does not create one (OpenManus's default plan).
pub const DEFAULT_PLAN_STEPS: [&str; 3] = ["Analyze request", "Execute task", "Verify results"];

/// How many characters of the request the default plan's title keeps.
pub const DEFAULT_TITLE_CHARS: usize = 50;

/// The prefix of the final summary: `Plan completed:\n\n{summary}`.
pub const PLAN_COMPLETED: &str = "Plan completed:\n\n";

/// The summary when neither the model nor the primary agent could write one.
pub const SUMMARY_ERROR: &str = "Plan completed. Error generating summary.";

/// The last line of a flow stopped by its time limit (run_flow.py's message).
pub const TIMEOUT_ADVICE: &str =
    "Operation terminated due to timeout. Please try a simpler request.";

/// The last line of a cancelled flow (run_flow.py's message on Ctrl-C).
pub const FLOW_CANCELLED: &str = "Operation cancelled by user.";

/// The planner's system prompt; the executor list is appended when there are several.
pub const PLANNER_SYSTEM_PROMPT: &str = "You are a planning assistant. Turn the task into a short \
plan of concrete, actionable steps: aim at the key milestones rather than every small action, and \
keep each step clear and brief. Record the plan with the `planning` tool's `create` command.";

/// The system prompt of the final summary request.
pub const SUMMARY_SYSTEM_PROMPT: &str = "You are a planning assistant. A plan has been carried \
out; report on how it went.";

/// The planner's request: `{PLANNER_REQUEST}{task}`.
pub const PLANNER_REQUEST: &str = "Make a plan of clear steps that accomplishes this task: ";

/// The title of the default plan: `Plan for: {first 50 characters}`, plus `...` when cut.
#[must_use]
pub fn default_plan_title(request: &str) -> String {
    let mut chars = request.chars();
    let head: String = chars.by_ref().take(DEFAULT_TITLE_CHARS).collect();
    let more = if chars.next().is_some() { "..." } else { "" };
    format!("Plan for: {head}{more}")
}

/// The planner's system prompt for these executors (`(key, description)` pairs). With more than
/// one executor it lists them as JSON (`{"name": KEY, "description": ...}`, names upper-cased as
/// OpenManus does) and asks for each step to start with its executor's `[KEY]` tag.
#[must_use]
pub fn planner_system_prompt(executors: &[(String, Option<String>)]) -> String {
    #[derive(Serialize)]
    struct Entry<'a> {
        name: String,
        description: Option<&'a str>,
    }
    let mut prompt = PLANNER_SYSTEM_PROMPT.to_owned();
    if executors.len() > 1 {
        let list: Vec<Entry<'_>> = executors
            .iter()
            .map(|(key, description)| Entry {
                name: key.to_uppercase(),
                description: description.as_deref(),
            })
            .collect();
        let example = executors[0].0.to_uppercase();
        let _ = write!(
            prompt,
            "\n\nThe steps will be carried out by these agents:\n{}\nStart the text of every step \
             with the name of the agent best suited to it, in square brackets, for example \
             `[{example}] ...`.",
            serde_json::to_string(&list).unwrap_or_default()
        );
    }
    prompt
}

/// The prompt an executor gets for one step: the plan status, the step (0-based, as in the plan
/// text) and the instruction to do that step only. The two headers and the
/// `step {index}: "{text}"` phrase are OpenManus's; the rest is our own wording.
#[must_use]
pub fn step_prompt(plan_text: &str, index: usize, step_text: &str) -> String {
    format!(
        "CURRENT PLAN STATUS:\n{plan_text}\nYOUR CURRENT TASK:\nYou are working on step \
         {index}: \"{step_text}\"\n\nDo this step only, with the tools it needs, and leave the \
         later steps alone. When the step is done, end with a short summary of what you did and \
         what you found."
    )
}

/// The user message of the final summary request.
#[must_use]
pub fn summary_request(plan_text: &str) -> String {
    format!(
        "The plan below has been carried out. Its final status:\n\n{plan_text}\nSummarize what \
         was accomplished, name any step that is blocked or unfinished, and add your final \
         thoughts."
    )
}

/// The executor tag of a step: the first `[KEY]` whose key matches `[A-Z_]+` (OpenManus's
/// regex `\[([A-Z_]+)\]`), lower-cased. `"[DATA_ANALYSIS] Chart it"` gives `data_analysis`;
/// `"[Manus] ..."` and `"[A1] ..."` give none.
#[must_use]
pub fn step_tag(text: &str) -> Option<String> {
    let mut from = 0;
    while let Some(open) = text[from..].find('[') {
        let start = from + open + 1;
        let len = text[start..]
            .bytes()
            .take_while(|b| b.is_ascii_uppercase() || *b == b'_')
            .count();
        if len > 0 && text[start + len..].starts_with(']') {
            return Some(text[start..start + len].to_ascii_lowercase());
        }
        from = start;
    }
    None
}

/// `Request processing timed out after {limit}` (run_flow.py says "after 1 hour").
#[must_use]
pub fn timeout_message(limit: Duration) -> String {
    format!(
        "Request processing timed out after {}",
        human_duration(limit)
    )
}

fn human_duration(d: Duration) -> String {
    let plural = |n: u64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    let secs = d.as_secs();
    if d.subsec_nanos() == 0 {
        if secs >= 3600 && secs.is_multiple_of(3600) {
            return plural(secs / 3600, "hour");
        }
        if secs >= 60 && secs.is_multiple_of(60) {
            return plural(secs / 60, "minute");
        }
        return plural(secs, "second");
    }
    format!("{} seconds", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_follow_the_openmanus_regex() {
        assert_eq!(step_tag("[MANUS] Search").as_deref(), Some("manus"));
        assert_eq!(
            step_tag("Chart it [DATA_ANALYSIS]").as_deref(),
            Some("data_analysis")
        );
        assert_eq!(step_tag("[[SWE]] fix").as_deref(), Some("swe"));
        assert_eq!(step_tag("[Manus] [A1] [] [_]").as_deref(), Some("_"));
        assert_eq!(step_tag("[Manus] search"), None);
        assert_eq!(step_tag("[A1] x"), None);
        assert_eq!(step_tag("no tag ["), None);
        assert_eq!(step_tag("é [ÉTÉ] [OK]").as_deref(), Some("ok"));
    }

    #[test]
    fn default_title_cuts_at_fifty_characters() {
        assert_eq!(default_plan_title("short"), "Plan for: short");
        let fifty = "é".repeat(50);
        assert_eq!(default_plan_title(&fifty), format!("Plan for: {fifty}"));
        assert_eq!(
            default_plan_title(&format!("{fifty}x")),
            format!("Plan for: {fifty}...")
        );
    }

    #[test]
    fn timeout_messages_read_naturally() {
        assert_eq!(
            timeout_message(Duration::from_secs(3600)),
            "Request processing timed out after 1 hour"
        );
        assert_eq!(
            timeout_message(Duration::from_secs(7200)),
            "Request processing timed out after 2 hours"
        );
        assert_eq!(
            timeout_message(Duration::from_secs(120)),
            "Request processing timed out after 2 minutes"
        );
        assert_eq!(
            timeout_message(Duration::from_secs(1)),
            "Request processing timed out after 1 second"
        );
        assert_eq!(
            timeout_message(Duration::from_millis(250)),
            "Request processing timed out after 0.25 seconds"
        );
    }

    #[test]
    fn the_executor_list_appears_only_for_several_executors() {
        let one = [("manus".to_owned(), Some("general".to_owned()))];
        assert_eq!(planner_system_prompt(&one), PLANNER_SYSTEM_PROMPT);
        let two = [
            ("manus".to_owned(), Some("general".to_owned())),
            ("data_analysis".to_owned(), None),
        ];
        let prompt = planner_system_prompt(&two);
        assert!(prompt.contains(
            r#"[{"name":"MANUS","description":"general"},{"name":"DATA_ANALYSIS","description":null}]"#
        ), "{prompt}");
        assert!(prompt.contains("`[MANUS] ...`"), "{prompt}");
    }
}
