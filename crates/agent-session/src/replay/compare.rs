//! Comparing a replayed run with its recording, step by step, after normalising what may
//! fairly differ between two runs of the same tools.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::recording::{Call, Step};

/// A rule that rewrites a text before it is compared (applied to the recorded and to the
/// replayed text alike).
pub type Normalizer = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// What is normalised before comparing: each workspace's path becomes `$WORKSPACE`, then the
/// replacements and rules given run in order.
#[derive(Clone, Default)]
pub(crate) struct Normalization {
    pub(crate) recorded_workspace: Option<String>,
    pub(crate) replay_workspace: Vec<String>,
    pub(crate) rules: Vec<Normalizer>,
}

/// What a workspace's path is written as in compared texts.
pub const WORKSPACE_MARK: &str = "$WORKSPACE";

impl Normalization {
    pub(crate) fn new(recorded: Option<&Path>, replay: &Path, rules: Vec<Normalizer>) -> Self {
        let mut replay_workspace = vec![replay.to_string_lossy().into_owned()];
        if let Ok(canonical) = replay.canonicalize() {
            replay_workspace.push(canonical.to_string_lossy().into_owned());
        }
        // The longest first, so a path is never half-replaced by a shorter one it starts with.
        replay_workspace.sort_by_key(|p| std::cmp::Reverse(p.len()));
        replay_workspace.dedup();
        Self {
            recorded_workspace: recorded.map(|p| p.to_string_lossy().into_owned()),
            replay_workspace,
            rules,
        }
    }

    fn apply(&self, text: &str, workspaces: &[&str]) -> String {
        let mut text = text.to_owned();
        for workspace in workspaces {
            if !workspace.is_empty() && text.contains(workspace) {
                text = text.replace(workspace, WORKSPACE_MARK);
            }
        }
        for rule in &self.rules {
            text = rule(&text);
        }
        text
    }

    fn recorded(&self, text: &str) -> String {
        let workspaces: Vec<&str> = self.recorded_workspace.iter().map(String::as_str).collect();
        self.apply(text, &workspaces)
    }

    fn replayed(&self, text: &str) -> String {
        let workspaces: Vec<&str> = self.replay_workspace.iter().map(String::as_str).collect();
        self.apply(text, &workspaces)
    }
}

/// A tool call as compared: its tool and arguments (normalised).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallView {
    /// The tool.
    pub name: String,
    /// The arguments, as the model wrote them (normalised; `None`: the call was closed
    /// without having started).
    pub arguments: Option<String>,
}

impl fmt::Display for CallView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}({})",
            self.name,
            shorten(self.arguments.as_deref().unwrap_or("never started"), 160)
        )
    }
}

/// What differs at the step where a replay diverged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Difference {
    /// A tool call differs, or one of the two runs has a call the other has not.
    ToolCall {
        /// The call's place in the step (1-based).
        call: usize,
        /// The recorded call (`None`: the replay made an extra call).
        expected: Option<CallView>,
        /// The replayed call (`None`: the replay did not make it).
        got: Option<CallView>,
    },
    /// A call's observation differs (or whether it succeeded).
    Observation {
        /// The call's place in the step (1-based).
        call: usize,
        /// The tool.
        name: String,
        /// The recorded observation (normalised; `None`: it never finished).
        expected: Option<String>,
        /// The replayed observation (normalised).
        got: Option<String>,
        /// A short line diff of the two.
        diff: String,
    },
    /// The recording has this step; the replay stopped before it.
    MissingStep,
    /// The replay ran this step; the recording has no such step.
    ExtraStep {
        /// The calls the replayed step made (none when the model had no reply left for it).
        calls: Vec<CallView>,
    },
    /// Every step matched, but the run ended otherwise.
    Outcome {
        /// The recorded status.
        expected: String,
        /// The replayed status.
        got: String,
    },
}

/// Where a replay first differs from its recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The run (task) of the recording, 1-based.
    pub run: usize,
    /// The agent's step number in that run (0 for a difference in the run's outcome).
    pub step: u32,
    /// The step's place among all steps of the recording, 1-based: the steps before it
    /// matched.
    pub ordinal: usize,
    /// What differs.
    pub difference: Difference,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.run > 1 {
            format!("step {} of run {}", self.step, self.run)
        } else {
            format!("step {}", self.step)
        };
        match &self.difference {
            Difference::ToolCall {
                call,
                expected,
                got,
            } => {
                write!(f, "{at}, call {call}: the tool call differs")?;
                write!(f, "\n  expected: ")?;
                match expected {
                    Some(call) => write!(f, "{call}")?,
                    None => write!(f, "no call")?,
                }
                write!(f, "\n  got:      ")?;
                match got {
                    Some(call) => write!(f, "{call}"),
                    None => write!(f, "no call"),
                }
            }
            Difference::Observation {
                call, name, diff, ..
            } => {
                write!(
                    f,
                    "{at}, call {call} ({name}): the observation differs\n{diff}"
                )
            }
            Difference::MissingStep => write!(f, "{at}: the replay ended before this step"),
            Difference::ExtraStep { calls } => {
                write!(f, "{at}: the replay ran a step the recording does not have")?;
                for call in calls {
                    write!(f, "\n  got: {call}")?;
                }
                Ok(())
            }
            Difference::Outcome { expected, got } => write!(
                f,
                "run {}: every step matched but the run ended otherwise\n  expected: {expected}\n  got:      {got}",
                self.run
            ),
        }
    }
}

/// Compares the steps of one run; `Ok(n)` when they match (n steps), else the first
/// divergence. `ordinal` is the number of steps of earlier runs; `complete` says whether the
/// recorded run ended (a recording cut short matches a replay that goes on past its end).
pub(crate) fn compare_run(
    run: usize,
    ordinal: usize,
    expected: &[Step],
    got: &[Step],
    complete: bool,
    norm: &Normalization,
) -> Result<usize, Box<Divergence>> {
    for (index, recorded) in expected.iter().enumerate() {
        let at = |difference| {
            Box::new(Divergence {
                run,
                step: recorded.step,
                ordinal: ordinal + index + 1,
                difference,
            })
        };
        let Some(replayed) = got.get(index) else {
            return Err(at(Difference::MissingStep));
        };
        let last = index + 1 == expected.len();
        if let Some(difference) = compare_step(recorded, replayed, norm, last && !complete) {
            return Err(at(difference));
        }
    }
    if complete && let Some(extra) = got.get(expected.len()) {
        return Err(Box::new(Divergence {
            run,
            step: extra.step,
            ordinal: ordinal + expected.len() + 1,
            difference: Difference::ExtraStep {
                calls: extra.calls.iter().map(|c| view(c, norm, false)).collect(),
            },
        }));
    }
    Ok(expected.len())
}

fn view(call: &Call, norm: &Normalization, recorded: bool) -> CallView {
    let normalise = |text: &str| {
        if recorded {
            norm.recorded(text)
        } else {
            norm.replayed(text)
        }
    };
    CallView {
        name: call.name.clone(),
        arguments: call.arguments.as_deref().map(normalise),
    }
}

/// The first difference between two steps. `cut`: the recording stops inside this step, so
/// only what it holds is compared.
fn compare_step(
    expected: &Step,
    got: &Step,
    norm: &Normalization,
    cut: bool,
) -> Option<Difference> {
    let count = expected.calls.len().max(got.calls.len());
    for index in 0..count {
        let recorded = expected.calls.get(index);
        let replayed = got.calls.get(index);
        if recorded.is_none() && cut {
            return None;
        }
        let expected_view = recorded.map(|c| view(c, norm, true));
        let got_view = replayed.map(|c| view(c, norm, false));
        if expected_view != got_view {
            return Some(Difference::ToolCall {
                call: index + 1,
                expected: expected_view,
                got: got_view,
            });
        }
        let (Some(recorded), Some(replayed)) = (recorded, replayed) else {
            continue;
        };
        if recorded.observation.is_none() && cut {
            return None;
        }
        let expected_text = recorded.observation.as_deref().map(|t| norm.recorded(t));
        let got_text = replayed.observation.as_deref().map(|t| norm.replayed(t));
        if expected_text != got_text || recorded.success != replayed.success {
            let diff = diff(
                expected_text.as_deref().unwrap_or(""),
                got_text.as_deref().unwrap_or(""),
            );
            let diff = if expected_text == got_text {
                format!(
                    "  the same text, but success was {:?}, now {:?}",
                    recorded.success, replayed.success
                )
            } else {
                diff
            };
            return Some(Difference::Observation {
                call: index + 1,
                name: recorded.name.clone(),
                expected: expected_text,
                got: got_text,
                diff,
            });
        }
    }
    None
}

/// How many differing lines a diff shows at most, from each side.
const DIFF_LINES: usize = 6;

/// A short line diff: the lines the two texts share at their start and end are left out;
/// the first differing line is numbered, then up to [`DIFF_LINES`] lines of each side.
pub(crate) fn diff(expected: &str, got: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = got.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let removed = &a[head..a.len() - tail];
    let added = &b[head..b.len() - tail];
    let mut out = format!("  @@ line {} @@", head + 1);
    if removed.is_empty() && added.is_empty() {
        // Only line endings or a final newline differ.
        out.push_str(&format!(
            "\n  - {}\n  + {}",
            shorten(&format!("{expected:?}"), 160),
            shorten(&format!("{got:?}"), 160)
        ));
        return out;
    }
    for (sign, lines) in [('-', removed), ('+', added)] {
        for line in lines.iter().take(DIFF_LINES) {
            out.push_str(&format!("\n  {sign} {}", shorten(line, 160)));
        }
        if lines.len() > DIFF_LINES {
            out.push_str(&format!(
                "\n  {sign} ... {} more lines",
                lines.len() - DIFF_LINES
            ));
        }
    }
    out
}

/// `text` cut to `max` characters, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(step: u32, calls: &[(&str, &str, &str)]) -> Step {
        Step {
            step,
            calls: calls
                .iter()
                .enumerate()
                .map(|(i, (name, args, observation))| Call {
                    id: format!("c{i}"),
                    name: (*name).to_owned(),
                    arguments: Some((*args).to_owned()),
                    observation: Some((*observation).to_owned()),
                    success: Some(true),
                })
                .collect(),
        }
    }

    fn norm() -> Normalization {
        Normalization::new(Some(Path::new("/rec/ws")), Path::new("/new/ws"), Vec::new())
    }

    #[test]
    fn workspaces_are_normalised_and_the_first_differing_observation_is_named() {
        let recorded = [
            step(1, &[("bash", "{}", "in /rec/ws/a")]),
            step(2, &[("bash", "{}", "x\ny\nz"), ("bash", "{}", "1")]),
        ];
        let same = [
            step(1, &[("bash", "{}", "in /new/ws/a")]),
            step(2, &[("bash", "{}", "x\ny\nz"), ("bash", "{}", "1")]),
        ];
        assert_eq!(compare_run(1, 0, &recorded, &same, true, &norm()), Ok(2));
        let changed = [
            step(1, &[("bash", "{}", "in /new/ws/a")]),
            step(2, &[("bash", "{}", "x\nY\nz"), ("bash", "{}", "1")]),
        ];
        let divergence = compare_run(1, 0, &recorded, &changed, true, &norm()).unwrap_err();
        assert_eq!(divergence.step, 2);
        assert_eq!(divergence.ordinal, 2);
        let Difference::Observation { call, diff, .. } = &divergence.difference else {
            panic!("{divergence:?}")
        };
        assert_eq!(*call, 1);
        assert_eq!(diff, "  @@ line 2 @@\n  - y\n  + Y");
        assert!(divergence.to_string().starts_with("step 2, call 1 (bash)"));
    }

    #[test]
    fn calls_missing_and_extra_steps_and_cut_recordings() {
        let recorded = [step(1, &[("bash", "{\"a\":1}", "ok")])];
        let other_args = [step(1, &[("bash", "{\"a\":2}", "ok")])];
        let divergence = compare_run(1, 3, &recorded, &other_args, true, &norm()).unwrap_err();
        assert_eq!(divergence.ordinal, 4);
        assert!(matches!(
            divergence.difference,
            Difference::ToolCall { call: 1, .. }
        ));
        let extra = [step(1, &[("bash", "{\"a\":1}", "ok")]), step(2, &[])];
        let divergence = compare_run(1, 0, &recorded, &extra, true, &norm()).unwrap_err();
        assert_eq!(
            divergence.difference,
            Difference::ExtraStep { calls: Vec::new() }
        );
        // A recording cut short matches a replay that goes on.
        assert_eq!(compare_run(1, 0, &recorded, &extra, false, &norm()), Ok(1));
        let divergence = compare_run(2, 0, &recorded, &[], true, &norm()).unwrap_err();
        assert_eq!(divergence.difference, Difference::MissingStep);
        assert!(divergence.to_string().starts_with("step 1 of run 2"));
    }

    #[test]
    fn rules_apply_to_both_sides_and_diffs_stay_short() {
        let pid: Normalizer = Arc::new(|t: &str| {
            t.split_whitespace()
                .map(|w| {
                    if w.chars().all(|c| c.is_ascii_digit()) {
                        "N"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        });
        let norm = Normalization::new(None, Path::new("/new"), vec![pid]);
        let recorded = [step(1, &[("bash", "{}", "pid 123")])];
        let replayed = [step(1, &[("bash", "{}", "pid 456")])];
        assert_eq!(compare_run(1, 0, &recorded, &replayed, true, &norm), Ok(1));
        let long_a: String = (0..100).map(|i| format!("a{i}\n")).collect();
        let long_b: String = (0..100).map(|i| format!("b{i}\n")).collect();
        let diff = diff(&long_a, &long_b);
        assert_eq!(diff.lines().count(), 1 + 2 * (DIFF_LINES + 1), "{diff}");
        assert!(diff.contains("- ... 94 more lines"), "{diff}");
        assert_eq!(
            super::diff("a\n", "a"),
            "  @@ line 2 @@\n  - \"a\\n\"\n  + \"a\""
        );
    }
}
