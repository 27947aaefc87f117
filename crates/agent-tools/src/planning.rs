//! `planning`: create and manage step-by-step plans (spec §4.6).
//!
//! Every message and the plan layout are OpenManus's. Plans are typed data: a planning flow holds
//! a clone of the same [`PlanningTool`] and reads [`Plan`]s directly instead of parsing text.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ToolContext, ToolError, ToolResult, TypedTool};

/// The tool name.
pub const PLANNING: &str = "planning";

const DESCRIPTION: &str = "Create and manage a plan for a complex task: create a plan of steps, \
update it, list or fetch plans, choose the active plan, mark the progress of each step, and \
delete plans.";

const COMMANDS: &str = "create, update, list, get, set_active, mark_step, delete";
const STATUSES: &str = "not_started, in_progress, completed, blocked";

/// The status of one plan step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started yet (`[ ]`).
    #[default]
    NotStarted,
    /// Being worked on (`[→]`).
    InProgress,
    /// Done (`[✓]`).
    Completed,
    /// Cannot go on (`[!]`).
    Blocked,
}

impl StepStatus {
    /// Every status, in display order.
    pub const ALL: [Self; 4] = [
        Self::NotStarted,
        Self::InProgress,
        Self::Completed,
        Self::Blocked,
    ];

    /// The wire name (`not_started`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStarted => "not_started",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Blocked => "blocked",
        }
    }

    /// The mark shown in a formatted plan.
    #[must_use]
    pub fn mark(self) -> &'static str {
        match self {
            Self::NotStarted => "[ ]",
            Self::InProgress => "[→]",
            Self::Completed => "[✓]",
            Self::Blocked => "[!]",
        }
    }

    /// Parses a wire name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// One plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Its id.
    pub plan_id: String,
    /// Its title.
    pub title: String,
    /// The step texts, in order.
    pub steps: Vec<String>,
    /// One status per step.
    pub step_statuses: Vec<StepStatus>,
    /// One note per step (`""`: none).
    pub step_notes: Vec<String>,
}

impl Plan {
    /// A plan whose steps are all `not_started` without notes.
    pub fn new(plan_id: impl Into<String>, title: impl Into<String>, steps: Vec<String>) -> Self {
        let n = steps.len();
        Self {
            plan_id: plan_id.into(),
            title: title.into(),
            steps,
            step_statuses: vec![StepStatus::NotStarted; n],
            step_notes: vec![String::new(); n],
        }
    }

    /// How many steps have `status`.
    #[must_use]
    pub fn count(&self, status: StepStatus) -> usize {
        self.step_statuses.iter().filter(|s| **s == status).count()
    }

    /// The status of step `index`.
    #[must_use]
    pub fn status(&self, index: usize) -> Option<StepStatus> {
        self.step_statuses.get(index).copied()
    }

    /// OpenManus's plan layout: header, `=` rule, progress, status counts, and the numbered
    /// (0-based) steps with their marks and notes; every line ends with a newline.
    #[must_use]
    pub fn format(&self) -> String {
        let header = format!("Plan: {} (ID: {})\n", self.title, self.plan_id);
        let mut out = header.clone();
        out.push_str(&"=".repeat(header.chars().count()));
        out.push_str("\n\n");
        let total = self.steps.len();
        let completed = self.count(StepStatus::Completed);
        if total > 0 {
            #[allow(clippy::cast_precision_loss)]
            let percentage = completed as f64 / total as f64 * 100.0;
            let _ = writeln!(
                out,
                "Progress: {completed}/{total} steps completed ({percentage:.1}%)"
            );
        } else {
            out.push_str("Progress: 0/0 steps completed (0%)\n");
        }
        let _ = writeln!(
            out,
            "Status: {completed} completed, {} in progress, {} blocked, {} not started\n",
            self.count(StepStatus::InProgress),
            self.count(StepStatus::Blocked),
            self.count(StepStatus::NotStarted),
        );
        out.push_str("Steps:\n");
        for (i, step) in self.steps.iter().enumerate() {
            let mark = self.status(i).unwrap_or_default().mark();
            let _ = writeln!(out, "{i}. {mark} {step}");
            if let Some(notes) = self.step_notes.get(i).filter(|n| !n.is_empty()) {
                let _ = writeln!(out, "   Notes: {notes}");
            }
        }
        out
    }
}

#[derive(Debug, Default)]
struct Store {
    plans: Vec<Plan>,
    active: Option<String>,
}

impl Store {
    fn get(&self, id: &str) -> Option<&Plan> {
        self.plans.iter().find(|p| p.plan_id == id)
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Plan> {
        self.plans.iter_mut().find(|p| p.plan_id == id)
    }
}

/// Arguments of `planning`. `command`, `step_status` and `steps` are checked by the tool (not by
/// deserialisation) so that a bad value gets OpenManus's exact message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanningArgs {
    /// The command to run.
    #[schemars(extend("enum" = ["create", "update", "list", "get", "set_active", "mark_step", "delete"]))]
    pub command: String,
    /// The plan's id. Required for create, update, set_active and delete; get and mark_step use
    /// the active plan when it is omitted.
    #[serde(default)]
    pub plan_id: Option<String>,
    /// The plan's title. Required for create; optional for update.
    #[serde(default)]
    pub title: Option<String>,
    /// The step texts. Required for create; optional for update (replaces the steps).
    #[serde(default)]
    #[schemars(with = "Option<Vec<String>>")]
    pub steps: Option<Value>,
    /// The 0-based index of the step to mark. Required for mark_step.
    #[serde(default)]
    pub step_index: Option<i64>,
    /// The new status of the step, for mark_step.
    #[serde(default)]
    #[schemars(extend("enum" = ["not_started", "in_progress", "completed", "blocked"]))]
    pub step_status: Option<String>,
    /// Notes for the step, for mark_step.
    #[serde(default)]
    pub step_notes: Option<String>,
}

/// The `planning` tool. Cloning shares the plans, so a flow can keep a clone and read the plans
/// the model manages.
#[derive(Debug, Clone, Default)]
pub struct PlanningTool {
    store: Arc<Mutex<Store>>,
}

fn fail(message: impl Into<String>) -> ToolError {
    ToolError::Failure(message.into())
}

fn required(name: &str, command: &str) -> ToolError {
    fail(format!(
        "Parameter `{name}` is required for command: {command}"
    ))
}

fn not_found(id: &str) -> ToolError {
    fail(format!("No plan found with ID: {id}"))
}

/// `Some(text)` when present and not empty (Python truthiness).
fn present(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|s| !s.is_empty())
}

/// Python truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Steps as strings, or `None` when some item is not a string (or the value is not a list).
fn string_list(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

impl PlanningTool {
    /// A tool with no plans.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every plan, in creation order.
    #[must_use]
    pub fn plans(&self) -> Vec<Plan> {
        self.lock().plans.clone()
    }

    /// The plan `plan_id`.
    #[must_use]
    pub fn plan(&self, plan_id: &str) -> Option<Plan> {
        self.lock().get(plan_id).cloned()
    }

    /// The active plan's id.
    #[must_use]
    pub fn active_plan_id(&self) -> Option<String> {
        self.lock().active.clone()
    }

    /// Sets the status (and, when given, the notes) of a step directly.
    ///
    /// # Errors
    ///
    /// The `mark_step` messages for an unknown plan or an index out of range.
    pub fn set_step_status(
        &self,
        plan_id: &str,
        index: usize,
        status: StepStatus,
        notes: Option<&str>,
    ) -> Result<(), ToolError> {
        let mut store = self.lock();
        let plan = store.get_mut(plan_id).ok_or_else(|| not_found(plan_id))?;
        let n = plan.steps.len();
        if index >= n {
            return Err(fail(format!(
                "Invalid step_index: {index}. Valid indices range from 0 to {}.",
                n.saturating_sub(1)
            )));
        }
        plan.step_statuses[index] = status;
        if let Some(notes) = notes.filter(|n| !n.is_empty()) {
            plan.step_notes[index] = notes.to_owned();
        }
        Ok(())
    }

    fn create(&self, args: &PlanningArgs) -> Result<String, ToolError> {
        let id = present(args.plan_id.as_ref()).ok_or_else(|| required("plan_id", "create"))?;
        let mut store = self.lock();
        if store.get(id).is_some() {
            return Err(fail(format!(
                "A plan with ID '{id}' already exists. Use 'update' to modify existing plans."
            )));
        }
        let title = present(args.title.as_ref()).ok_or_else(|| required("title", "create"))?;
        let steps = args
            .steps
            .as_ref()
            .and_then(string_list)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                fail("Parameter `steps` must be a non-empty list of strings for command: create")
            })?;
        let plan = Plan::new(id, title, steps);
        let text = format!(
            "Plan created successfully with ID: {id}\n\n{}",
            plan.format()
        );
        store.plans.push(plan);
        store.active = Some(id.to_owned());
        Ok(text)
    }

    fn update(&self, args: &PlanningArgs) -> Result<String, ToolError> {
        let id = present(args.plan_id.as_ref()).ok_or_else(|| required("plan_id", "update"))?;
        let mut store = self.lock();
        let plan = store.get_mut(id).ok_or_else(|| not_found(id))?;
        if let Some(title) = present(args.title.as_ref()) {
            title.clone_into(&mut plan.title);
        }
        let truthy_steps = args.steps.as_ref().filter(|v| truthy(v));
        if let Some(value) = truthy_steps {
            let steps = string_list(value).ok_or_else(|| {
                fail("Parameter `steps` must be a list of strings for command: update")
            })?;
            let (statuses, notes) = steps
                .iter()
                .enumerate()
                .map(|(i, step)| {
                    if plan.steps.get(i) == Some(step) {
                        (plan.step_statuses[i], plan.step_notes[i].clone())
                    } else {
                        (StepStatus::NotStarted, String::new())
                    }
                })
                .unzip();
            plan.steps = steps;
            plan.step_statuses = statuses;
            plan.step_notes = notes;
        }
        Ok(format!(
            "Plan updated successfully: {id}\n\n{}",
            plan.format()
        ))
    }

    fn list(&self) -> String {
        let store = self.lock();
        if store.plans.is_empty() {
            return "No plans available. Create a plan with the 'create' command.".to_owned();
        }
        let mut out = "Available plans:\n".to_owned();
        for plan in &store.plans {
            let active = if store.active.as_deref() == Some(&plan.plan_id) {
                " (active)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "• {}{active}: {} - {}/{} steps completed",
                plan.plan_id,
                plan.title,
                plan.count(StepStatus::Completed),
                plan.steps.len()
            );
        }
        out
    }

    /// The given id, or the active plan's.
    fn resolve(store: &Store, plan_id: Option<&String>) -> Result<String, ToolError> {
        match present(plan_id) {
            Some(id) => Ok(id.to_owned()),
            None => store.active.clone().ok_or_else(|| {
                fail("No active plan. Please specify a plan_id or set an active plan.")
            }),
        }
    }

    fn get(&self, args: &PlanningArgs) -> Result<String, ToolError> {
        let store = self.lock();
        let id = Self::resolve(&store, args.plan_id.as_ref())?;
        store
            .get(&id)
            .map(Plan::format)
            .ok_or_else(|| not_found(&id))
    }

    fn set_active(&self, args: &PlanningArgs) -> Result<String, ToolError> {
        let id = present(args.plan_id.as_ref()).ok_or_else(|| required("plan_id", "set_active"))?;
        let mut store = self.lock();
        let formatted = store
            .get(id)
            .map(Plan::format)
            .ok_or_else(|| not_found(id))?;
        store.active = Some(id.to_owned());
        Ok(format!(
            "Plan '{id}' is now the active plan.\n\n{formatted}"
        ))
    }

    fn mark_step(&self, args: &PlanningArgs) -> Result<String, ToolError> {
        let mut store = self.lock();
        let id = Self::resolve(&store, args.plan_id.as_ref())?;
        let plan = store.get_mut(&id).ok_or_else(|| not_found(&id))?;
        let index = args
            .step_index
            .ok_or_else(|| required("step_index", "mark_step"))?;
        let n = plan.steps.len();
        let Some(at) = usize::try_from(index).ok().filter(|i| *i < n) else {
            return Err(fail(format!(
                "Invalid step_index: {index}. Valid indices range from 0 to {}.",
                i64::try_from(n).unwrap_or(i64::MAX) - 1
            )));
        };
        let status = match present(args.step_status.as_ref()) {
            Some(name) => Some(StepStatus::parse(name).ok_or_else(|| {
                fail(format!(
                    "Invalid step_status: {name}. Valid statuses are: {STATUSES}"
                ))
            })?),
            None => None,
        };
        if let Some(status) = status {
            plan.step_statuses[at] = status;
        }
        if let Some(notes) = present(args.step_notes.as_ref()) {
            plan.step_notes[at] = notes.to_owned();
        }
        Ok(format!(
            "Step {index} updated in plan '{id}'.\n\n{}",
            plan.format()
        ))
    }

    fn delete(&self, args: &PlanningArgs) -> Result<String, ToolError> {
        let id = present(args.plan_id.as_ref()).ok_or_else(|| required("plan_id", "delete"))?;
        let mut store = self.lock();
        let at = store
            .plans
            .iter()
            .position(|p| p.plan_id == id)
            .ok_or_else(|| not_found(id))?;
        store.plans.remove(at);
        if store.active.as_deref() == Some(id) {
            store.active = None;
        }
        Ok(format!("Plan '{id}' has been deleted."))
    }

    /// Runs one command, as the model would call it.
    ///
    /// # Errors
    ///
    /// [`ToolError::Failure`] with OpenManus's message for every invalid request.
    pub fn run(&self, args: &PlanningArgs) -> Result<String, ToolError> {
        match args.command.as_str() {
            "create" => self.create(args),
            "update" => self.update(args),
            "list" => Ok(self.list()),
            "get" => self.get(args),
            "set_active" => self.set_active(args),
            "mark_step" => self.mark_step(args),
            "delete" => self.delete(args),
            other => Err(fail(format!(
                "Unrecognized command: {other}. Allowed commands are: {COMMANDS}"
            ))),
        }
    }
}

#[async_trait]
impl TypedTool for PlanningTool {
    type Args = PlanningArgs;

    fn name(&self) -> &str {
        PLANNING
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn call(&self, args: PlanningArgs, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        self.run(&args).map(ToolResult::success)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verified_openmanus_layout() {
        let mut plan = Plan::new("p1", "T", vec!["a".into(), "b".into()]);
        plan.step_statuses[1] = StepStatus::Blocked;
        plan.step_notes[1] = "nn".into();
        assert_eq!(
            plan.format(),
            "Plan: T (ID: p1)\n=================\n\nProgress: 0/2 steps completed (0.0%)\nStatus: 0 completed, 0 in progress, 1 blocked, 1 not started\n\nSteps:\n0. [ ] a\n1. [!] b\n   Notes: nn\n"
        );
        assert_eq!(
            Plan::new("e", "Empty", vec![]).format(),
            "Plan: Empty (ID: e)\n====================\n\nProgress: 0/0 steps completed (0%)\nStatus: 0 completed, 0 in progress, 0 blocked, 0 not started\n\nSteps:\n"
        );
    }

    #[test]
    fn percentages_round_like_python() {
        // Python: f"{1/3*100:.1f}" == "33.3", f"{2/3*100:.1f}" == "66.7", f"{1/16*100:.1f}" == "6.2"
        let pct = |c: usize, t: usize| {
            let mut plan = Plan::new("p", "t", vec!["s".into(); t]);
            for s in plan.step_statuses.iter_mut().take(c) {
                *s = StepStatus::Completed;
            }
            plan.format().lines().nth(3).unwrap_or_default().to_owned()
        };
        assert_eq!(pct(1, 3), "Progress: 1/3 steps completed (33.3%)");
        assert_eq!(pct(2, 3), "Progress: 2/3 steps completed (66.7%)");
        assert_eq!(pct(1, 16), "Progress: 1/16 steps completed (6.2%)");
        assert_eq!(pct(3, 3), "Progress: 3/3 steps completed (100.0%)");
    }
}
