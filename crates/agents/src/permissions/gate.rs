//! [`SandboxGate`]: the approval policy around the confined code-running tools. A call the
//! confinement refused is offered to run again unconfined — asked of whoever drives the run
//! (the terminal, the page, an A2A client: the same channel as `ask_human`), decided by a rule,
//! or, with nobody to ask or the `never` policy, left refused with a note on how to allow it.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use agent_config::{
    ApprovalPolicy, PermissionRule, RuleDecision, RuleSubject, RulesFile, SandboxMode,
};

use super::ApprovalSwitch;
use super::escalation;
use super::paths::named_paths;
use agent_core::ToolCall;
use agent_protocol::{Decider, PermissionDecision};
use agent_toolcall::{Gated, PermissionRecord, ToolGate, Verdict};
use agent_tools::{Choice, HumanInput, Tool, ToolContext, ToolResult};
use async_trait::async_trait;
use serde_json::Value;
use tracing::warn;

use super::detect::{Need, refusal};

/// Commands `untrusted` runs without asking: they read and print, nothing else.
const HARMLESS: &[&str] = &[
    "ls",
    "cat",
    "pwd",
    "echo",
    "head",
    "tail",
    "wc",
    "grep",
    "which",
    "stat",
    "file",
    "date",
    "whoami",
    "git status",
    "git log",
    "git diff",
    "git show",
];

/// The tools whose calls run code: the `untrusted` policy asks before them.
const CODE_TOOLS: &[&str] = &["bash", "python_execute"];

/// An answer to a question of the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Run this call with more, this once.
    Once,
    /// Run this call (the same tool, the same text) with more for the rest of the session.
    Session,
    /// Always: a rule is written to the rules file.
    Always,
    /// Do not.
    Deny,
}

impl Approval {
    /// The answers a question of the gate offers, for a front end's buttons.
    #[must_use]
    pub fn choices() -> [Choice; 4] {
        [
            Choice::new("once", "Allow once"),
            Choice::new("session", "Allow for this session"),
            Choice::new("always", "Always allow (a rule)"),
            Choice::new("deny", "Deny"),
        ]
    }

    /// Reads an answer: `o`/`y`/`once`/`yes`, `s`/`session`, `a`/`always`; anything else denies.
    #[must_use]
    pub fn parse(answer: &str) -> Self {
        match answer.trim().to_lowercase().as_str() {
            "o" | "y" | "once" | "yes" | "allow" | "allow once" => Self::Once,
            "s" | "session" | "allow for this session" => Self::Session,
            "a" | "always" | "allow always" => Self::Always,
            _ => Self::Deny,
        }
    }
}

/// The approval policy around the tools that have an unconfined twin.
pub struct SandboxGate {
    mode: SandboxMode,
    policy: ApprovalPolicy,
    switch: Option<ApprovalSwitch>,
    network_off: bool,
    workspace: PathBuf,
    human: Arc<dyn HumanInput>,
    rules: Mutex<Vec<PermissionRule>>,
    rules_file: Option<PathBuf>,
    session: Mutex<HashSet<(String, String)>>,
    twins: HashMap<String, Arc<dyn Tool>>,
    home: Option<PathBuf>,
}

impl std::fmt::Debug for SandboxGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxGate")
            .field("mode", &self.mode)
            .field("policy", &self.policy())
            .field("workspace", &self.workspace)
            .field("guarded", &self.twins.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// How a [`SandboxGate`] is set up.
pub struct GateOptions {
    /// The sandbox mode the tools run in.
    pub mode: SandboxMode,
    /// When to ask.
    pub policy: ApprovalPolicy,
    /// When set, when to ask is what it says at each call (`policy` is then unused).
    pub switch: Option<ApprovalSwitch>,
    /// The tools have no network.
    pub network_off: bool,
    /// The workspace (rules may be pinned to it).
    pub workspace: PathBuf,
    /// Who is asked (`Ok(None)` from it: nobody is there).
    pub human: Arc<dyn HumanInput>,
    /// The configuration's rules, then the rules file's.
    pub rules: Vec<PermissionRule>,
    /// Where an "always" answer writes its rule (`None`: "always" counts as "session").
    pub rules_file: Option<PathBuf>,
    /// The unconfined twin of each guarded tool, by the tool's name (none when nothing
    /// confines the tools: then rules deny, and `untrusted` asks, but nothing is escalated).
    pub twins: Vec<Arc<dyn Tool>>,
    /// The home directory, for rules whose path starts with `~` and `~` paths in commands.
    pub home: Option<PathBuf>,
}

impl SandboxGate {
    /// When to ask, now.
    fn policy(&self) -> ApprovalPolicy {
        self.switch
            .as_ref()
            .map_or(self.policy, ApprovalSwitch::get)
    }

    /// The gate `options` describe.
    #[must_use]
    pub fn new(options: GateOptions) -> Self {
        Self {
            mode: options.mode,
            policy: options.policy,
            switch: options.switch,
            network_off: options.network_off,
            workspace: options.workspace,
            human: options.human,
            rules: Mutex::new(options.rules),
            rules_file: options.rules_file,
            session: Mutex::new(HashSet::new()),
            twins: options
                .twins
                .into_iter()
                .map(|tool| (tool.name().to_owned(), tool))
                .collect(),
            home: options.home,
        }
    }

    /// Runs the call on the unconfined twin; the result says so.
    async fn escalate(&self, twin: &Arc<dyn Tool>, args: &Value, ctx: &ToolContext) -> ToolResult {
        let mut result = match twin.execute(args.clone(), ctx).await {
            Ok(result) => result,
            Err(error) => ToolResult::failure(error.to_string()),
        };
        let note = "[openmanus] Run again without the sandbox (allowed), in a fresh process.\n";
        match (&mut result.error, &mut result.output) {
            (Some(error), _) if !error.is_empty() => error.insert_str(0, note),
            (_, Some(output)) => output.insert_str(0, note),
            _ => result.output = Some(note.trim_end().to_owned()),
        }
        result
    }

    /// The refusal note: what was refused and how to allow it.
    fn note(&self, tool: &str, need: Need, why: &str) -> String {
        format!(
            "\n[openmanus] The sandbox ({mode}) refused this {tool} call ({need}) and it was not \
             run with more: {why}. The tools may write only in the workspace {ws}, have no \
             network, and secrets such as ~/.ssh are hidden. Work within these limits, or tell \
             the user how to allow it: `openmanus --sandbox full-access`, `[permissions] network \
             = true` or `writable = [...]`, or an allow rule (`openmanus rules`).",
            mode = self.mode,
            need = need.describe(),
            ws = self.workspace.display(),
        )
    }

    /// Asks whoever drives the run; `None` when nobody is there.
    async fn ask(&self, tool: &str, text: &str, why: &str) -> Option<Approval> {
        let question = format!(
            "`{tool}` needs more than the sandbox ({mode}) allows: {why}.\n{text}\n\
             Run it without the sandbox? [o]nce, for this [s]ession, [a]lways (writes a rule), \
             [d]eny",
            mode = self.mode,
            text = shown(text),
        );
        match self.human.choose(&question, &Approval::choices()).await {
            Ok(Some(answer)) => Some(Approval::parse(&answer)),
            Ok(None) => None,
            Err(error) => {
                warn!(%error, "the approval question could not be asked");
                None
            }
        }
    }

    /// The model asked in the call to run it without the sandbox (`escalate`): asked before
    /// it runs; with nobody to ask or `never`, it runs confined, saying so.
    async fn requested(
        &self,
        tool: &str,
        text: &str,
        why: &str,
        twin: &Arc<dyn Tool>,
        args: &Value,
        ctx: &ToolContext,
    ) -> Verdict {
        let args = escalation::stripped(args);
        let request = "run without the sandbox (asked in the call)";
        let confined = |by: Decider, detail: &str| {
            Verdict::RunWith(
                args.clone(),
                vec![record(
                    request,
                    PermissionDecision::Denied,
                    by,
                    format!("{detail}; it runs in the sandbox"),
                )],
            )
        };
        if self.policy() == ApprovalPolicy::Never {
            return confined(Decider::Policy, "the approval policy is `never`");
        }
        let question = format!("the model asks for it: {why}");
        match self.ask(tool, text, &question).await {
            None => confined(
                Decider::Policy,
                "nobody is there to ask (no terminal, or a worker), which means `never`",
            ),
            Some(Approval::Deny) => Verdict::Answered(Gated {
                result: ToolResult::failure(format!(
                    "[openmanus] The user declined to run this {tool} call without the sandbox; \
                     it did not run. Do it within the sandbox's limits (the workspace, no \
                     network), or do without."
                )),
                records: vec![record(
                    request,
                    PermissionDecision::Denied,
                    Decider::Person,
                    "the user declined".to_owned(),
                )],
            }),
            Some(approval) => {
                let detail = self.remember(approval, tool, text);
                let result = self.escalate(twin, &args, ctx).await;
                Verdict::Answered(Gated {
                    result,
                    records: vec![record(
                        request,
                        PermissionDecision::Allowed,
                        Decider::Person,
                        detail,
                    )],
                })
            }
        }
    }

    /// Records an "allowed" answer (the session set, or a rule); the detail for the audit.
    fn remember(&self, approval: Approval, tool: &str, text: &str) -> String {
        match approval {
            Approval::Once => "allowed once".to_owned(),
            Approval::Always => {
                let rule = PermissionRule {
                    tool: Some(tool.to_owned()),
                    prefix: Some(text.trim().to_owned()),
                    path: None,
                    workspace: Some(self.workspace.display().to_string()),
                    decision: RuleDecision::Allow,
                };
                lock(&self.rules).push(rule.clone());
                match &self.rules_file {
                    Some(path) => match RulesFile::append(path, rule) {
                        Ok(()) => format!("allowed always: rule written to {}", path.display()),
                        Err(error) => {
                            warn!(%error, "the rule could not be written");
                            format!(
                                "allowed for this session (the rule could not be written: {error})"
                            )
                        }
                    },
                    None => "allowed for this session (no rules file)".to_owned(),
                }
            }
            Approval::Session | Approval::Deny => {
                lock(&self.session).insert((tool.to_owned(), text.to_owned()));
                "allowed for this session".to_owned()
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The command or code of a call.
fn text_of(args: &Value) -> String {
    ["command", "code"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned()
}

/// `text` for a question: at most 20 lines.
fn shown(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 20 {
        return text.to_owned();
    }
    format!(
        "{}\n… ({} more lines)",
        lines[..20].join("\n"),
        lines.len() - 20
    )
}

fn harmless(tool: &str, text: &str) -> bool {
    let text = text.trim();
    tool == "bash"
        && !text.contains(['>', '|', ';', '&', '`', '$', '\n'])
        && HARMLESS.iter().any(|word| {
            text == *word
                || text
                    .strip_prefix(word)
                    .is_some_and(|rest| rest.starts_with(' '))
        })
}

pub(super) fn record(
    need: &str,
    decision: PermissionDecision,
    by: Decider,
    detail: String,
) -> PermissionRecord {
    PermissionRecord {
        request: need.to_owned(),
        decision,
        by,
        detail,
    }
}

pub(super) fn with_note(mut result: ToolResult, note: &str) -> ToolResult {
    match (&mut result.error, &mut result.output) {
        (Some(error), _) if !error.is_empty() => error.push_str(note),
        (_, Some(output)) => output.push_str(note),
        _ => result.output = Some(note.trim_start().to_owned()),
    }
    result
}

impl SandboxGate {
    /// What the gate says before `call` runs; `approved` (a hook allowed it) spares the
    /// `untrusted` question — it never gives the call more than its confinement.
    pub(crate) async fn check(
        &self,
        call: &ToolCall,
        args: &Value,
        ctx: &ToolContext,
        approved: bool,
    ) -> Verdict {
        let tool = call.function.name.as_str();
        let text = text_of(args);
        let rule = {
            let rules = lock(&self.rules);
            // The paths a call names are read only when a rule asks about paths.
            let paths = if rules.iter().any(|rule| rule.path.is_some()) {
                named_paths(args, &text, &self.workspace, self.home.as_deref())
            } else {
                Vec::new()
            };
            let subject = RuleSubject {
                tool,
                text: &text,
                paths: &paths,
                workspace: &self.workspace,
                home: self.home.as_deref(),
            };
            rules.iter().find(|rule| rule.matches(&subject)).cloned()
        };
        let twin = self.twins.get(tool);
        let request = "run without the sandbox";
        match (rule.map(|rule| rule.decision), twin) {
            (Some(RuleDecision::Deny), _) => {
                let detail = "denied by a rule (`openmanus rules`)".to_owned();
                return Verdict::Answered(Gated {
                    result: ToolResult::failure(format!(
                        "[openmanus] This {tool} call is refused by a permission rule \
                         (`openmanus rules` lists them); it did not run."
                    )),
                    records: vec![record(
                        "run",
                        PermissionDecision::Denied,
                        Decider::Rule,
                        detail,
                    )],
                });
            }
            (Some(RuleDecision::Allow), Some(twin)) => {
                let result = self.escalate(twin, args, ctx).await;
                let detail = "allowed by a rule (`openmanus rules`)".to_owned();
                return Verdict::Answered(Gated {
                    result,
                    records: vec![record(
                        request,
                        PermissionDecision::Allowed,
                        Decider::Rule,
                        detail,
                    )],
                });
            }
            // Allowed, and it runs as it would anyway (nothing confines it more).
            (Some(RuleDecision::Allow), None) => return Verdict::Run(Vec::new()),
            (None, _) => {}
        }
        if !CODE_TOOLS.contains(&tool) {
            return Verdict::Run(Vec::new());
        }
        if let (Some(why), Some(twin)) = (escalation::requested(args), twin) {
            return self.requested(tool, &text, &why, twin, args, ctx).await;
        }
        if let Some(twin) =
            twin.filter(|_| lock(&self.session).contains(&(tool.to_owned(), text.clone())))
        {
            let result = self.escalate(twin, args, ctx).await;
            return Verdict::Answered(Gated {
                result,
                records: vec![record(
                    request,
                    PermissionDecision::Allowed,
                    Decider::Person,
                    "allowed for this session".to_owned(),
                )],
            });
        }
        if self.policy() == ApprovalPolicy::Untrusted && !approved && !harmless(tool, &text) {
            let why = "the `untrusted` policy asks before code runs";
            match self.ask(tool, &text, why).await {
                Some(Approval::Deny) => {
                    return Verdict::Answered(Gated {
                        result: ToolResult::failure(format!(
                            "[openmanus] The user declined this {tool} call; it did not run."
                        )),
                        records: vec![record(
                            "run",
                            PermissionDecision::Denied,
                            Decider::Person,
                            "declined".to_owned(),
                        )],
                    });
                }
                Some(_) => {
                    return Verdict::Run(vec![record(
                        "run",
                        PermissionDecision::Allowed,
                        Decider::Person,
                        "allowed to run in the sandbox".to_owned(),
                    )]);
                }
                // Nobody to ask: `never`, so the sandbox alone decides.
                None => {}
            }
        }
        Verdict::Run(Vec::new())
    }
}

#[async_trait]
impl ToolGate for SandboxGate {
    async fn before(&self, call: &ToolCall, args: &Value, ctx: &ToolContext) -> Verdict {
        self.check(call, args, ctx, false).await
    }

    async fn after(
        &self,
        call: &ToolCall,
        args: &Value,
        result: ToolResult,
        ctx: &ToolContext,
    ) -> Gated {
        let tool = call.function.name.as_str();
        let Some(twin) = self.twins.get(tool) else {
            return Gated::untouched(result);
        };
        let Some(need) = refusal(&result.to_string(), self.network_off) else {
            return Gated::untouched(result);
        };
        let request = need.describe();
        let denied = |by: Decider, why: &str| Gated {
            result: with_note(result.clone(), &self.note(tool, need, why)),
            records: vec![record(
                request,
                PermissionDecision::Denied,
                by,
                why.to_owned(),
            )],
        };
        if self.policy() == ApprovalPolicy::Never {
            return denied(Decider::Policy, "the approval policy is `never`");
        }
        let text = text_of(args);
        let why = format!("it looks refused by the sandbox ({})", need.describe());
        match self.ask(tool, &text, &why).await {
            None => denied(
                Decider::Policy,
                "nobody is there to ask (no terminal, or a worker), which means `never`",
            ),
            Some(Approval::Deny) => denied(Decider::Person, "the user declined to allow more"),
            Some(approval) => {
                let detail = self.remember(approval, tool, &text);
                let result = self.escalate(twin, args, ctx).await;
                Gated {
                    result,
                    records: vec![record(
                        request,
                        PermissionDecision::Allowed,
                        Decider::Person,
                        detail,
                    )],
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_people_type_them() {
        assert_eq!(Approval::parse(" O\n"), Approval::Once);
        assert_eq!(Approval::parse("yes"), Approval::Once);
        assert_eq!(Approval::parse("s"), Approval::Session);
        assert_eq!(Approval::parse("always"), Approval::Always);
        assert_eq!(Approval::parse("d"), Approval::Deny);
        assert_eq!(Approval::parse("whatever"), Approval::Deny);
    }

    #[test]
    fn only_plain_reading_commands_are_harmless() {
        assert!(harmless("bash", "ls -la"));
        assert!(harmless("bash", "git status"));
        assert!(!harmless("bash", "lsblk"));
        assert!(!harmless("bash", "cat x > y"));
        assert!(!harmless("bash", "echo $(rm -rf ~)"));
        assert!(!harmless("python_execute", "print(1)"));
    }
}
