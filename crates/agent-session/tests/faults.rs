//! Fault cases of issue 21 at the level of a whole session (`cargo xtask faults` runs each):
//! an overloaded model (529), an MCP server that dies at `tools/list`, and Chromium killed in
//! the middle of a browser action. Each case asserts a clean, explained ending, valid memory
//! (in the agent and in the store), a journal closed with its result, and that every process
//! the case started is gone — the processes it recorded, never a machine-wide count.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_config::{Config, McpServerConfig, McpTransport};
use agent_core::{ToolCall, check_tool_pairing};
use agent_llm::{ApiType, LlmSettings};
use agent_session::journal::{self, JournalLine, JournalReader};
use agent_session::store::Store;
use agent_session::{Ending, Session, Target};
use agent_testkit::{AnthropicReply, Completion, MockAnthropic, MockOpenAi};
use agents::{AgentFactory, AgentKind};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(120);

fn call(id: &str, name: &str, args: &Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

fn terminate(id: &str, text: &str) -> Completion {
    Completion::tool_calls(
        Some(text.into()),
        [call(id, "terminate", &json!({"status": "success"}))],
    )
}

/// A session recorded in a store of its own (a file beside the workspace).
struct Case {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    store: Store,
}

impl Case {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let workspace = workspace.canonicalize().unwrap();
        let store = Store::open(dir.path().join("sessions.db")).await.unwrap();
        Self {
            _dir: dir,
            workspace,
            store,
        }
    }

    fn factory(&self, config: Config) -> AgentFactory {
        AgentFactory::new(config).with_workspace(&self.workspace)
    }

    async fn start(&self, config: Config, kind: AgentKind) -> Session {
        tokio::time::timeout(
            LIMIT,
            Session::start_recorded(
                &self.factory(config),
                Target::Agent(kind),
                &self.store,
                json!({}),
            ),
        )
        .await
        .expect("the session did not start")
        .unwrap()
    }

    /// The common end of every case: the agent's memory and the store's copy are valid (every
    /// tool call answered), the session closes without a journal of its own (the store is its
    /// record), and its export reads back whole, requests rebuilt, with the run's result after
    /// everything of the run. Returns the export's lines.
    async fn close_cleanly(&self, session: Session) -> Vec<JournalLine> {
        let id = session.session_id().unwrap().to_owned();
        let memory = session.agent().unwrap().base().memory.messages().to_vec();
        check_tool_pairing(&memory, false).unwrap();
        let journal = tokio::time::timeout(LIMIT, session.close())
            .await
            .expect("the session did not close")
            .unwrap();
        assert_eq!(journal, None, "a recorded session writes no journal");
        let stored = self.store.messages(&id).await.unwrap();
        check_tool_pairing(&stored, false).unwrap();
        assert_eq!(
            stored.len(),
            memory.len(),
            "the store holds the agent's memory"
        );
        let mut export = Vec::new();
        journal::export_session(&self.store, &id, &mut export)
            .await
            .unwrap();
        let lines: Vec<JournalLine> = JournalReader::new(export.as_slice())
            .collect::<Result<_, _>>()
            .unwrap();
        let kinds: Vec<Value> = lines
            .iter()
            .map(|line| match line {
                JournalLine::Entry(entry) => entry["kind"].clone(),
                JournalLine::Request { .. } => json!("model_request"),
            })
            .collect();
        assert_eq!(
            kinds[kinds.len() - 2..],
            [json!("result"), json!("memory")],
            "the run's result after everything of the run: {kinds:?}"
        );
        assert!(
            kinds.contains(&json!("model_request")),
            "the model exchanges are in the record: {kinds:?}"
        );
        lines
    }
}

/// The journal's agent events of `kind`.
fn journal_events<'a>(lines: &'a [JournalLine], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter_map(|line| match line {
            JournalLine::Entry(entry) if entry["kind"] == "event" => entry.get("event"),
            _ => None,
        })
        .filter(|event| event["type"] == kind)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

use agent_process::is_running;

/// Waits until none of `pids` runs; false when some still do after the limit.
async fn all_gone(pids: &BTreeSet<i32>) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if !pids.iter().any(|pid| is_running(*pid)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Every descendant of this test process whose command line contains `needle` (a process that
/// lost its parent is adopted by this process, the supervisor's subreaper, so it still counts).
fn descendants_with(needle: &str) -> BTreeSet<i32> {
    let me = i32::try_from(std::process::id()).unwrap();
    agent_process::descendants_of(me)
        .into_iter()
        .filter(|&pid| agent_process::command_line(pid).is_some_and(|line| line.contains(needle)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// LLM 529
// ---------------------------------------------------------------------------------------------

/// A 529 "overloaded" (Anthropic's status; some OpenAI-compatible gateways send it too) is a
/// transient failure: retried after a backoff the session reports, and the run finishes.
#[tokio::test]
async fn an_overloaded_model_529_is_retried_and_the_run_finishes() {
    // OpenAI-compatible.
    let case = Case::new().await;
    let server = MockOpenAi::start().await.unwrap();
    server
        .push_server_error(529)
        .push_server_error(529)
        .push(terminate("c1", "Done after the overload."));
    let mut llm = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-faults");
    llm.max_attempts = 4;
    llm.backoff_max_secs = 1.0;
    let mut session = case.start(Config::new(llm), AgentKind::Swe).await;
    let report = tokio::time::timeout(LIMIT, session.run("Say done."))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        report.ending(),
        Ending::Finished,
        "{}",
        report.status_text()
    );
    assert_eq!(report.answer.as_deref(), Some("Done after the overload."));
    assert_eq!(server.request_count(), 3);
    let lines = case.close_cleanly(session).await;
    let retries = journal_events(&lines, "retry");
    assert_eq!(
        retries.len(),
        2,
        "each 529 is a reported retry: {retries:?}"
    );
    assert!(
        retries
            .iter()
            .all(|r| r["reason"].as_str().unwrap().contains("529")),
        "{retries:?}"
    );
    server.verify().unwrap();

    // Anthropic's own overloaded_error, as a status and inside a stream.
    let case = Case::new().await;
    let server = MockAnthropic::start().await.unwrap();
    server
        .push(AnthropicReply::Overloaded)
        .push(AnthropicReply::OverloadedInStream)
        .push(terminate("c1", "Done after the overload."));
    let mut llm = LlmSettings::new("claude-sonnet-4-5", server.base_url())
        .with_api_key("sk-ant-faults")
        .with_api_type(ApiType::Anthropic);
    llm.max_attempts = 4;
    llm.backoff_max_secs = 1.0;
    let mut session = case.start(Config::new(llm), AgentKind::Swe).await;
    let report = tokio::time::timeout(LIMIT, session.run("Say done."))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        report.ending(),
        Ending::Finished,
        "{}",
        report.status_text()
    );
    assert_eq!(server.requests().len(), 3);
    let lines = case.close_cleanly(session).await;
    assert_eq!(journal_events(&lines, "retry").len(), 2);
    server.verify().unwrap();
}

// ---------------------------------------------------------------------------------------------
// MCP server crashing at tools/list
// ---------------------------------------------------------------------------------------------

/// A stdio MCP server that answers `initialize`, then exits as soon as it is asked for its
/// tools. It writes its pid to the file named by its first argument.
const CRASH_AT_TOOLS_LIST: &str = r#"
import json, os, sys
with open(sys.argv[1], "w") as f:
    f.write(f"{os.getpid()}\n")
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "crashy", "version": "1.0.0"},
        }
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    elif method == "tools/list":
        sys.exit(3)
"#;

/// Manus with an MCP server that crashes at `tools/list`: the run goes on with the built-in
/// tools (the first step waits for the server, which fails, and is logged), and the server is
/// gone.
#[tokio::test]
async fn an_mcp_server_that_crashes_at_tools_list_is_a_warning_and_the_run_goes_on() {
    let case = Case::new().await;
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("crashy.py");
    std::fs::write(&script, CRASH_AT_TOOLS_LIST).unwrap();
    let pid_file = scripts.path().join("crashy.pid");
    let server = MockOpenAi::start().await.unwrap();
    server.push(terminate("c1", "Done without the server."));
    let mut llm = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-faults");
    llm.max_attempts = 1;
    let mut config = Config::new(llm);
    config.mcp.servers.push(McpServerConfig {
        id: "crashy".into(),
        transport: McpTransport::Stdio {
            command: "python3".into(),
            args: vec![script.display().to_string(), pid_file.display().to_string()],
            env: std::collections::BTreeMap::new(),
            cwd: None,
        },
    });
    let mut session = case.start(config, AgentKind::Manus).await;
    // The server connects in the background; the first step waits for it (and it fails).
    let report = tokio::time::timeout(LIMIT, session.run("Say done."))
        .await
        .unwrap()
        .unwrap();
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the MCP server never started")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        report.ending(),
        Ending::Finished,
        "{}",
        report.status_text()
    );
    // The model was offered the built-in tools and none of the dead server's.
    let tools: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.iter().any(|t| t == "str_replace_editor"), "{tools:?}");
    assert!(!tools.iter().any(|t| t.contains("crashy")), "{tools:?}");
    case.close_cleanly(session).await;
    assert!(
        all_gone(&BTreeSet::from([pid])).await,
        "the crashed MCP server {pid} still runs"
    );
    server.verify().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Chromium killed mid-action
// ---------------------------------------------------------------------------------------------

/// A page server on 127.0.0.1 that accepts every connection, reports it, and never answers:
/// a navigation to it stays in flight until something else ends it.
async fn hanging_page() -> (String, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/never", listener.local_addr().unwrap());
    let (tell, told) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            let _ = tell.send(());
        }
    });
    (url, told)
}

/// The browser agent's Chromium is killed (SIGKILL) while `go_to_url` waits for a page: the
/// tool gives an error observation, the run ends explained, and no Chromium process the case
/// started survives.
#[tokio::test]
async fn chromium_killed_mid_action_gives_an_error_observation_and_leaves_no_process() {
    let case = Case::new().await;
    let (url, mut connected) = hanging_page().await;
    let server = MockOpenAi::start().await.unwrap();
    server
        .push(Completion::tool_calls(
            Some("Opening the page.".into()),
            [call(
                "c1",
                "browser_use",
                &json!({"action": "go_to_url", "url": url}),
            )],
        ))
        .push(terminate("c2", "The browser died; stopping."));
    let mut llm = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-faults");
    llm.max_attempts = 1;
    let mut config = Config::new(llm);
    config.browser.headless = Some(true);
    let mut session = case.start(config, AgentKind::Browser).await;

    let killer = async {
        tokio::time::timeout(LIMIT, connected.recv())
            .await
            .expect("Chromium never asked for the page")
            .unwrap();
        let chromium = descendants_with("openmanus-chromium-");
        assert!(!chromium.is_empty(), "no Chromium process found");
        // The browser process itself (its helpers have a `--type=`).
        let main: Vec<i32> = chromium
            .iter()
            .copied()
            .filter(|pid| {
                !agent_process::command_line(*pid)
                    .unwrap_or_default()
                    .contains("--type=")
            })
            .collect();
        assert!(
            !main.is_empty(),
            "no Chromium browser process in {chromium:?}"
        );
        for pid in &main {
            let status = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        }
        chromium
    };
    let (report, chromium) = tokio::join!(
        tokio::time::timeout(LIMIT, session.run("Read the page.")),
        killer
    );
    let report = report.expect("the run hung after Chromium died").unwrap();
    assert_eq!(
        report.ending(),
        Ending::Finished,
        "{}",
        report.status_text()
    );
    // The second request carries the tool's error observation for the first call.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the run went on after the failed action");
    let observation = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .map(|m| m["content"].to_string())
        .expect("the call was answered");
    // Said as soon as Chromium died, not when the action timed out.
    assert!(
        observation.contains("Error") && observation.contains("Chromium exited"),
        "{observation}"
    );
    case.close_cleanly(session).await;
    assert!(
        all_gone(&chromium).await,
        "Chromium processes survived: {:?}",
        chromium
            .iter()
            .filter(|pid| is_running(**pid))
            .collect::<Vec<_>>()
    );
    server.verify().unwrap();
}
