//! `sandbox_shell`: commands in named, long-lived shell sessions of a sandbox, blocking or not,
//! with a real completion signal (a marker the shell prints with the exit code when the command
//! ends) instead of guessing from the prompt.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_tools::{ToolContext, ToolError, ToolResult, TypedTool};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::{quote, relative_folder};
use crate::{Sandbox, SandboxError};

/// The tool's name.
pub const SANDBOX_SHELL: &str = "sandbox_shell";

/// What `sandbox_shell` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ShellAction {
    /// Run `command` in a session (created if needed).
    ExecuteCommand,
    /// Show what a session printed since the last look, and whether its command finished.
    CheckCommandOutput,
    /// Stop a session and everything it runs.
    TerminateCommand,
    /// List the sessions.
    ListCommands,
}

/// Arguments of `sandbox_shell`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ShellArgs {
    /// The action: execute_command, check_command_output, terminate_command or list_commands.
    pub action: ShellAction,
    /// The shell command to run (execute_command only).
    pub command: Option<String>,
    /// The folder to run it in, relative to the workspace (default: the workspace).
    pub folder: Option<String>,
    /// The session to use; execute_command creates it when missing (default: a new session).
    pub session_name: Option<String>,
    /// Wait for the command to finish (default false: return at once and check later); with
    /// check_command_output, wait for the running command to finish.
    #[serde(default)]
    pub blocking: bool,
    /// How long to wait when blocking, in seconds (default 60); a command that runs longer
    /// keeps running and check_command_output shows the rest.
    pub timeout: Option<u64>,
    /// Stop the session once its output has been returned (default false).
    #[serde(default)]
    pub kill_session: bool,
}

/// What the tool remembers of a session.
#[derive(Debug, Default)]
struct SessionState {
    cwd: String,
    /// The marker of the command still running, if one is.
    pending: Option<String>,
    /// Output read past a finished command's marker (or the start of a marker cut by a
    /// read), kept for the next look.
    carry: String,
    /// A call is reading the session's output right now.
    busy: bool,
}

/// The longest wait a call may ask for: an hour.
const MAX_WAIT_SECS: u64 = 3600;

/// The wait a call asked for (default 60 s), at most [`MAX_WAIT_SECS`].
fn wait_time(asked: Option<u64>) -> Duration {
    Duration::from_secs(asked.unwrap_or(60).min(MAX_WAIT_SECS))
}

/// `text` split before the longest end of it that begins `marker` (a marker the read cut in
/// two); the second part is empty when there is none.
fn split_partial<'a>(text: &'a str, marker: &str) -> (&'a str, &'a str) {
    let longest = marker.len().saturating_sub(1).min(text.len());
    for len in (1..=longest).rev() {
        let at = text.len() - len;
        if text.is_char_boundary(at) && marker.starts_with(&text[at..]) {
            return text.split_at(at);
        }
    }
    (text, "")
}

/// `sandbox_shell` over a [`Sandbox`]'s sessions.
pub struct SandboxShell {
    sandbox: Arc<dyn Sandbox>,
    work_dir: String,
    sessions: Mutex<BTreeMap<String, SessionState>>,
    counter: AtomicU64,
}

impl std::fmt::Debug for SandboxShell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxShell")
            .field("work_dir", &self.work_dir)
            .finish_non_exhaustive()
    }
}

impl SandboxShell {
    /// The tool over `sandbox`, whose workspace appears at `work_dir` inside it.
    pub fn new(sandbox: Arc<dyn Sandbox>, work_dir: impl Into<String>) -> Self {
        Self {
            sandbox,
            work_dir: work_dir.into(),
            sessions: Mutex::new(BTreeMap::new()),
            counter: AtomicU64::new(0),
        }
    }

    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }

    async fn execute(&self, args: &ShellArgs) -> Result<Value, String> {
        let command = args
            .command
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .ok_or("command is required for execute_command")?;
        let cwd = match args.folder.as_deref().filter(|f| !f.is_empty()) {
            Some(folder) => {
                let relative = relative_folder(folder, &self.work_dir)?;
                if relative.is_empty() {
                    self.work_dir.clone()
                } else {
                    format!("{}/{relative}", self.work_dir.trim_end_matches('/'))
                }
            }
            None => self.work_dir.clone(),
        };
        let name = match &args.session_name {
            Some(name) if !name.trim().is_empty() => name.trim().to_owned(),
            _ => format!("session_{}", self.next()),
        };
        let marker = format!("__OPENMANUS_DONE_{}__", self.next());
        {
            let mut sessions = self.sessions.lock().await;
            if sessions
                .get(&name)
                .is_some_and(|s| s.pending.is_some() || s.busy)
            {
                return Err(format!(
                    "Session '{name}' is still running a command; check it with check_command_output, stop it with terminate_command, or use another session_name."
                ));
            }
            if !self.sandbox.list_sessions().await.contains(&name) {
                self.sandbox
                    .start_session(&name)
                    .await
                    .map_err(|e| e.to_string())?;
                sessions.remove(&name);
            }
            // Standard error joins standard output so the two keep their order; standard input
            // is empty, so a command that reads it cannot swallow the marker line, which
            // carries the command's exit status.
            let input = format!(
                "{{ cd {} && {command}\n}} </dev/null 2>&1\nprintf '\\n{marker}%s\\n' \"$?\"\n",
                quote(&cwd)
            );
            self.sandbox
                .send_to_session(&name, &input)
                .await
                .map_err(|e| e.to_string())?;
            let state = sessions.entry(name.clone()).or_default();
            state.cwd.clone_from(&cwd);
            state.pending = Some(marker);
            state.carry.clear();
        }
        if !args.blocking {
            return Ok(json!({
                "session_name": name,
                "cwd": cwd,
                "message": format!("Command sent to session '{name}'. Use check_command_output to view results."),
                "completed": false,
            }));
        }
        let timeout = wait_time(args.timeout);
        let (output, exit_code) = self.collect(&name, timeout).await?;
        let mut result = json!({
            "output": output,
            "session_name": name,
            "cwd": cwd,
            "completed": exit_code.is_some(),
        });
        match exit_code {
            Some(code) => result["exit_code"] = json!(code),
            None => {
                result["message"] = json!(format!(
                    "The command is still running after {} s; use check_command_output to see more, or terminate_command to stop it.",
                    timeout.as_secs()
                ));
            }
        }
        if args.kill_session && exit_code.is_some() {
            self.kill(&name).await?;
        }
        Ok(result)
    }

    /// Reads the session's output, waiting up to `wait` for the pending command's marker,
    /// without holding the session table meanwhile. Returns the output without the marker,
    /// and the exit code once the command finished.
    async fn collect(&self, name: &str, wait: Duration) -> Result<(String, Option<i32>), String> {
        let (pending, carry) = {
            let mut sessions = self.sessions.lock().await;
            let state = sessions.entry(name.to_owned()).or_default();
            if state.busy {
                return Err(format!(
                    "Session '{name}' is being read by another call; try again."
                ));
            }
            state.busy = true;
            (state.pending.clone(), std::mem::take(&mut state.carry))
        };
        let read = self
            .sandbox
            .read_session(name, pending.as_deref(), wait)
            .await;
        let mut sessions = self.sessions.lock().await;
        let state = sessions.entry(name.to_owned()).or_default();
        state.busy = false;
        let read = read.map_err(|e| e.to_string())?;
        let mut text = carry;
        text.push_str(&read.stdout);
        text.push_str(&read.stderr);
        let Some(marker) = pending else {
            return Ok((text, None));
        };
        let Some(at) = text.find(&marker) else {
            if let Some(code) = read.exit_code {
                // The shell itself exited (an `exit` in the command).
                state.pending = None;
                return Ok((text, Some(code)));
            }
            // Keep a marker cut in half by the read for the next look.
            let (shown, partial) = split_partial(&text, &marker);
            state.carry = partial.to_owned();
            return Ok((shown.to_owned(), None));
        };
        let (before, after) = text.split_at(at);
        let after = &after[marker.len()..];
        let (status, rest) = after.split_once('\n').unwrap_or((after, ""));
        let code = status.trim().parse::<i32>().ok();
        state.carry = rest.to_owned();
        state.pending = None;
        let output = before.trim_end_matches('\n').to_owned();
        Ok((output, code.or(Some(-1))))
    }

    async fn check(&self, args: &ShellArgs) -> Result<Value, String> {
        let name = session_name(args, "check_command_output")?;
        if !self.sandbox.list_sessions().await.contains(&name) {
            return Err(format!("Session '{name}' does not exist."));
        }
        let was_running = self
            .sessions
            .lock()
            .await
            .get(&name)
            .is_some_and(|s| s.pending.is_some());
        let wait = if args.blocking {
            wait_time(args.timeout)
        } else {
            Duration::from_millis(200)
        };
        let (output, exit_code) = self.collect(&name, wait).await?;
        let status = match (was_running, exit_code) {
            (_, Some(code)) => format!("Command finished (exit code {code})."),
            (true, None) => "Command still running.".to_owned(),
            (false, None) => "No command running.".to_owned(),
        };
        let mut result = json!({"output": output, "session_name": name, "status": status});
        if let Some(code) = exit_code {
            result["exit_code"] = json!(code);
        }
        if args.kill_session {
            self.kill(&name).await?;
        }
        Ok(result)
    }

    async fn kill(&self, name: &str) -> Result<(), String> {
        self.sessions.lock().await.remove(name);
        match self.sandbox.kill_session(name).await {
            Ok(()) => Ok(()),
            Err(SandboxError::NoSuchSession(_)) => Err(format!("Session '{name}' does not exist.")),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn list(&self) -> Value {
        let names = self.sandbox.list_sessions().await;
        if names.is_empty() {
            return json!({"message": "No active sessions found.", "sessions": []});
        }
        let sessions = self.sessions.lock().await;
        let running: Vec<&String> = names
            .iter()
            .filter(|n| sessions.get(*n).is_some_and(|s| s.pending.is_some()))
            .collect();
        json!({
            "message": format!("Found {} active sessions.", names.len()),
            "sessions": names,
            "running": running,
        })
    }
}

fn session_name(args: &ShellArgs, action: &str) -> Result<String, String> {
    args.session_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("session_name is required for {action}"))
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[async_trait]
impl TypedTool for SandboxShell {
    type Args = ShellArgs;

    fn name(&self) -> &str {
        SANDBOX_SHELL
    }

    fn description(&self) -> &str {
        "Run shell commands in the sandbox, in named sessions that keep running between calls. \
         execute_command runs `command` (in `folder`, relative to the workspace) in \
         `session_name` (created when missing); with blocking=true it waits up to `timeout` \
         seconds and returns the output and exit code, otherwise it returns at once. Use a \
         non-blocking command for servers and long jobs, check_command_output to see what a \
         session printed since the last look and whether its command finished (blocking=true \
         waits for it), \
         terminate_command to stop a session, list_commands to list them."
    }

    async fn call(&self, args: ShellArgs, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let result = match args.action {
            ShellAction::ExecuteCommand => self.execute(&args).await,
            ShellAction::CheckCommandOutput => self.check(&args).await,
            ShellAction::TerminateCommand => match session_name(&args, "terminate_command") {
                Ok(name) => self.kill(&name).await.map(
                    |()| json!({"message": format!("Session '{name}' terminated successfully.")}),
                ),
                Err(e) => Err(e),
            },
            ShellAction::ListCommands => Ok(self.list().await),
        };
        Ok(match result {
            Ok(value) => ToolResult::success(pretty(&value)),
            Err(message) => ToolResult::failure(message),
        })
    }

    async fn cleanup(&self) -> Result<(), ToolError> {
        let names: Vec<String> = self.sessions.lock().await.keys().cloned().collect();
        for name in names {
            // Sessions already gone are fine here.
            let _ = self.kill(&name).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_cut_by_a_read_is_kept_for_the_next_one() {
        let marker = "__OPENMANUS_DONE_7__";
        assert_eq!(
            split_partial("output\n__OPENMA", marker),
            ("output\n", "__OPENMA")
        );
        assert_eq!(split_partial("plain output", marker), ("plain output", ""));
        assert_eq!(split_partial("ends with _", marker), ("ends with ", "_"));
        assert_eq!(split_partial("é", marker), ("é", ""));
    }

    #[test]
    fn waits_are_bounded() {
        assert_eq!(wait_time(None), Duration::from_secs(60));
        assert_eq!(wait_time(Some(5)), Duration::from_secs(5));
        assert_eq!(
            wait_time(Some(u64::MAX)),
            Duration::from_secs(MAX_WAIT_SECS)
        );
    }
}
