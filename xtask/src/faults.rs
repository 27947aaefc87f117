//! `cargo xtask faults`: the fault cases of issue 21 (a hostile user's list: LLM failures,
//! escaped processes, Ctrl-C, secrets, huge output, broken MCP servers, a dead Chromium, a full
//! disk, a killed process resumed), each a permanent test, run one by one and summed up as
//! "cases held / tried". docs/faults.md lists them; keep the two in step.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::peers::ensure_mcp_everything;
use crate::{cargo, say};

/// One case: what it tries, and the test that tries it (package, test target, exact name).
struct Case {
    what: &'static str,
    package: &'static str,
    target: &'static str,
    test: &'static str,
}

const fn case(
    what: &'static str,
    package: &'static str,
    target: &'static str,
    test: &'static str,
) -> Case {
    Case {
        what,
        package,
        target,
        test,
    }
}

/// Every case, in the order of the issue.
const CASES: &[Case] = &[
    case(
        "LLM 401, 429 insufficient_quota, context length, malformed JSON: fail at once",
        "openmanus-agent-llm",
        "http",
        "permanent_errors_fail_at_once_with_their_variant",
    ),
    case(
        "LLM 429 / 500 / 503: retried until the fault clears",
        "openmanus-agent-llm",
        "http",
        "transient_errors_are_retried_until_the_fault_clears",
    ),
    case(
        "LLM Retry-After honoured",
        "openmanus-agent-llm",
        "http",
        "retry_after_is_honoured",
    ),
    case(
        "LLM attempts bounded",
        "openmanus-agent-llm",
        "http",
        "attempts_are_bounded",
    ),
    case(
        "LLM stream cut before and after the first token: asked again",
        "openmanus-agent-llm",
        "http",
        "a_stream_cut_before_or_after_the_first_token_is_asked_again",
    ),
    case(
        "LLM cut streams retried a bounded number of times",
        "openmanus-agent-llm",
        "http",
        "cut_streams_are_retried_a_bounded_number_of_times",
    ),
    case(
        "LLM server that never answers: two attempts",
        "openmanus-agent-llm",
        "http",
        "a_server_that_never_answers_is_given_two_attempts",
    ),
    case(
        "LLM stream that goes silent: idle timeout, asked again",
        "openmanus-agent-llm",
        "http",
        "a_stream_that_goes_silent_is_cut_by_the_idle_timeout_and_asked_again",
    ),
    case(
        "LLM call limit across attempts",
        "openmanus-agent-llm",
        "http",
        "the_call_limit_bounds_every_attempt_together",
    ),
    case(
        "LLM refused connection: a few quick attempts",
        "openmanus-agent-llm",
        "http",
        "a_refused_connection_fails_after_a_few_quick_attempts",
    ),
    case(
        "LLM malformed stream chunks never panic",
        "openmanus-agent-llm",
        "properties",
        "no_chunk_makes_the_assembler_panic",
    ),
    case(
        "LLM 529 overloaded (OpenAI-compatible and Anthropic): retried, the session finishes",
        "openmanus-agent-session",
        "faults",
        "an_overloaded_model_529_is_retried_and_the_run_finishes",
    ),
    case(
        "invalid tool arguments and unknown tools: error observations in OpenManus's words",
        "openmanus-agent-toolcall",
        "seed_tables",
        "every_execute_tool_outcome_is_an_observation_in_openmanus_words",
    ),
    case(
        "escaped process: setsid in bash, at session close",
        "openmanus-agent-session",
        "escapes",
        "a_setsid_process_started_by_bash_dies_when_the_session_closes",
    ),
    case(
        "escaped process: start_new_session in python, at session close",
        "openmanus-agent-session",
        "escapes",
        "a_new_session_popen_in_python_dies_when_the_session_closes",
    ),
    case(
        "escaped process: orphan adopted by the subreaper and killed",
        "openmanus-agent-process",
        "escape",
        "an_orphan_that_left_the_group_is_adopted_then_killed_with_its_group",
    ),
    case(
        "escaped process: the host's own children keep their statuses",
        "openmanus-agent-process",
        "escape",
        "the_hosts_own_children_keep_their_exit_statuses",
    ),
    case(
        "one Ctrl-C: no process that left its group survives",
        "openmanus-cli",
        "interrupt",
        "one_ctrl_c_leaves_no_process_that_left_its_group",
    ),
    case(
        "two Ctrl-Cs: no bash, python or MCP process survives",
        "openmanus-cli",
        "interrupt",
        "two_ctrl_cs_leave_no_bash_python_or_mcp_process_alive",
    ),
    case(
        "cancel (server, A2A, Ctrl-C): the interrupted command's background jobs are killed",
        "openmanus-agent-tools",
        "bash",
        "cancellation_kills_the_background_jobs_of_the_interrupted_command",
    ),
    case(
        "secrets: tools see neither the key nor the config file",
        "openmanus-cli",
        "secrets",
        "tools_see_neither_the_key_nor_the_config_file",
    ),
    case(
        "huge observation: capped in bytes without max_observe",
        "openmanus-agent-toolcall",
        "run_behaviour",
        "every_observation_is_capped_in_bytes_even_without_max_observe",
    ),
    case(
        "MCP server that never initialises: timed out and killed",
        "openmanus-agent-mcp",
        "client_everything",
        "a_server_that_never_initialises_times_out_and_is_killed",
    ),
    case(
        "MCP server killed mid-call: an error result, no process left",
        "openmanus-agent-mcp",
        "client_everything",
        "a_server_killed_mid_call_gives_an_error_result_and_no_process_survives",
    ),
    case(
        "MCP server writing junk before the handshake",
        "openmanus-agent-mcp",
        "client_everything",
        "malformed_lines_before_the_handshake_are_skipped",
    ),
    case(
        "MCP server failing at start: a warning, the others work",
        "openmanus-agent-mcp",
        "client_everything",
        "a_failing_server_is_a_warning_and_the_others_work",
    ),
    case(
        "MCP server crashing at tools/list: a warning, the run goes on, no process left",
        "openmanus-agent-session",
        "faults",
        "an_mcp_server_that_crashes_at_tools_list_is_a_warning_and_the_run_goes_on",
    ),
    case(
        "Chromium killed mid-action: an error observation, no Chromium left",
        "openmanus-agent-session",
        "faults",
        "chromium_killed_mid_action_gives_an_error_observation_and_leaves_no_process",
    ),
    case(
        "workspace disk full (a 1 MiB tmpfs): error observations, the journal failure reported",
        "openmanus-cli",
        "disk_full",
        "a_full_disk_gives_error_observations_and_a_reported_journal_failure",
    ),
    case(
        "SIGKILL of openmanus mid-tool, then a resume from the store: valid memory, finished",
        "openmanus-cli",
        "sessions",
        "a_run_killed_mid_tool_is_resumed_with_every_tool_call_answered",
    ),
    case(
        "config type error: the offending value is never echoed",
        "openmanus-agent-config",
        "errors",
        "a_wrong_value_is_never_echoed",
    ),
    case(
        "relative path refused: the example path it suggests is accepted",
        "openmanus-agent-tools",
        "editor",
        "the_suggested_example_path_is_accepted",
    ),
    case(
        "NUL byte or escape sequence in a path: escaped in the observation",
        "openmanus-agent-tools",
        "editor",
        "control_characters_in_a_path_are_escaped",
    ),
];

/// A test target's executable, and the directory of its package (where `cargo test` runs it).
struct TestExecutable {
    executable: PathBuf,
    package_dir: PathBuf,
}

/// Every test executable of the workspace by (package, target), built as `cargo xtask ci`
/// builds the tests (the whole workspace, every feature): after `ci` nothing is compiled again.
/// (Built by package, `cargo test -p P --test T`, each with the features of its own
/// selection, the cases compiled ~2.6 GB of crates anew after `ci`, in ~3 min.)
fn test_executables() -> Result<HashMap<(String, String), TestExecutable>> {
    let mut build = cargo(&[
        "test",
        "--workspace",
        "--all-features",
        "--locked",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    build.stdin(Stdio::null()).stderr(Stdio::inherit());
    say(&format!("==> build the tests: {build:?}"));
    let output = build.output().context("run cargo")?;
    if !output.status.success() {
        bail!("building the tests failed ({})", output.status);
    }
    let mut executables = HashMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if let Some((package, target, test)) = test_artifact(line) {
            executables.insert((package, target), test);
        }
    }
    Ok(executables)
}

/// The package, target name and executable of one line of cargo's JSON messages, when it is
/// the artifact of a test target.
fn test_artifact(line: &str) -> Option<(String, String, TestExecutable)> {
    let message: serde_json::Value = serde_json::from_str(line).ok()?;
    if message["reason"] != "compiler-artifact" {
        return None;
    }
    let target = &message["target"];
    let kinds = target["kind"].as_array()?;
    if !kinds.iter().any(|kind| kind == "test") {
        return None;
    }
    let executable = PathBuf::from(message["executable"].as_str()?);
    let manifest = Path::new(message["manifest_path"].as_str()?);
    let package = package_name(message["package_id"].as_str()?)?;
    Some((
        package,
        target["name"].as_str()?.to_owned(),
        TestExecutable {
            executable,
            package_dir: manifest.parent()?.to_path_buf(),
        },
    ))
}

/// The package's name in a package id: `path+file:///…/agent-llm#openmanus-agent-llm@0.1.0`,
/// or `path+file:///…/xtask#0.1.0` when the directory has the package's name.
fn package_name(id: &str) -> Option<String> {
    let (source, fragment) = id.rsplit_once('#')?;
    match fragment.split_once('@') {
        Some((name, _version)) => Some(name.to_owned()),
        None => Some(source.rsplit('/').next()?.to_owned()),
    }
}

/// What a case prints (on its standard output) when this machine cannot try it, followed by
/// the reason: such a case is counted as skipped, neither held nor failed.
const SKIPPED: &str = "FAULT-CASE-SKIPPED:";

/// Runs every case (each test alone, its output hidden unless it fails) and prints the tally.
pub(crate) fn faults() -> Result<()> {
    // The only test peer the cases need: the MCP reference server (installed once).
    let everything = ensure_mcp_everything()?;
    let executables = test_executables()?;
    let mut held = 0;
    let mut failed = Vec::new();
    let mut skips = Vec::new();
    for case in CASES {
        let Some(test) = executables.get(&(case.package.to_owned(), case.target.to_owned())) else {
            say(&format!(
                "FAILED {} (no test target {} in {})",
                case.what, case.target, case.package
            ));
            failed.push(case.what);
            continue;
        };
        // As `cargo test` runs it: in its package's directory.
        let mut command = Command::new(&test.executable);
        command
            .args(["--exact", case.test, "--nocapture"])
            .current_dir(&test.package_dir)
            .env("MCP_EVERYTHING_BIN", &everything);
        let output = command.stdin(Stdio::null()).output()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let ran = stdout.contains("1 passed");
        let skipped = stdout
            .lines()
            .find_map(|line| line.split_once(SKIPPED).map(|(_, reason)| reason.trim()));
        if output.status.success()
            && ran
            && let Some(reason) = skipped
        {
            say(&format!("SKIPPED {} ({reason})", case.what));
            skips.push(case.what);
        } else if output.status.success() && ran {
            held += 1;
            say(&format!("held   {}", case.what));
        } else {
            say(&format!(
                "FAILED {} ({} / {} / {})",
                case.what, case.package, case.target, case.test
            ));
            say(&String::from_utf8_lossy(&output.stdout));
            say(&String::from_utf8_lossy(&output.stderr));
            failed.push(case.what);
        }
    }
    let tried = CASES.len() - skips.len();
    if skips.is_empty() {
        say(&format!("fault cases: {held} held / {tried} tried"));
    } else {
        say(&format!(
            "fault cases: {held} held / {tried} tried ({} skipped here: {})",
            skips.len(),
            skips.join("; ")
        ));
    }
    if !failed.is_empty() {
        bail!(
            "{} fault case(s) failed: {}",
            failed.len(),
            failed.join("; ")
        );
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_package_id_names_its_package_with_or_without_the_name_in_it() {
        assert_eq!(
            package_name("path+file:///w/crates/agent-llm#openmanus-agent-llm@0.1.0").as_deref(),
            Some("openmanus-agent-llm")
        );
        assert_eq!(
            package_name("path+file:///w/xtask#0.1.0").as_deref(),
            Some("xtask")
        );
        assert_eq!(package_name("no fragment"), None);
    }

    #[test]
    fn only_test_targets_artifacts_are_taken() {
        let test = r#"{"reason":"compiler-artifact","package_id":"path+file:///w/crates/agent-llm#openmanus-agent-llm@0.1.0","manifest_path":"/w/crates/agent-llm/Cargo.toml","target":{"kind":["test"],"name":"http"},"executable":"/w/target/debug/deps/http-1"}"#;
        let (package, target, found) = test_artifact(test).unwrap();
        assert_eq!(
            (package.as_str(), target.as_str()),
            ("openmanus-agent-llm", "http")
        );
        assert_eq!(found.executable, Path::new("/w/target/debug/deps/http-1"));
        assert_eq!(found.package_dir, Path::new("/w/crates/agent-llm"));
        // A library's unit tests, a library itself, another message: none of them.
        let unit = test.replace(r#"["test"]"#, r#"["lib"]"#);
        assert!(test_artifact(&unit).is_none());
        let no_executable = test.replace(
            r#","executable":"/w/target/debug/deps/http-1""#,
            r#","executable":null"#,
        );
        assert!(test_artifact(&no_executable).is_none());
        let finished = r#"{"reason":"build-finished","success":true}"#;
        assert!(test_artifact(finished).is_none());
        assert!(test_artifact("not json").is_none());
    }
}
