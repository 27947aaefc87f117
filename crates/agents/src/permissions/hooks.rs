//! [`HookGate`]: the user's hooks (`[[permissions.hooks]]`) around every tool call and at the
//! end of a run, in front of the [`SandboxGate`] when there is one.
//!
//! A hook is a program (no shell) started in the workspace, given one JSON object on standard
//! input, with `OPENMANUS_HOOK` set to its event:
//!
//! * `before-tool`: `{"hook", "session", "tool", "call_id", "arguments", "workspace"}`;
//! * `after-tool`: the same and `"result": {"output", "error"}`;
//! * `run-end`: `{"hook", "session", "workspace", "status", "steps"}`.
//!
//! (`session` is the stored session's id, `null` for a run kept in no session.)
//!
//! It answers by its exit status and standard output:
//!
//! * exit 0 and nothing on standard output: no opinion;
//! * exit 0 and a JSON object: `{"decision": "allow" | "deny" | "ask", "reason": "…",
//!   "arguments": {…}, "message": "…"}`, every key optional — `arguments` replaces the call's
//!   arguments (before-tool), `message` is added to what the model sees (after-tool);
//! * exit 2: deny, its standard error the reason;
//! * anything else — another exit status, an answer that is not such an object, no answer
//!   within its `timeout_secs`, a program that cannot start — is a failed hook: a before-tool
//!   hook that failed denies the call (it fails closed); after-tool and run-end failures are
//!   logged.
//!
//! A hook never gives a call more than its confinement: "allow" only spares the `untrusted`
//! question; a call the sandbox refused is still asked about afterwards as usual. "ask" asks
//! whoever drives the run (nobody there: denied). Every decision is a permission event decided
//! by `hook` (or `person`/`policy` for an "ask").

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use agent_config::{HookEvent, HookSettings};
use agent_core::ToolCall;
use agent_process::{ProcessGroup, Spawned};
use agent_protocol::{Decider, PermissionDecision};
use agent_toolcall::{Gated, PermissionRecord, RunEnd, ToolGate, Verdict};
use agent_tools::{Choice, HumanInput, ToolContext, ToolResult};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tracing::{debug, warn};

use super::gate::{SandboxGate, with_note};

/// At most this much of a hook's standard output and error is read.
const MAX_ANSWER: u64 = 64 * 1024;

/// At most this much of a result's output or error is given to an after-tool hook.
const MAX_RESULT: usize = 64 * 1024;

/// What a hook said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// Exit 0, no opinion (maybe a message, maybe changed arguments).
    Silent(Reply),
    /// Allow (spares the `untrusted` question).
    Allow(Reply),
    /// Deny, with a reason.
    Deny(Reply),
    /// Ask the person.
    Ask(Reply),
    /// The hook failed: why.
    Failed(String),
}

/// The optional parts of an answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    #[serde(default)]
    decision: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    message: Option<String>,
}

impl Reply {
    fn reason_or(&self, fallback: &str) -> String {
        self.reason
            .as_deref()
            .map(str::trim)
            .filter(|reason| !reason.is_empty())
            .unwrap_or(fallback)
            .to_owned()
    }
}

/// Reads an answer from a hook's exit status (`None`: killed by a signal) and output.
fn answer(status: Option<i32>, stdout: &str, stderr: &str) -> Answer {
    match status {
        Some(0) => {}
        Some(2) => {
            return Answer::Deny(Reply {
                reason: Some(stderr.trim().to_owned()),
                ..Reply::default()
            });
        }
        Some(code) => {
            return Answer::Failed(format!("it exited with status {code}{}", said(stderr)));
        }
        None => return Answer::Failed(format!("it was killed by a signal{}", said(stderr))),
    }
    let text = stdout.trim();
    if text.is_empty() {
        return Answer::Silent(Reply::default());
    }
    let reply: Reply = match serde_json::from_str(text) {
        Ok(reply) => reply,
        Err(error) => {
            return Answer::Failed(format!(
                "its answer is not a JSON object with decision, reason, arguments or message \
                 ({error})"
            ));
        }
    };
    match reply.decision.as_deref() {
        None => Answer::Silent(reply),
        Some("allow") => Answer::Allow(reply),
        Some("deny") => Answer::Deny(reply),
        Some("ask") => Answer::Ask(reply),
        Some(other) => Answer::Failed(format!(
            "its decision `{other}` is none of allow, deny, ask"
        )),
    }
}

/// `: <stderr>` when the hook said something on standard error.
fn said(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

/// Reads at most [`MAX_ANSWER`] bytes of a pipe (then closes it).
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>) -> String {
    let Some(pipe) = pipe else {
        return String::new();
    };
    let mut bytes = Vec::new();
    if let Err(error) = pipe.take(MAX_ANSWER).read_to_end(&mut bytes).await {
        debug!(%error, "a hook's output could not be read to its end");
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Runs `hook` in `workspace` with `input` on its standard input, as the leader of a process
/// group of its own: past its time limit, and whatever it left running when it is done, the
/// whole group is killed.
async fn run(hook: &HookSettings, workspace: &Path, input: &Value) -> Answer {
    let Some((program, args)) = hook.command.split_first() else {
        return Answer::Failed("it has no program".to_owned());
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(workspace)
        .env("OPENMANUS_HOOK", hook.on.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let Spawned {
        group,
        mut stdin,
        stdout,
        stderr,
    } = match ProcessGroup::spawn("hook", &mut command) {
        Ok(spawned) => spawned,
        Err(error) => return Answer::Failed(format!("it could not start: {error}")),
    };
    let input = input.to_string();
    let finished = tokio::time::timeout(hook.timeout, async {
        let write = async {
            if let Some(pipe) = stdin.as_mut() {
                // A hook that does not read its input is free not to.
                let _ = pipe.write_all(input.as_bytes()).await;
                let _ = pipe.shutdown().await;
            }
            drop(stdin.take());
        };
        let ((), out, err) = tokio::join!(write, read_capped(stdout), read_capped(stderr));
        (group.wait().await, out, err)
    })
    .await;
    // Whatever the hook started and left behind goes with it (the group is killed on drop).
    match finished {
        Ok((Some(status), out, err)) => answer(status.code(), &out, &err),
        Ok((None, _, _)) => Answer::Failed("its exit status could not be read".to_owned()),
        Err(_) => {
            group.kill();
            Answer::Failed(format!(
                "it did not answer within {:?} (its timeout_secs)",
                hook.timeout
            ))
        }
    }
}

/// The user's hooks, then the sandbox gate.
pub struct HookGate {
    hooks: Vec<HookSettings>,
    workspace: PathBuf,
    human: Arc<dyn HumanInput>,
    inner: Option<SandboxGate>,
}

impl std::fmt::Debug for HookGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookGate")
            .field("hooks", &self.hooks)
            .field("workspace", &self.workspace)
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl HookGate {
    /// `hooks` run in `workspace`; an "ask" goes to `human`; then `inner` decides as it does
    /// alone.
    #[must_use]
    pub fn new(
        hooks: Vec<HookSettings>,
        workspace: PathBuf,
        human: Arc<dyn HumanInput>,
        inner: Option<SandboxGate>,
    ) -> Self {
        Self {
            hooks,
            workspace,
            human,
            inner,
        }
    }

    fn hooks_for<'a>(
        &'a self,
        on: HookEvent,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = &'a HookSettings> + 'a {
        self.hooks
            .iter()
            .filter(move |hook| hook.on == on && tool.is_none_or(|tool| hook.covers(tool)))
    }

    /// Asks the person whether `tool` may run, as a hook wanted; the decision and who took it.
    async fn ask(
        &self,
        tool: &str,
        args: &Value,
        why: &str,
    ) -> (PermissionDecision, Decider, String) {
        let question = format!(
            "A hook asks before this `{tool}` call runs: {why}.\n{args}\nRun it? [o]nce, [d]eny"
        );
        let choices = [
            Choice::new("once", "Allow once"),
            Choice::new("deny", "Deny"),
        ];
        match self.human.choose(&question, &choices).await {
            Ok(Some(reply)) if super::Approval::parse(&reply) != super::Approval::Deny => (
                PermissionDecision::Allowed,
                Decider::Person,
                "allowed once (a hook asked)".to_owned(),
            ),
            Ok(Some(_)) => (
                PermissionDecision::Denied,
                Decider::Person,
                "the user declined (a hook asked)".to_owned(),
            ),
            Ok(None) => (
                PermissionDecision::Denied,
                Decider::Policy,
                "a hook asked and nobody is there to ask, which means deny".to_owned(),
            ),
            Err(error) => {
                warn!(%error, "a hook's question could not be asked");
                (
                    PermissionDecision::Denied,
                    Decider::Policy,
                    format!("a hook asked and the question could not be asked: {error}"),
                )
            }
        }
    }
}

/// How a hook is named in observations and events: its program.
fn named(hook: &HookSettings) -> &str {
    hook.command.first().map_or("", String::as_str)
}

/// What a hook's decision is about, in the audit.
const REQUEST: &str = "run (hooks)";

fn record(decision: PermissionDecision, by: Decider, detail: String) -> PermissionRecord {
    super::gate::record(REQUEST, decision, by, detail)
}

/// A result's text for an after-tool hook, at most [`MAX_RESULT`] bytes.
fn capped(text: Option<&str>) -> Option<String> {
    text.map(|text| {
        if text.len() <= MAX_RESULT {
            return text.to_owned();
        }
        let mut end = MAX_RESULT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text[..end].to_owned()
    })
}

#[async_trait]
impl ToolGate for HookGate {
    async fn before(&self, call: &ToolCall, args: &Value, ctx: &ToolContext) -> Verdict {
        let tool = call.function.name.as_str();
        let mut args = args.clone();
        let mut changed = false;
        let mut approved = false;
        let mut records = Vec::new();
        for hook in self.hooks_for(HookEvent::BeforeTool, Some(tool)) {
            let input = json!({
                "hook": hook.on,
                "session": ctx.session,
                "tool": tool,
                "call_id": call.id,
                "arguments": args,
                "workspace": self.workspace,
            });
            let name = named(hook);
            let (reply, denial) = match run(hook, &self.workspace, &input).await {
                Answer::Silent(reply) => (reply, None),
                Answer::Allow(reply) => {
                    approved = true;
                    let why = reply.reason_or("no reason given");
                    records.push(record(
                        PermissionDecision::Allowed,
                        Decider::Hook,
                        format!("allowed by the hook `{name}`: {why}"),
                    ));
                    (reply, None)
                }
                Answer::Deny(reply) => {
                    let why = reply.reason_or("no reason given");
                    let denial = (
                        Decider::Hook,
                        format!("denied by the hook `{name}`: {why}"),
                        format!("A hook (`{name}`) refused this {tool} call: {why}"),
                    );
                    (reply, Some(denial))
                }
                Answer::Ask(reply) => {
                    let why = reply.reason_or("no reason given");
                    match self.ask(tool, &args, &why).await {
                        (PermissionDecision::Allowed, by, detail) => {
                            approved = true;
                            records.push(record(PermissionDecision::Allowed, by, detail));
                            (reply, None)
                        }
                        (_, by, detail) => {
                            let said = format!(
                                "A hook (`{name}`) asked before this {tool} call ({why}) and it \
                                 was not allowed: {detail}"
                            );
                            (reply, Some((by, detail, said)))
                        }
                    }
                }
                Answer::Failed(why) => {
                    warn!(hook = name, %why, "a before-tool hook failed; the call is denied");
                    let denial = (
                        Decider::Hook,
                        format!("the hook `{name}` failed, which denies: {why}"),
                        format!(
                            "A hook (`{name}`) that checks {tool} calls failed ({why}), so the \
                             call was refused"
                        ),
                    );
                    (Reply::default(), Some(denial))
                }
            };
            if let Some((by, detail, said)) = denial {
                records.push(record(PermissionDecision::Denied, by, detail));
                return Verdict::Answered(Gated {
                    result: ToolResult::failure(format!("[openmanus] {said}. It did not run.")),
                    records,
                });
            }
            if let Some(replaced) = reply.arguments {
                args = Value::Object(replaced);
                changed = true;
                records.push(record(
                    PermissionDecision::Allowed,
                    Decider::Hook,
                    format!("the hook `{name}` changed the arguments to {args}"),
                ));
            }
        }
        let verdict = match &self.inner {
            Some(inner) => inner.check(call, &args, ctx, approved).await,
            None => Verdict::Run(Vec::new()),
        };
        match verdict {
            Verdict::Answered(mut gated) => {
                records.append(&mut gated.records);
                gated.records = records;
                Verdict::Answered(gated)
            }
            Verdict::Run(mut more) | Verdict::RunWith(_, mut more) => {
                records.append(&mut more);
                if changed {
                    Verdict::RunWith(args, records)
                } else {
                    Verdict::Run(records)
                }
            }
        }
    }

    async fn after(
        &self,
        call: &ToolCall,
        args: &Value,
        result: ToolResult,
        ctx: &ToolContext,
    ) -> Gated {
        let mut gated = match &self.inner {
            Some(inner) => inner.after(call, args, result, ctx).await,
            None => Gated::untouched(result),
        };
        let tool = call.function.name.as_str();
        for hook in self.hooks_for(HookEvent::AfterTool, Some(tool)) {
            let input = json!({
                "hook": hook.on,
                "session": ctx.session,
                "tool": tool,
                "call_id": call.id,
                "arguments": args,
                "workspace": self.workspace,
                "result": {
                    "output": capped(gated.result.output.as_deref()),
                    "error": capped(gated.result.error.as_deref()),
                },
            });
            let name = named(hook);
            match run(hook, &self.workspace, &input).await {
                Answer::Failed(why) => warn!(hook = name, %why, "an after-tool hook failed"),
                Answer::Silent(reply)
                | Answer::Allow(reply)
                | Answer::Deny(reply)
                | Answer::Ask(reply) => {
                    if let Some(message) = reply.message.filter(|m| !m.trim().is_empty()) {
                        gated.result = with_note(
                            gated.result,
                            &format!("\n[openmanus] The hook `{name}` says: {}", message.trim()),
                        );
                    }
                }
            }
        }
        gated
    }

    async fn run_ended(&self, end: &RunEnd) {
        for hook in self.hooks_for(HookEvent::RunEnd, None) {
            let input = json!({
                "hook": hook.on,
                "session": end.session,
                "workspace": self.workspace,
                "status": end.status,
                "steps": end.steps,
            });
            if let Answer::Failed(why) = run(hook, &self.workspace, &input).await {
                warn!(hook = named(hook), %why, "a run-end hook failed");
            }
        }
        if let Some(inner) = &self.inner {
            inner.run_ended(end).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_and_answers_read_as_documented() {
        assert_eq!(answer(Some(0), " \n", ""), Answer::Silent(Reply::default()));
        let Answer::Deny(reply) = answer(Some(2), "", "no rm -rf here\n") else {
            panic!("exit 2 denies");
        };
        assert_eq!(reply.reason_or("-"), "no rm -rf here");
        assert!(
            matches!(answer(Some(1), "", "boom"), Answer::Failed(why) if why.contains("status 1: boom"))
        );
        assert!(matches!(answer(None, "", ""), Answer::Failed(why) if why.contains("signal")));
        assert!(matches!(
            answer(Some(0), r#"{"decision":"allow","reason":"fine"}"#, ""),
            Answer::Allow(reply) if reply.reason.as_deref() == Some("fine")
        ));
        assert!(matches!(
            answer(Some(0), r#"{"decision":"ask"}"#, ""),
            Answer::Ask(_)
        ));
        assert!(matches!(
            answer(Some(0), r#"{"arguments":{"command":"ls"}}"#, ""),
            Answer::Silent(reply) if reply.arguments.is_some()
        ));
        assert!(matches!(
            answer(Some(0), r#"{"decision":"maybe"}"#, ""),
            Answer::Failed(_)
        ));
        assert!(matches!(answer(Some(0), "yes", ""), Answer::Failed(_)));
        assert!(matches!(
            answer(Some(0), r#"{"arguments":"ls"}"#, ""),
            Answer::Failed(_)
        ));
        assert!(matches!(
            answer(Some(0), r#"{"verdict":"allow"}"#, ""),
            Answer::Failed(_)
        ));
    }

    #[test]
    fn a_long_result_is_cut_on_a_character_boundary() {
        let text = "é".repeat(MAX_RESULT);
        let cut = capped(Some(&text)).unwrap();
        assert!(cut.len() <= MAX_RESULT && cut.chars().all(|c| c == 'é'));
        assert_eq!(capped(Some("short")).as_deref(), Some("short"));
    }
}
