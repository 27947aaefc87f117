//! `openmanus doctor` as a subprocess, on a machine made by PATH tricks: `PATH` is a temp
//! directory holding only small shell scripts named `chromium`, `bwrap`, `prlimit`, `docker`,
//! `python3`, `nats-server` (each answers `--version`; `python3 -c ...` imports pandas or
//! fails to), and the environment is cleared, so what the host has installed does not show. The
//! model's endpoint is the test kit's mock on loopback (reachable) or a port nothing listens on;
//! its key a variable set or not. The Docker engine is a small fake on loopback (`DOCKER_HOST`);
//! the X server is named by path (`-c sandbox.xvfb=...`), since the sandbox looks for it on its
//! own fixed `PATH`, not the process's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use agent_testkit::MockOpenAi;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::common::BIN;

/// How long a doctor run may take before the test fails (its checks are bounded far below).
const PATIENCE: Duration = Duration::from_secs(120);

/// The variable the test configurations read the key from.
const KEY_VAR: &str = "DOCTOR_TEST_KEY";

/// A machine: a directory with `bin/` (the whole `PATH`), `home/`, `tmp/` and a configuration.
struct Machine {
    dir: tempfile::TempDir,
    /// Variables set for the program besides the basics.
    env: Vec<(String, String)>,
}

impl Machine {
    /// A machine with nothing on `PATH`, no Docker engine, and a configuration whose model is at
    /// `base_url` with its key in [`KEY_VAR`].
    fn new(base_url: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "home", "tmp", "config"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let machine = Self {
            dir,
            env: vec![("DOCKER_HOST".into(), format!("tcp://{}", closed_port()))],
        };
        machine.config(&format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{base_url}\"\napi_key = \"${{{KEY_VAR}}}\"\n"
        ));
        machine
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn config(&self, text: &str) {
        std::fs::write(self.dir.path().join("config/config.toml"), text).unwrap();
    }

    /// An executable `#!/bin/sh` script `name` on the machine's `PATH` (only shell builtins
    /// there: nothing else is on that `PATH`).
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.bin().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn set(&mut self, name: &str, value: &str) {
        self.env.retain(|(n, _)| n != name);
        self.env.push((name.into(), value.into()));
    }

    /// Runs `openmanus doctor ARGS`; fails the test if it takes longer than [`PATIENCE`].
    async fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(BIN);
        command
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", self.bin())
            .env("HOME", self.dir.path().join("home"))
            .env("TMPDIR", self.dir.path().join("tmp"))
            .env("NO_COLOR", "1")
            .envs(self.env.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            .arg("doctor")
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        tokio::time::timeout(PATIENCE, command.output())
            .await
            .expect("openmanus doctor did not finish")
            .unwrap()
    }

    /// Runs `openmanus doctor --json ARGS`: its one JSON object, after checking the exit code
    /// says whether the model is usable.
    async fn report(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.run(&all).await;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "stdout:\n{stdout}\nstderr:\n{stderr}");
        let report: Value = serde_json::from_str(lines[0]).unwrap();
        let usable = report["ok"].as_bool().unwrap();
        assert_eq!(
            output.status.code(),
            Some(if usable { 0 } else { 1 }),
            "{report:#}\nstderr:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        report
    }
}

/// A loopback port nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// The check `id` of a report.
fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {report:#}"))
}

fn status<'a>(report: &'a Value, id: &str) -> &'a str {
    check(report, id)["status"].as_str().unwrap()
}

fn text<'a>(report: &'a Value, id: &str, field: &str) -> &'a str {
    check(report, id)[field]
        .as_str()
        .unwrap_or_else(|| panic!("{id}.{field} is not text: {report:#}"))
}

/// A mock model with its key set: the model is usable.
async fn usable_model() -> (MockOpenAi, Machine) {
    let server = MockOpenAi::start().await.unwrap();
    let mut machine = Machine::new(&server.base_url());
    machine.set(KEY_VAR, "sk-doctor-secret");
    (server, machine)
}

// ---------------------------------------------------------------------------------------------
// The model

#[tokio::test]
async fn the_model_is_usable_when_its_key_is_set_and_its_endpoint_answers() {
    let (server, machine) = usable_model().await;
    let report = machine.report(&[]).await;
    assert_eq!(report["ok"], true, "{report:#}");
    let model = check(&report, "model");
    assert_eq!(model["status"], "ok", "{model:#}");
    assert_eq!(model["facts"]["key_env"], KEY_VAR);
    assert_eq!(model["facts"]["key_set"], true);
    assert_eq!(model["facts"]["reachable"], true);
    // Any HTTP answer counts: the mock says 404 to a GET of the base URL.
    assert!(model["facts"]["http_status"].is_u64(), "{model:#}");
    assert_eq!(model["facts"]["base_url"], server.base_url().as_str());
    assert!(text(&report, "model", "detail").contains("DOCTOR_TEST_KEY is set"));
    // The key's name is reported, never its value; nor is it sent anywhere.
    let human = machine.run(&[]).await;
    assert_eq!(human.status.code(), Some(0));
    for output in [&human.stdout, &human.stderr] {
        assert!(!String::from_utf8_lossy(output).contains("sk-doctor-secret"));
    }
    assert!(!report.to_string().contains("sk-doctor-secret"));
    for request in server.requests() {
        assert!(
            !format!("{:?}", request.headers).contains("sk-doctor-secret"),
            "{request:?}"
        );
    }
}

#[tokio::test]
async fn an_unset_key_variable_is_named_and_fails_the_exit_code() {
    let server = MockOpenAi::start().await.unwrap();
    let machine = Machine::new(&server.base_url());
    let report = machine.report(&[]).await;
    assert_eq!(report["ok"], false);
    assert_eq!(status(&report, "model"), "problem");
    let detail = text(&report, "model", "detail");
    assert!(
        detail.contains("key: DOCTOR_TEST_KEY is not set"),
        "{detail}"
    );
    // The endpoint is still checked.
    assert_eq!(check(&report, "model")["facts"]["reachable"], true);
    assert_eq!(check(&report, "model")["facts"]["key_env"], KEY_VAR);
    assert!(text(&report, "model", "fix").contains("export DOCTOR_TEST_KEY="));
}

#[tokio::test]
async fn an_endpoint_with_nothing_listening_is_unreachable() {
    let mut machine = Machine::new(&format!("http://{}/v1", closed_port()));
    machine.set(KEY_VAR, "sk-doctor-secret");
    let report = machine.report(&[]).await;
    assert_eq!(report["ok"], false);
    let model = check(&report, "model");
    assert_eq!(model["status"], "problem");
    assert_eq!(model["facts"]["reachable"], false);
    assert_eq!(model["facts"]["key_set"], true);
    assert!(
        text(&report, "model", "detail").contains("cannot connect"),
        "{model:#}"
    );
    assert!(text(&report, "model", "fix").contains("base_url"));
}

#[tokio::test]
async fn an_endpoint_that_never_answers_is_cut_off_at_the_timeout() {
    // Connections are accepted (the kernel's backlog) and never answered.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut machine = Machine::new(&format!("http://{}/v1", silent.local_addr().unwrap()));
    machine.set(KEY_VAR, "sk-doctor-secret");
    let started = Instant::now();
    let report = machine.report(&["--timeout", "3"]).await;
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(report["ok"], false);
    assert!(
        text(&report, "model", "detail").contains("no answer within 3 s"),
        "{report:#}"
    );
    drop(silent);
}

#[tokio::test]
async fn the_configuration_is_the_one_config_and_c_name() {
    let server = MockOpenAi::start().await.unwrap();
    // ./config/config.toml points nowhere; --config names another file, and -c fixes its URL.
    let mut machine = Machine::new(&format!("http://{}/v1", closed_port()));
    machine.set(KEY_VAR, "sk-doctor-secret");
    let other = machine.dir.path().join("other.toml");
    std::fs::write(
        &other,
        format!(
            "[llm]\nmodel = \"gpt-4o-mini\"\nbase_url = \"http://{}/v1\"\napi_key = \"${{{KEY_VAR}}}\"\n",
            closed_port()
        ),
    )
    .unwrap();
    let base_url = format!("llm.base_url={}", server.base_url());
    let report = machine
        .report(&["--config", other.to_str().unwrap(), "-c", &base_url])
        .await;
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["configuration"], other.to_str().unwrap());
    assert_eq!(check(&report, "model")["facts"]["model"], "gpt-4o-mini");
    assert_eq!(
        check(&report, "model")["facts"]["base_url"],
        server.base_url().as_str()
    );
}

#[tokio::test]
async fn without_a_configuration_file_it_says_so_and_the_rest_is_still_checked() {
    let machine = Machine::new("http://127.0.0.1:9/v1");
    std::fs::remove_file(machine.dir.path().join("config/config.toml")).unwrap();
    machine.script("nats-server", "echo 'nats-server: v2.9.20'");
    let output = machine.run(&["--json"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no configuration file found"));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["configuration"], Value::Null);
    assert!(text(&report, "model", "detail").contains("no configuration file"));
    assert_eq!(text(&report, "model", "fix"), "openmanus config init");
    assert_eq!(status(&report, "nats-server"), "ok");
}

#[tokio::test]
async fn a_configuration_that_does_not_load_is_the_models_problem_not_doctors() {
    let machine = Machine::new("http://127.0.0.1:9/v1");
    machine.config("[llm]\nmodel = \"gpt-4o\"\nbase_url = 42\n");
    machine.script("nats-server", "echo 'nats-server: v2.9.20'");
    let report = machine.report(&[]).await;
    assert_eq!(report["ok"], false);
    let file = machine.dir.path().join("config/config.toml");
    assert_eq!(report["configuration"], file.to_str().unwrap());
    let detail = text(&report, "model", "detail");
    assert!(
        detail.starts_with("the configuration does not load"),
        "{detail}"
    );
    assert!(detail.contains("base_url"), "{detail}");
    assert!(text(&report, "model", "fix").contains("openmanus config check"));
    assert_eq!(status(&report, "nats-server"), "ok");
}

// ---------------------------------------------------------------------------------------------
// The capabilities, each present and missing

#[tokio::test]
async fn chromium_present_and_missing() {
    let (_server, machine) = usable_model().await;
    let missing = machine.report(&[]).await;
    assert_eq!(status(&missing, "chromium"), "missing");
    assert!(
        text(&missing, "chromium", "detail").contains("chromium, chromium-browser, google-chrome")
    );
    assert!(
        text(&missing, "chromium", "fix")
            .to_lowercase()
            .contains("chromium")
    );
    // Missing capabilities are optional: the model is usable, the exit code 0.
    assert_eq!(missing["ok"], true);

    let path = machine.script(
        "chromium",
        "echo 'Chromium 120.0.6099.224 built on Debian 12.4'",
    );
    let present = machine.report(&[]).await;
    let chromium = check(&present, "chromium");
    assert_eq!(chromium["status"], "ok", "{chromium:#}");
    assert_eq!(chromium["facts"]["path"], path.to_str().unwrap());
    assert_eq!(
        chromium["facts"]["version"],
        "Chromium 120.0.6099.224 built on Debian 12.4"
    );
    assert_eq!(chromium["fix"], Value::Null);

    // A configured executable is the one looked for.
    let configured = machine
        .report(&["-c", "browser.chrome_instance_path=/nonexistent/chromium"])
        .await;
    assert_eq!(status(&configured, "chromium"), "missing");
    assert!(text(&configured, "chromium", "detail").contains("/nonexistent/chromium"));
}

#[tokio::test]
async fn a_chromium_that_hangs_is_cut_off_at_the_timeout() {
    let (_server, machine) = usable_model().await;
    machine.script("chromium", "exec /bin/sleep 300");
    let started = Instant::now();
    let report = machine.report(&["--timeout", "3"]).await;
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(status(&report, "chromium"), "problem");
    assert!(
        text(&report, "chromium", "detail").contains("did not answer within 3 s"),
        "{report:#}"
    );
}

/// A `bwrap` that answers `--version` and does what `trial` says for the probe's real run.
fn fake_bwrap(machine: &Machine, trial: &str) {
    machine.script(
        "bwrap",
        &format!("case \"$1\" in --version) echo 'bubblewrap 0.8.0';; *) {trial};; esac"),
    );
    machine.script("prlimit", "echo 'prlimit from util-linux 2.38.1'");
}

#[tokio::test]
async fn bubblewrap_present_refused_and_missing() {
    let (_server, machine) = usable_model().await;
    let missing = machine.report(&[]).await;
    assert_eq!(status(&missing, "bubblewrap"), "missing");
    assert!(text(&missing, "bubblewrap", "fix").contains("bubblewrap"));

    // "Present" is the probe's contract: `bwrap --version` answers and bwrap runs a trivial
    // command (prlimit ... true) in fresh namespaces. The fake's trial run exits 0.
    fake_bwrap(&machine, "exit 0");
    let present = machine.report(&[]).await;
    let bubblewrap = check(&present, "bubblewrap");
    assert_eq!(bubblewrap["status"], "ok", "{bubblewrap:#}");
    assert_eq!(bubblewrap["facts"]["version"], "bubblewrap 0.8.0");
    assert_eq!(bubblewrap["facts"]["namespaces"], true);

    // Installed, but the kernel refuses the namespaces.
    fake_bwrap(
        &machine,
        "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1",
    );
    let refused = machine.report(&[]).await;
    let bubblewrap = check(&refused, "bubblewrap");
    assert_eq!(bubblewrap["status"], "problem", "{bubblewrap:#}");
    assert_eq!(bubblewrap["facts"]["namespaces"], false);
    let detail = text(&refused, "bubblewrap", "detail");
    assert!(detail.contains("user namespaces are refused"), "{detail}");
    assert!(
        detail.contains("setting up uid map: Permission denied"),
        "{detail}"
    );
    assert!(text(&refused, "bubblewrap", "fix").contains("unprivileged_userns_clone"));
}

#[tokio::test]
async fn xvfb_present_and_missing() {
    let (_server, machine) = usable_model().await;
    let xvfb = machine.bin().join("Xvfb");
    let named = format!("sandbox.xvfb={}", xvfb.display());
    let missing = machine.report(&["-c", &named]).await;
    assert_eq!(status(&missing, "xvfb"), "missing");
    assert!(text(&missing, "xvfb", "detail").contains("does not exist"));
    assert!(
        text(&missing, "xvfb", "fix")
            .to_lowercase()
            .contains("xvfb")
    );

    // A name is looked up where the sandbox looks (its own PATH), not on this PATH.
    let unknown = machine
        .report(&["-c", "sandbox.xvfb=openmanus-no-such-xvfb"])
        .await;
    assert_eq!(status(&unknown, "xvfb"), "missing");
    assert!(
        text(&unknown, "xvfb", "detail").contains("on the sandbox's PATH"),
        "{unknown:#}"
    );

    machine.script("Xvfb", "exit 0");
    let present = machine.report(&["-c", &named]).await;
    let found = check(&present, "xvfb");
    assert_eq!(found["status"], "ok", "{found:#}");
    assert_eq!(found["facts"]["path"], xvfb.to_str().unwrap());
}

/// A Docker engine on loopback that answers every request (`/_ping`, `/version`) with the
/// same version object; its `DOCKER_HOST`.
async fn fake_engine() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("tcp://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let body = r#"{"Version":"27.3.1","ApiVersion":"1.47"}"#;
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    address
}

#[tokio::test]
async fn docker_present_not_answering_and_missing() {
    let (_server, mut machine) = usable_model().await;
    let missing = machine.report(&[]).await;
    let docker = check(&missing, "docker");
    assert_eq!(docker["status"], "missing", "{docker:#}");
    assert_eq!(docker["facts"]["engine"], false);
    let fix = text(&missing, "docker", "fix").to_lowercase();
    assert!(
        fix.contains("docker") || fix.contains("moby-engine"),
        "{fix}"
    );

    // A client without an engine: the engine is what the backend needs.
    machine.script("docker", "echo 'Docker version 27.3.1, build ce12230'");
    let silent = machine.report(&[]).await;
    assert_eq!(status(&silent, "docker"), "problem");
    assert!(text(&silent, "docker", "fix").contains("systemctl start docker"));

    machine.set("DOCKER_HOST", &fake_engine().await);
    let present = machine.report(&[]).await;
    let docker = check(&present, "docker");
    assert_eq!(docker["status"], "ok", "{docker:#}");
    assert_eq!(docker["facts"]["engine"], true);
    assert_eq!(docker["facts"]["version"], "27.3.1");
    assert_eq!(
        docker["facts"]["client_version"],
        "Docker version 27.3.1, build ce12230"
    );
}

#[tokio::test]
async fn python3_and_pandas_present_and_missing() {
    let (_server, machine) = usable_model().await;
    let missing = machine.report(&[]).await;
    assert_eq!(status(&missing, "python3"), "missing");
    assert_eq!(status(&missing, "pandas"), "missing");
    assert!(text(&missing, "pandas", "detail").contains("needs python3"));

    let python = machine.script(
        "python3",
        "case \"$1\" in --version) echo 'Python 3.11.2';; \
         -c) echo 'ModuleNotFoundError: No module named '\\''pandas'\\''' >&2; exit 1;; esac",
    );
    let without_pandas = machine.report(&[]).await;
    let found = check(&without_pandas, "python3");
    assert_eq!(found["status"], "ok", "{found:#}");
    assert_eq!(found["facts"]["version"], "Python 3.11.2");
    assert_eq!(found["facts"]["path"], python.to_str().unwrap());
    assert_eq!(status(&without_pandas, "pandas"), "missing");
    assert!(text(&without_pandas, "pandas", "detail").contains("No module named 'pandas'"));
    // Not the system's python3: pandas comes from pip, for that interpreter.
    assert_eq!(
        text(&without_pandas, "pandas", "fix"),
        format!("{} -m pip install pandas", python.display())
    );

    machine.script(
        "python3",
        "case \"$1\" in --version) echo 'Python 3.11.2';; -c) printf '2.1.4';; esac",
    );
    let with_pandas = machine.report(&[]).await;
    let pandas = check(&with_pandas, "pandas");
    assert_eq!(pandas["status"], "ok", "{pandas:#}");
    assert_eq!(pandas["facts"]["version"], "2.1.4");
}

#[tokio::test]
async fn nats_server_present_and_missing() {
    let (_server, machine) = usable_model().await;
    let missing = machine.report(&[]).await;
    assert_eq!(status(&missing, "nats-server"), "missing");
    assert!(text(&missing, "nats-server", "fix").contains("nats-server"));

    machine.script("nats-server", "echo 'nats-server: v2.9.20'");
    let present = machine.report(&[]).await;
    let nats = check(&present, "nats-server");
    assert_eq!(nats["status"], "ok", "{nats:#}");
    assert_eq!(nats["facts"]["version"], "nats-server: v2.9.20");
}

// ---------------------------------------------------------------------------------------------
// The output

#[tokio::test]
async fn the_json_object_has_a_stable_shape() {
    let (_server, machine) = usable_model().await;
    let report = machine.report(&[]).await;
    assert_eq!(report["type"], "doctor");
    assert!(report["ok"].is_boolean());
    assert!(report["os_family"].is_string());
    assert_eq!(report["timeout_secs"], 15);
    let ids: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "model",
            "chromium",
            "bubblewrap",
            "xvfb",
            "docker",
            "python3",
            "pandas",
            "nats-server"
        ]
    );
    for check in report["checks"].as_array().unwrap() {
        let mut keys: Vec<&String> = check.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "capability",
                "detail",
                "facts",
                "fix",
                "id",
                "serves",
                "status"
            ],
            "{check:#}"
        );
        assert!(
            ["ok", "missing", "not_in_build", "problem"]
                .contains(&check["status"].as_str().unwrap()),
            "{check:#}"
        );
        // What is missing says how to add it.
        if check["status"] == "missing" {
            assert!(check["fix"].is_string(), "{check:#}");
        }
        assert!(check["facts"].is_object(), "{check:#}");
    }
}

#[tokio::test]
async fn the_table_is_aligned_with_a_fix_under_what_is_missing() {
    let (_server, machine) = usable_model().await;
    machine.script("nats-server", "echo 'nats-server: v2.9.20'");
    let output = machine.run(&[]).await;
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let names = [
        "model",
        "Chromium",
        "bubblewrap",
        "Xvfb",
        "Docker",
        "python3",
        "pandas",
        "nats-server",
    ];
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|line| {
            names
                .iter()
                .any(|name| line.starts_with(&format!("{name} ")))
        })
        .collect();
    assert_eq!(rows.len(), names.len(), "{stdout}");
    // Every status starts in one column, and so does every finding.
    let status_column = |row: &str| {
        let name_end = row.find(' ').unwrap();
        name_end + row[name_end..].find(|c: char| c != ' ').unwrap()
    };
    let column = status_column(rows[0]);
    assert!(
        rows.iter().all(|row| status_column(row) == column),
        "{stdout}"
    );
    let nats = rows
        .iter()
        .find(|row| row.starts_with("nats-server"))
        .unwrap();
    assert!(nats[column..].starts_with("ok "), "{stdout}");
    let chromium_at = stdout.find("\nChromium ").unwrap();
    let after: Vec<&str> = stdout[chromium_at + 1..].lines().take(3).collect();
    assert!(after[0][column..].starts_with("missing "), "{stdout}");
    assert!(
        after[1].trim_start().starts_with("for: the browser agent"),
        "{stdout}"
    );
    assert!(after[2].trim_start().starts_with("fix: "), "{stdout}");
    assert!(stdout.contains("The model is usable."), "{stdout}");
}

#[tokio::test]
async fn help_documents_the_exit_code() {
    let output = Command::new(BIN)
        .args(["doctor", "--help"])
        .output()
        .await
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("Exit codes: 0 the model is usable"), "{help}");
    let top = Command::new(BIN).arg("--help").output().await.unwrap();
    assert!(String::from_utf8_lossy(&top.stdout).contains("openmanus doctor"));
}
