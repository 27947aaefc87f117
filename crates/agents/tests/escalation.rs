//! The model asking for more in the call (`escalate`, issue 32): with a real confinement
//! (bubblewrap, else Landlock), the gate asks before the call runs — allowed, it runs without
//! the sandbox; declined, it does not run; nobody there, it runs confined.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use agent_config::SandboxMode;
use agent_core::ToolCall;
use agent_protocol::{Decider, PermissionDecision};
use agent_sandbox::{Confinement, ConfinementOptions};
use agent_toolcall::Verdict;
use agent_tools::{HumanInput, ToolContext, ToolError};
use agents::AgentOptions;
use async_trait::async_trait;
use serde_json::{Value, json};

/// Answers each question with the next scripted answer (`None`: nobody is there).
struct Scripted {
    answer: Option<&'static str>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl HumanInput for Scripted {
    async fn ask(&self, inquire: &str) -> Result<Option<String>, ToolError> {
        self.asked.lock().unwrap().push(inquire.to_owned());
        Ok(self.answer.map(str::to_owned))
    }
}

struct Case {
    _dir: tempfile::TempDir,
    outside: std::path::PathBuf,
    options: AgentOptions,
    human: Arc<Scripted>,
    _confinement: Arc<Confinement>,
}

async fn case(answer: Option<&'static str>) -> Case {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let workspace = root.join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let confinement = Arc::new(
        Confinement::new(&ConfinementOptions::new(
            SandboxMode::WorkspaceWrite,
            &workspace,
        ))
        .await
        .expect("a confinement works here (bubblewrap or Landlock)")
        .unwrap(),
    );
    let human = Arc::new(Scripted {
        answer,
        asked: Mutex::new(Vec::new()),
    });
    let mut options = AgentOptions::new(&workspace);
    options.confinement = Some(Arc::clone(&confinement));
    options.human = Some(human.clone());
    Case {
        outside: root.join("report.txt"),
        _dir: dir,
        options,
        human,
        _confinement: confinement,
    }
}

fn asking(case: &Case) -> (ToolCall, Value) {
    let args = json!({
        "command": format!("echo done > {}", case.outside.display()),
        "escalate": true,
        "justification": "the report goes where the user asked",
    });
    (ToolCall::new("c1", "bash", args.to_string()), args)
}

#[tokio::test]
async fn the_schema_offers_it_and_an_allowed_request_runs_without_the_sandbox() {
    let case = case(Some("once")).await;
    let bash = case.options.bash_tool();
    let schema = bash.parameters();
    assert_eq!(schema["properties"]["escalate"]["type"], "boolean");
    assert_eq!(schema["properties"]["justification"]["type"], "string");
    assert!(bash.description().contains("`escalate`"));

    let gate = case.options.gate().unwrap();
    let (call, args) = asking(&case);
    let Verdict::Answered(gated) = gate.before(&call, &args, &ToolContext::default()).await else {
        panic!("allowed: the gate runs it unconfined itself");
    };
    assert_eq!(
        std::fs::read_to_string(&case.outside).unwrap(),
        "done\n",
        "{gated:?}"
    );
    assert_eq!(gated.records[0].decision, PermissionDecision::Allowed);
    assert_eq!(gated.records[0].by, Decider::Person);
    let asked = case.human.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].contains("the report goes where the user asked") && asked[0].contains("echo done"),
        "{asked:?}"
    );
}

#[tokio::test]
async fn a_declined_request_does_not_run() {
    let case = case(Some("deny")).await;
    let gate = case.options.gate().unwrap();
    let (call, args) = asking(&case);
    let Verdict::Answered(gated) = gate.before(&call, &args, &ToolContext::default()).await else {
        panic!("declined: answered without running");
    };
    assert!(!case.outside.exists());
    assert!(
        gated
            .result
            .error
            .unwrap_or_default()
            .contains("declined to run this bash call without the sandbox")
    );
    assert_eq!(gated.records[0].by, Decider::Person);
}

#[tokio::test]
async fn with_nobody_to_ask_it_runs_confined_and_says_so() {
    let case = case(None).await;
    let gate = case.options.gate().unwrap();
    let (call, args) = asking(&case);
    let Verdict::RunWith(stripped, records) =
        gate.before(&call, &args, &ToolContext::default()).await
    else {
        panic!("nobody there: it runs as usual, confined");
    };
    assert_eq!(stripped, json!({"command": args["command"]}));
    assert_eq!(records[0].decision, PermissionDecision::Denied);
    assert_eq!(records[0].by, Decider::Policy);
    assert!(
        records[0].detail.contains("runs in the sandbox"),
        "{records:?}"
    );
    assert!(!case.outside.exists());
}
