//! Helpers shared by the command line's integration tests.

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use agent_core::ToolCall;
use agent_testkit::MockOpenAi;
use serde_json::Value;
use tokio::process::Command;

/// The program under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

/// A temp dir with `config/config.toml` pointing at `server`, and a workspace.
#[allow(dead_code)] // not every test binary runs the program this way
pub struct Setup {
    /// The directory: `config/`, `workspace/`, `tmp/`.
    pub dir: tempfile::TempDir,
}

#[allow(dead_code)] // not every test binary runs the program this way
impl Setup {
    pub fn new(server: &MockOpenAi) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(
            dir.path().join("config/config.toml"),
            format!(
                "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-cli-test\"\nmax_tokens = 1024\ntemperature = 0.0\nmax_attempts = 1\n",
                server.base_url()
            ),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
        // The program's temporary files (Chromium's profile among them) stay in this test's
        // directory, so what it leaves behind can be told from other tests' processes.
        std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
        Self { dir }
    }

    /// Appends `toml` (whole sections) to the configuration.
    pub fn append_config(&self, toml: &str) {
        let path = self.dir.path().join("config/config.toml");
        let mut config = std::fs::read_to_string(&path).unwrap();
        config.push('\n');
        config.push_str(toml);
        std::fs::write(&path, config).unwrap();
    }

    /// The directory the program's temporary files go to.
    pub fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace").canonicalize().unwrap()
    }

    pub fn command(&self) -> Command {
        let mut command = Command::new(BIN);
        command
            .current_dir(self.dir.path())
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .env("TMPDIR", self.tmp())
            // The permission rules file (`openmanus rules`) is the test's own.
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        tokio::time::timeout(Duration::from_secs(60), self.command().args(args).output())
            .await
            .expect("openmanus did not finish")
            .unwrap()
    }
}

/// A tool call the scripted model makes.
#[allow(dead_code)] // not every test binary scripts a model
pub fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

/// Whether process `pid` exists and is not a zombie (a zombie is as good as gone: it runs
/// nothing).
#[allow(dead_code)] // not every test binary checks processes
pub fn alive(pid: i32) -> bool {
    agent_process::is_running(pid)
}

/// A bash command for the `bash` tool that leaves two processes behind it — one in a session of
/// its own (`setsid`), one plain background child — then becomes a long `sleep` itself; each
/// of the three writes its pid to `<pids>.setsid`, `<pids>.background` and `<pids>` (the file
/// written last, once the other two were started).
#[allow(dead_code)] // not every test binary kills a host
pub fn bash_leaving_children(pids: &std::path::Path) -> String {
    let p = pids.display();
    format!(
        "setsid sh -c 'echo $$ > {p}.setsid; exec sleep 300' & \
         sh -c 'echo $$ > {p}.background; exec sleep 300' & \
         echo $$ > {p} && exec sleep 300"
    )
}

/// The three pids [`bash_leaving_children`] recorded, once all three files are complete
/// (polled, for up to two minutes).
#[allow(dead_code)]
pub async fn recorded_pids(pids: &std::path::Path) -> Vec<(String, i32)> {
    let files = [
        ("setsid", format!("{}.setsid", pids.display())),
        ("background", format!("{}.background", pids.display())),
        ("bash", pids.display().to_string()),
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let read: Vec<Option<(String, i32)>> = files
            .iter()
            .map(|(what, file)| {
                let text = std::fs::read_to_string(file).ok()?;
                let pid = text.strip_suffix('\n')?.trim().parse().ok()?;
                Some(((*what).to_owned(), pid))
            })
            .collect();
        if read.iter().all(Option::is_some) {
            return read.into_iter().flatten().collect();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the tool did not record its processes: {read:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Waits (up to two minutes) until none of `pids` is alive; panics naming those that are.
#[allow(dead_code)]
pub async fn assert_all_gone(pids: &[(String, i32)], after: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let left: Vec<&(String, i32)> = pids.iter().filter(|(_, pid)| alive(*pid)).collect();
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still alive two minutes after {after}: {left:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The display socket directories (`$TMPDIR/openmanus-display-<pid>-…`) of the process `pid`.
#[allow(dead_code)] // only the desktop tests look
pub fn display_dirs(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("openmanus-display-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Spawns `command` (an `openmanus serve --bind 127.0.0.1:0 …` with its directory and
/// environment set) with standard error piped, and waits for the line that says where it
/// listens; returns the child and the base URL. Standard error is read on after that, so the
/// server never blocks on a full pipe.
#[allow(dead_code)] // only the server tests start one
pub async fn start_serve(mut command: Command) -> (tokio::process::Child, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix("openmanus serve: ") {
                return rest.split('/').take(3).collect::<Vec<_>>().join("/");
            }
        }
        panic!("the server ended before it listened");
    })
    .await
    .expect("the server did not start");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// Writes `dir/config/config.toml` for `mock` plus `extra` (whole sections) and starts
/// `openmanus serve` on a free port there, with `env` added to its environment; returns the
/// child and its base URL.
#[allow(dead_code)] // only the server tests start one
pub async fn serve_in(
    dir: &std::path::Path,
    mock: &MockOpenAi,
    extra: &str,
    env: Vec<(String, String)>,
) -> (tokio::process::Child, String) {
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    std::fs::write(
        dir.join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-serve-test\"\nmax_attempts = 1\n{extra}",
            mock.base_url()
        ),
    )
    .unwrap();
    let mut command = Command::new(BIN);
    command
        .current_dir(dir)
        .env_remove("OPENMANUS_CONFIG")
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .env("TMPDIR", dir.join("tmp"))
        .envs(env)
        .args(["serve", "--bind", "127.0.0.1:0"]);
    start_serve(command).await
}

/// A reply that ends the run with `terminate`, saying `text`.
#[allow(dead_code)] // not every test binary scripts one
pub fn finish(text: &str) -> agent_testkit::Completion {
    agent_testkit::Completion::tool_calls(
        Some(text.into()),
        [call(
            "t",
            "terminate",
            serde_json::json!({"status": "success"}),
        )],
    )
}

/// Two `openmanus serve`, each with its strict mock: a helper whose run answers "The sum is 7.",
/// and a lead whose config lists it as `adder` (plus `lead_extra`, given the lead's directory)
/// and whose Manus hands "Add 3 and 4" to it with `a2a_call`, then answers "The adder says 7.".
/// The lead is asked over A2A (`SendMessage`); its reply is kept. Both servers get `env`.
#[allow(dead_code)] // only the A2A delegation tests
pub struct Delegation {
    pub helper_mock: MockOpenAi,
    pub lead_mock: MockOpenAi,
    pub helper: tokio::process::Child,
    pub lead: tokio::process::Child,
    pub helper_dir: tempfile::TempDir,
    pub lead_dir: tempfile::TempDir,
    /// The lead's JSON-RPC reply.
    pub reply: Value,
}

#[allow(dead_code)] // only the A2A delegation tests
impl Delegation {
    pub async fn run(
        lead_extra: impl FnOnce(&std::path::Path) -> String,
        env: Vec<(String, String)>,
    ) -> Self {
        let helper_mock = MockOpenAi::start().await.unwrap();
        let lead_mock = MockOpenAi::start().await.unwrap();
        let helper_dir = tempfile::tempdir().unwrap();
        let lead_dir = tempfile::tempdir().unwrap();
        helper_mock.push(finish("The sum is 7."));
        let (helper, helper_url) = serve_in(helper_dir.path(), &helper_mock, "", env.clone()).await;
        let extra = format!(
            "{}\n[[a2a.agents]]\nname = \"adder\"\nurl = \"{helper_url}\"\ndescription = \"adds numbers\"\n",
            lead_extra(lead_dir.path())
        );
        let (lead, lead_url) = serve_in(lead_dir.path(), &lead_mock, &extra, env).await;
        lead_mock
            .push(agent_testkit::Completion::tool_calls(
                None,
                [call(
                    "d",
                    "a2a_call",
                    serde_json::json!({"agent": "adder", "message": "Add 3 and 4"}),
                )],
            ))
            .push(finish("The adder says 7."));
        let reply: Value = agent_llm::http::shared_client()
            .unwrap()
            .post(format!("{lead_url}/a2a"))
            .json(
                &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                "message": {"messageId": "m1", "role": "ROLE_USER",
                            "parts": [{"text": "What is 3 + 4? Ask the adder."}]}}}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        Self {
            helper_mock,
            lead_mock,
            helper,
            lead,
            helper_dir,
            lead_dir,
            reply,
        }
    }
}
