//! `openmanus doctor`: what this machine has for each capability an agent may need, each
//! checked within a time limit and all at once, with the command that adds what is missing.
//!
//! The probes are the owning libraries': Chromium's lookup and version are agent-browser's,
//! the sandbox's probe, its X server's lookup and the Docker engine's version agent-sandbox's,
//! programs found on `PATH` and run within a limit agent-process's. This file runs them side by
//! side, reads the model's key and endpoint from the configuration as the run commands load it,
//! and renders the findings.

use std::path::Path;
use std::time::Duration;

use agent_config::Config;
use agent_llm::{ApiType, Model};
use anyhow::Result;
use serde_json::{Value, json};

use crate::cli::GlobalArgs;
use crate::config::{Inspected, LoadProblem};
use crate::output::{EXIT_FAILED, EXIT_OK, error_text, say};

/// How long each check may take unless `--timeout` says otherwise, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 15;

/// What a capability is and what it serves.
#[derive(Debug)]
struct Capability {
    /// Its id in `--json`.
    id: &'static str,
    /// Its name in the table.
    name: &'static str,
    /// What needs it.
    serves: &'static str,
}

const MODEL: Capability = Capability {
    id: "model",
    name: "model",
    serves: "every agent and the flow (the [llm] model, as Manus uses it)",
};
const CHROMIUM: Capability = Capability {
    id: "chromium",
    name: "Chromium",
    serves: "the browser agent, Manus's browser_use, SandboxManus's sandbox_browser",
};
const BUBBLEWRAP: Capability = Capability {
    id: "bubblewrap",
    name: "bubblewrap",
    serves: "the sandbox: [sandbox] use_sandbox = true, SandboxManus (backend \"local\")",
};
const XVFB: Capability = Capability {
    id: "xvfb",
    name: "Xvfb",
    serves: "computer_use: SandboxManus's virtual display (in the bubblewrap sandbox)",
};
const DOCKER: Capability = Capability {
    id: "docker",
    name: "Docker",
    serves: "the sandbox with [sandbox] backend = \"docker\"",
};
const PYTHON: Capability = Capability {
    id: "python3",
    name: "python3",
    serves: "python_execute (Manus, DataAnalysis)",
};
const PANDAS: Capability = Capability {
    id: "pandas",
    name: "pandas",
    serves: "DataAnalysis (its Python code reads data with pandas)",
};
const NATS: Capability = Capability {
    id: "nats-server",
    name: "nats-server",
    serves: "openmanus worker and submit, [server] dispatch = \"nats\"",
};

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// It is here and works.
    Ok,
    /// It is not installed.
    Missing,
    /// This binary was built without the cargo feature that uses it.
    NotInBuild,
    /// It is here but does not work (or cannot be told).
    Problem,
}

impl Status {
    /// The machine value (`--json`).
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Missing => "missing",
            Self::NotInBuild => "not_in_build",
            Self::Problem => "problem",
        }
    }

    /// The words in the table.
    fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Missing => "missing",
            Self::NotInBuild => "not in this build",
            Self::Problem => "problem",
        }
    }
}

/// One line of the report.
#[derive(Debug)]
struct Check {
    capability: &'static Capability,
    status: Status,
    /// What was found: a path and a version, or what is wrong.
    detail: String,
    /// The command (or, on an unknown system, the words) that adds or repairs it.
    fix: Option<String>,
    /// The findings as values, for `--json`: the same keys for a capability whatever it found
    /// (none when it was not checked: not in this build, or cut off).
    facts: Value,
}

impl Check {
    fn new(capability: &'static Capability, status: Status, detail: String, facts: Value) -> Self {
        Self {
            capability,
            status,
            detail,
            fix: None,
            facts,
        }
    }

    fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// A capability whose cargo feature this binary lacks.
    #[cfg_attr(
        all(feature = "browser", feature = "charts", feature = "docker"),
        allow(dead_code)
    )]
    fn not_in_build(capability: &'static Capability, feature: &str) -> Self {
        Self::new(
            capability,
            Status::NotInBuild,
            format!("this openmanus was built without the `{feature}` cargo feature"),
            json!({}),
        )
        .with_fix(format!(
            "build openmanus with its default features (cargo build --release -p openmanus-cli), or add `--features {feature}`"
        ))
    }

    fn to_json(&self) -> Value {
        json!({
            "id": self.capability.id,
            "capability": self.capability.name,
            "serves": self.capability.serves,
            "status": self.status.as_str(),
            "detail": self.detail,
            "fix": self.fix,
            "facts": self.facts,
        })
    }
}

/// The system the install commands are for (`/etc/os-release`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Os {
    /// `PRETTY_NAME`, when there is one.
    name: Option<String>,
    family: Family,
    /// Commands run as root need no `sudo`.
    root: bool,
}

/// Which package manager and package names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Debian and its derivatives: apt-get.
    Debian,
    /// Ubuntu: apt-get, Chromium as `chromium-browser`.
    Ubuntu,
    /// Fedora, RHEL and their derivatives: dnf.
    Fedora,
    /// Anything else: the words, not a command.
    Other,
}

impl Family {
    fn as_str(self) -> &'static str {
        match self {
            Self::Debian => "debian",
            Self::Ubuntu => "ubuntu",
            Self::Fedora => "fedora",
            Self::Other => "other",
        }
    }
}

/// What can be installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// A build without `docker` or `charts` installs neither Docker nor pandas.
#[cfg_attr(not(all(feature = "charts", feature = "docker")), allow(dead_code))]
enum Package {
    Chromium,
    Bubblewrap,
    UtilLinux,
    Xvfb,
    Docker,
    Python3,
    Pandas,
    NatsServer,
}

impl Os {
    /// This machine's.
    fn detect() -> Self {
        let text = std::fs::read_to_string("/etc/os-release")
            .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
            .unwrap_or_default();
        Self::parse(&text, running_as_root())
    }

    /// From the text of an `os-release` file.
    fn parse(text: &str, root: bool) -> Self {
        let field = |key: &str| {
            text.lines().find_map(|line| {
                let value = line.trim().strip_prefix(key)?.strip_prefix('=')?;
                Some(value.trim().trim_matches('"').trim_matches('\'').to_owned())
            })
        };
        let id = field("ID").unwrap_or_default().to_lowercase();
        let like = field("ID_LIKE").unwrap_or_default().to_lowercase();
        let is = |name: &str| id == name || like.split_whitespace().any(|l| l == name);
        let family = if id == "ubuntu" {
            Family::Ubuntu
        } else if is("debian") || is("ubuntu") {
            Family::Debian
        } else if is("fedora") || is("rhel") {
            Family::Fedora
        } else {
            Family::Other
        };
        Self {
            name: field("PRETTY_NAME").filter(|name| !name.is_empty()),
            family,
            root,
        }
    }

    /// The command that installs `package` here (the words, on a system not known).
    fn install(&self, package: Package) -> String {
        let (debian, fedora, other) = match package {
            Package::Chromium => (
                "chromium",
                "chromium",
                "install Chromium (`chromium`, `chromium-browser` or `google-chrome` on PATH), or name it in [browser] chrome_instance_path",
            ),
            Package::Bubblewrap => (
                "bubblewrap",
                "bubblewrap",
                "install bubblewrap (`bwrap` on PATH) from the system's packages",
            ),
            Package::UtilLinux => (
                "util-linux",
                "util-linux",
                "install util-linux (`prlimit` on PATH)",
            ),
            Package::Xvfb => (
                "xvfb",
                "xorg-x11-server-Xvfb",
                "install Xvfb (the X virtual framebuffer) from the system's packages",
            ),
            Package::Docker => (
                "docker.io",
                "moby-engine",
                "install Docker Engine (https://docs.docker.com/engine/install/)",
            ),
            Package::Python3 => ("python3", "python3", "install Python 3 (`python3` on PATH)"),
            Package::Pandas => (
                "python3-pandas",
                "python3-pandas",
                "python3 -m pip install pandas",
            ),
            Package::NatsServer => (
                "nats-server",
                "nats-server",
                "install nats-server (https://github.com/nats-io/nats-server/releases)",
            ),
        };
        let sudo = if self.root { "" } else { "sudo " };
        match self.family {
            Family::Ubuntu if package == Package::Chromium => {
                format!("{sudo}apt-get install -y chromium-browser")
            }
            Family::Debian | Family::Ubuntu => format!("{sudo}apt-get install -y {debian}"),
            Family::Fedora => format!("{sudo}dnf install -y {fedora}"),
            Family::Other => other.to_owned(),
        }
    }
}

/// Whether this process runs as root (effective user id 0).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                let ids = line.strip_prefix("Uid:")?;
                ids.split_whitespace().nth(1).map(|euid| euid == "0")
            })
        })
        .unwrap_or(false)
}

/// `openmanus doctor`: every check at once, each within `limit`; the table (or, with `--json`,
/// one object). The exit code is 0 when the model is usable, 1 when it is not.
///
/// # Errors
///
/// When the current directory cannot be read.
pub async fn doctor(global: &GlobalArgs, limit: Duration) -> Result<u8> {
    let inspected = crate::config::inspect(global)?;
    let os = Os::detect();
    let config = &inspected.config;
    // A check that overruns its own limits (several programs in a row, a stuck connection) is
    // cut off here: nothing keeps doctor waiting.
    let bound = limit.saturating_mul(4);
    let (model, chromium, bubblewrap, xvfb, docker, python, pandas, nats) = tokio::join!(
        within(&MODEL, bound, model(&inspected, limit)),
        within(&CHROMIUM, bound, chromium(config, &os, limit)),
        within(&BUBBLEWRAP, bound, bubblewrap(config, &os, limit)),
        within(&XVFB, bound, xvfb(config, &os)),
        within(&DOCKER, bound, docker(&os, limit)),
        within(&PYTHON, bound, python(&os, limit)),
        within(&PANDAS, bound, pandas(&os, limit)),
        within(&NATS, bound, nats(&os, limit)),
    );
    let checks = [
        model, chromium, bubblewrap, xvfb, docker, python, pandas, nats,
    ];
    let usable = checks[0].status == Status::Ok;
    if global.json {
        say(&json!({
            "type": "doctor",
            "ok": usable,
            "os": os.name,
            "os_family": os.family.as_str(),
            "configuration": inspected.file,
            "timeout_secs": limit.as_secs(),
            "checks": checks.iter().map(Check::to_json).collect::<Vec<_>>(),
        })
        .to_string());
    } else {
        let configuration = match (&inspected.problem, &inspected.file) {
            (None | Some(LoadProblem::Unset(_)), _) => config.source().to_string(),
            (_, Some(file)) => format!("{} (it does not load)", file.display()),
            (_, None) => "none found".to_owned(),
        };
        render(&os, &configuration, &checks, usable);
    }
    Ok(if usable { EXIT_OK } else { EXIT_FAILED })
}

/// `check`, or a problem when it takes longer than `bound`.
async fn within(
    capability: &'static Capability,
    bound: Duration,
    check: impl Future<Output = Check>,
) -> Check {
    tokio::time::timeout(bound, check)
        .await
        .unwrap_or_else(|_| {
            Check::new(
                capability,
                Status::Problem,
                format!("the check did not finish within {} s", bound.as_secs()),
                json!({}),
            )
        })
}

/// The table: a line per capability with its status and what was found, then what it serves
/// and the fix, aligned under the finding.
fn render(os: &Os, configuration: &str, checks: &[Check], usable: bool) {
    let system = os.name.as_deref().unwrap_or("an unknown system");
    say(&format!(
        "openmanus doctor: what this machine can run ({system})"
    ));
    say(&format!("configuration: {configuration}"));
    say("");
    let name_width = checks
        .iter()
        .map(|c| c.capability.name.len())
        .max()
        .unwrap_or(0)
        + 2;
    let status_width = checks
        .iter()
        .map(|c| c.status.label().len())
        .max()
        .unwrap_or(0)
        + 2;
    let indent = " ".repeat(name_width + status_width);
    for check in checks {
        say(&format!(
            "{:<name_width$}{:<status_width$}{}",
            check.capability.name,
            check.status.label(),
            check.detail
        ));
        say(&format!("{indent}for: {}", check.capability.serves));
        if let Some(fix) = &check.fix {
            say(&format!("{indent}fix: {fix}"));
        }
    }
    say("");
    let optional = &checks[1..];
    let here = optional.iter().filter(|c| c.status == Status::Ok).count();
    if usable {
        say(&format!(
            "The model is usable. {here} of {} optional capabilities are here; a missing one only \
             stops what it is for.",
            optional.len()
        ));
    } else {
        say("The model is not usable: no agent can run until it is (exit code 1).");
    }
}

/// The first line a program printed: on standard output, else on standard error.
fn first_line(bytes: &[u8]) -> Option<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(str::to_owned)
}

/// `program arg` within `limit`: the first line it printed, or why there is none.
async fn version(program: &Path, arg: &str, limit: Duration) -> Result<String, String> {
    let mut command = tokio::process::Command::new(program);
    command.arg(arg);
    let shown = format!("{} {arg}", program.display());
    match agent_process::output_within(&shown, &mut command, limit).await {
        Ok(Some(output)) if output.status.success() => Ok(first_line(&output.stdout)
            .or_else(|| first_line(&output.stderr))
            .unwrap_or_default()),
        Ok(Some(output)) => Err(format!(
            "`{shown}` failed ({}){}",
            output.status,
            first_line(&output.stderr)
                .or_else(|| first_line(&output.stdout))
                .map(|line| format!(": {line}"))
                .unwrap_or_default()
        )),
        Ok(None) => Err(format!(
            "`{shown}` did not answer within {} s",
            limit.as_secs()
        )),
        Err(error) => Err(format!(
            "`{}` cannot be started: {error}",
            program.display()
        )),
    }
}

/// A program looked up on `PATH` and asked its version: ok with both, missing when it is not
/// on `PATH`, a problem when it does not answer.
async fn program(
    capability: &'static Capability,
    name: &str,
    os: &Os,
    package: Package,
    limit: Duration,
) -> Check {
    let Some(path) = agent_process::find_on_path(name) else {
        return Check::new(
            capability,
            Status::Missing,
            format!("no `{name}` on PATH"),
            json!({"path": null, "version": null}),
        )
        .with_fix(os.install(package));
    };
    match version(&path, "--version", limit).await {
        Ok(found) => Check::new(
            capability,
            Status::Ok,
            format!("{found} ({})", path.display()),
            json!({"path": path, "version": found}),
        ),
        Err(why) => Check::new(
            capability,
            Status::Problem,
            why,
            json!({"path": path, "version": null}),
        ),
    }
}

#[cfg(feature = "browser")]
async fn chromium(config: &Config, os: &Os, limit: Duration) -> Check {
    use agent_browser::{BrowserConfig, BrowserError, chromium_version};
    let browser = BrowserConfig::from_settings(&config.browser);
    if let Some(url) = &browser.connect_url {
        return Check::new(
            &CHROMIUM,
            Status::Ok,
            format!(
                "attaches to the browser at {url} ([browser] cdp_url or wss_url): none is \
                 launched here (that browser is not checked)"
            ),
            json!({"path": null, "version": null, "connect_url": url}),
        );
    }
    let path = match browser.resolve_executable() {
        Ok(path) => path,
        Err(error) => {
            let (detail, fix) = match (&error, &browser.executable) {
                (BrowserError::ChromiumNotFound { .. }, Some(configured)) => (
                    format!(
                        "[browser] chrome_instance_path {} does not exist",
                        configured.display()
                    ),
                    format!(
                        "correct [browser] chrome_instance_path, or remove it and {}",
                        os.install(Package::Chromium)
                    ),
                ),
                (BrowserError::ChromiumNotFound { looked_for }, None) => (
                    format!("not found (looked for {looked_for})"),
                    os.install(Package::Chromium),
                ),
                (other, _) => (other.to_string(), os.install(Package::Chromium)),
            };
            return Check::new(
                &CHROMIUM,
                Status::Missing,
                detail,
                json!({"path": null, "version": null, "connect_url": null}),
            )
            .with_fix(fix);
        }
    };
    match chromium_version(&path, limit).await {
        Ok(found) => Check::new(
            &CHROMIUM,
            Status::Ok,
            format!("{found} ({})", path.display()),
            json!({"path": path, "version": found, "connect_url": null}),
        ),
        Err(BrowserError::Timeout(_)) => Check::new(
            &CHROMIUM,
            Status::Problem,
            format!(
                "`{} --version` did not answer within {} s",
                path.display(),
                limit.as_secs()
            ),
            json!({"path": path, "version": null, "connect_url": null}),
        ),
        Err(error) => Check::new(
            &CHROMIUM,
            Status::Problem,
            error.to_string(),
            json!({"path": path, "version": null, "connect_url": null}),
        ),
    }
}

#[cfg(not(feature = "browser"))]
async fn chromium(_config: &Config, _os: &Os, _limit: Duration) -> Check {
    Check::not_in_build(&CHROMIUM, "browser")
}

async fn bubblewrap(config: &Config, os: &Os, limit: Duration) -> Check {
    use agent_sandbox::{LocalSandbox, NAMESPACES_FIX, ProbeFailure};
    let sandbox = &config.sandbox;
    let in_use = sandbox.use_sandbox && sandbox.backend == agent_config::SandboxBackend::Local;
    let path = agent_process::find_on_path("bwrap");
    let facts = |version: Option<&str>, namespaces: bool| json!({"path": path, "version": version, "namespaces": namespaces, "in_use": in_use});
    match LocalSandbox::check(limit).await {
        Ok(probe) => {
            let used = if in_use {
                " ([sandbox] use_sandbox = true: in use)"
            } else {
                ""
            };
            Check::new(
                &BUBBLEWRAP,
                Status::Ok,
                format!(
                    "{} ({}); it creates its namespaces here{used}",
                    probe.bwrap_version,
                    path.as_deref().unwrap_or(Path::new("bwrap")).display()
                ),
                facts(Some(&probe.bwrap_version), true),
            )
        }
        Err(ProbeFailure::BwrapMissing { error }) => Check::new(
            &BUBBLEWRAP,
            Status::Missing,
            format!("`bwrap` cannot be started ({error})"),
            facts(None, false),
        )
        .with_fix(os.install(Package::Bubblewrap)),
        Err(ProbeFailure::PrlimitMissing { error }) => Check::new(
            &BUBBLEWRAP,
            Status::Missing,
            format!("`prlimit`, which sets the sandbox's limits, cannot be started ({error})"),
            facts(None, false),
        )
        .with_fix(os.install(Package::UtilLinux)),
        Err(ProbeFailure::NamespacesRefused {
            bwrap_version,
            stderr,
        }) => Check::new(
            &BUBBLEWRAP,
            Status::Problem,
            format!(
                "{bwrap_version} is installed, but user namespaces are refused: it cannot create \
                 its namespaces here ({stderr})"
            ),
            facts(Some(&bwrap_version), false),
        )
        .with_fix(NAMESPACES_FIX),
        Err(other) => Check::new(
            &BUBBLEWRAP,
            Status::Problem,
            other.to_string(),
            facts(None, false),
        ),
    }
}

async fn xvfb(config: &Config, os: &Os) -> Check {
    let program = &config.sandbox.xvfb;
    let Some(path) = agent_sandbox::x_server_path(program) else {
        let (detail, fix) = if program.contains('/') {
            (
                format!("{program} ([sandbox] xvfb) does not exist"),
                format!(
                    "correct [sandbox] xvfb, or remove it and {}",
                    os.install(Package::Xvfb)
                ),
            )
        } else {
            (
                format!(
                    "no `{program}` on the sandbox's PATH ({})",
                    agent_sandbox::SANDBOX_PATH
                ),
                os.install(Package::Xvfb),
            )
        };
        return Check::new(
            &XVFB,
            Status::Missing,
            detail,
            json!({"path": null, "program": program}),
        )
        .with_fix(fix);
    };
    // Not run: Xvfb has no option that prints its version and exits (`-version` is refused).
    // The sandbox starts it by this path; it must be executable.
    let executable = std::fs::metadata(&path)
        .map(|meta| std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0)
        .unwrap_or(false);
    let used = if config.sandbox.use_sandbox
        && config.sandbox.backend == agent_config::SandboxBackend::Docker
    {
        " (the Docker backend uses the image's X server, not this one)"
    } else {
        ""
    };
    if executable {
        Check::new(
            &XVFB,
            Status::Ok,
            format!("{}{used}", path.display()),
            json!({"path": path, "program": program}),
        )
    } else {
        Check::new(
            &XVFB,
            Status::Problem,
            format!("{} is not executable", path.display()),
            json!({"path": path, "program": program}),
        )
        .with_fix(format!("chmod +x {}", path.display()))
    }
}

#[cfg(feature = "docker")]
async fn docker(os: &Os, limit: Duration) -> Check {
    let client = match agent_process::find_on_path("docker") {
        Some(path) => Some((version(&path, "--version", limit).await, path)),
        None => None,
    };
    let client_text = match &client {
        Some((Ok(found), path)) => format!("client: {found} ({})", path.display()),
        Some((Err(why), _)) => format!("client: {why}"),
        None => "no `docker` client on PATH (not needed: openmanus talks to the engine)".to_owned(),
    };
    let client_version = client
        .as_ref()
        .and_then(|(found, _)| found.as_ref().ok().cloned());
    let client_path = client.as_ref().map(|(_, path)| path.clone());
    match agent_sandbox::docker_engine(None, limit).await {
        Ok(engine) => {
            let version = engine.version.as_deref().unwrap_or("of an unknown version");
            let api = engine
                .api_version
                .as_deref()
                .map(|api| format!(", API {api}"))
                .unwrap_or_default();
            Check::new(
                &DOCKER,
                Status::Ok,
                format!(
                    "the engine at {} answers (Docker {version}{api}); {client_text}",
                    engine.address
                ),
                json!({"engine": true, "address": engine.address, "version": engine.version,
                       "client_path": client_path, "client_version": client_version}),
            )
        }
        Err(error) => {
            let why = match &error {
                agent_sandbox::SandboxError::Unavailable(text) => text
                    .split_once("; start the Docker daemon")
                    .map_or(text.as_str(), |(why, _)| why)
                    .to_owned(),
                other => other.to_string(),
            };
            let facts = json!({"engine": false, "address": null, "version": null,
                               "client_path": client_path, "client_version": client_version});
            if client.is_none() {
                Check::new(
                    &DOCKER,
                    Status::Missing,
                    format!("{why}; {client_text}"),
                    facts,
                )
                .with_fix(os.install(Package::Docker))
            } else {
                let sudo = if os.root { "" } else { "sudo " };
                let fix = if why.contains("ermission denied") {
                    format!(
                        "let this user reach the engine: {sudo}usermod -aG docker $USER (then log in again)"
                    )
                } else {
                    format!(
                        "start the engine: {sudo}systemctl start docker (or set DOCKER_HOST to where one runs)"
                    )
                };
                Check::new(
                    &DOCKER,
                    Status::Problem,
                    format!("{why}; {client_text}"),
                    facts,
                )
                .with_fix(fix)
            }
        }
    }
}

#[cfg(not(feature = "docker"))]
async fn docker(_os: &Os, _limit: Duration) -> Check {
    Check::not_in_build(&DOCKER, "docker")
}

async fn python(os: &Os, limit: Duration) -> Check {
    program(&PYTHON, "python3", os, Package::Python3, limit).await
}

/// What imports pandas and prints its version.
#[cfg(feature = "charts")]
const IMPORT_PANDAS: &str = "import pandas, sys; sys.stdout.write(pandas.__version__)";

#[cfg(feature = "charts")]
async fn pandas(os: &Os, limit: Duration) -> Check {
    let Some(python) = agent_process::find_on_path("python3") else {
        return Check::new(
            &PANDAS,
            Status::Missing,
            "needs python3, which is not on PATH".to_owned(),
            json!({"version": null}),
        )
        .with_fix(format!(
            "{}, then {}",
            os.install(Package::Python3),
            os.install(Package::Pandas)
        ));
    };
    // The system's packages serve the system's python3; any other (a virtual environment's)
    // gets pandas from pip.
    let fix = if python.starts_with("/usr/bin") || os.family == Family::Other {
        os.install(Package::Pandas)
    } else {
        format!("{} -m pip install pandas", python.display())
    };
    let mut command = tokio::process::Command::new(&python);
    command.args(["-c", IMPORT_PANDAS]);
    match agent_process::output_within("python3 -c 'import pandas'", &mut command, limit).await {
        Ok(Some(output)) if output.status.success() => {
            let found = first_line(&output.stdout).unwrap_or_default();
            Check::new(
                &PANDAS,
                Status::Ok,
                format!("pandas {found} (imported by {})", python.display()),
                json!({"version": found}),
            )
        }
        Ok(Some(output)) => {
            let said = String::from_utf8_lossy(&output.stderr);
            let last = said
                .lines()
                .rev()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or("it failed");
            Check::new(
                &PANDAS,
                Status::Missing,
                format!("{} cannot import pandas ({last})", python.display()),
                json!({"version": null}),
            )
            .with_fix(fix)
        }
        Ok(None) => Check::new(
            &PANDAS,
            Status::Problem,
            format!(
                "importing pandas with {} did not finish within {} s",
                python.display(),
                limit.as_secs()
            ),
            json!({"version": null}),
        ),
        Err(error) => Check::new(
            &PANDAS,
            Status::Problem,
            format!("`{}` cannot be started: {error}", python.display()),
            json!({"version": null}),
        ),
    }
}

#[cfg(not(feature = "charts"))]
async fn pandas(_os: &Os, _limit: Duration) -> Check {
    Check::not_in_build(&PANDAS, "charts")
}

async fn nats(os: &Os, limit: Duration) -> Check {
    program(&NATS, "nats-server", os, Package::NatsServer, limit).await
}

/// Where the model's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    /// Set: from this variable, or (`None`) written in the configuration.
    Set(Option<String>),
    /// None is needed (Ollama), or it is not ours to check (Bedrock's credentials).
    NotNeeded(&'static str),
    /// The configuration reads it from this variable, which is not set.
    Unset(String),
    /// Empty: the variable (if any) is set to nothing, or the configuration has none.
    Empty(Option<String>),
}

impl Key {
    fn usable(&self) -> bool {
        matches!(self, Self::Set(_) | Self::NotNeeded(_))
    }

    fn variable(&self) -> Option<&str> {
        match self {
            Self::Set(var) | Self::Empty(var) => var.as_deref(),
            Self::Unset(var) => Some(var),
            Self::NotNeeded(_) => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Set(Some(var)) => format!("key: {var} is set"),
            Self::Set(None) => "key: written in the configuration".to_owned(),
            Self::NotNeeded(why) => format!("key: {why}"),
            Self::Unset(var) => format!("key: {var} is not set"),
            Self::Empty(Some(var)) => format!("key: {var} is empty"),
            Self::Empty(None) => "key: none (no api_key in [llm])".to_owned(),
        }
    }
}

/// The variable the model's `api_key` is read from (`api_key = "${NAME}"`), for the profile
/// Manus uses: its own `[llm.manus]` (else `[llm.default]`) when that sets the key, else
/// `[llm]`'s.
fn key_variable(config: &Config) -> Option<String> {
    let find = |key: &str| {
        config
            .env_references()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, var)| var.to_owned())
    };
    let manus = agents::MANUS.to_lowercase();
    let profile = [manus.as_str(), "default"]
        .into_iter()
        .find(|name| config.llm_profile(name).is_some());
    profile
        .and_then(|name| find(&format!("llm.{name}.api_key")))
        .or_else(|| find("llm.api_key"))
}

async fn model(inspected: &Inspected, limit: Duration) -> Check {
    let config = &inspected.config;
    let settings = config.llm_for(agents::MANUS);
    let file = inspected.file.as_ref().map_or_else(
        || "the configuration".to_owned(),
        |f| f.display().to_string(),
    );
    let mut facts = json!({
        "model": settings.model, "api_type": settings.api_type, "base_url": settings.base_url,
        "key_env": null, "key_set": false, "reachable": null, "http_status": null,
    });
    let unset = match &inspected.problem {
        Some(LoadProblem::NoFile(searched)) => {
            return Check::new(
                &MODEL,
                Status::Problem,
                format!("no configuration file (looked for {searched})"),
                facts,
            )
            .with_fix("openmanus config init");
        }
        Some(LoadProblem::Invalid(error)) => {
            return Check::new(
                &MODEL,
                Status::Problem,
                format!("the configuration does not load: {error}"),
                facts,
            )
            .with_fix("correct the configuration (`openmanus config check` shows the error)");
        }
        Some(LoadProblem::Unset(vars)) => vars.as_slice(),
        None => &[],
    };
    let var = key_variable(config);
    let key = if settings.api_type == ApiType::Aws {
        Key::NotNeeded("Amazon Bedrock's credentials come from the AWS SDK's chain (not checked)")
    } else if let Some(var) = var.clone().filter(|v| unset.contains(v)) {
        Key::Unset(var)
    } else if !settings.api_key.is_empty() {
        Key::Set(var)
    } else if settings.api_type == ApiType::Ollama {
        Key::NotNeeded("none needed (Ollama)")
    } else {
        Key::Empty(var)
    };
    facts["key_env"] = json!(key.variable());
    facts["key_set"] = json!(key.usable());
    let mut fixes = Vec::new();
    match &key {
        Key::Unset(var) | Key::Empty(Some(var)) => fixes.push(format!("export {var}=...")),
        Key::Empty(None) => fixes.push(format!(
            "set api_key in [llm] of {file} (e.g. api_key = \"${{OPENAI_API_KEY}}\", then export that variable)"
        )),
        Key::Set(_) | Key::NotNeeded(_) => {}
    }
    let others: Vec<&String> = unset
        .iter()
        .filter(|v| Some(v.as_str()) != key.variable())
        .collect();
    for other in &others {
        fixes.push(format!("export {other}=..."));
    }
    let mut head = format!(
        "{} through {}",
        settings.model,
        crate::config::api_name(settings.api_type)
    );
    let mut reachable = false;
    if let Err(error) = Model::new(settings.clone()) {
        head.push_str(&format!(": the settings are not usable: {error}"));
        fixes.push(format!("correct [llm] in {file}"));
    } else if settings.api_type == ApiType::Aws && settings.base_url.trim().is_empty() {
        head.push_str(" at the regional endpoint (not checked)");
        reachable = true;
    } else {
        match reach(&settings.base_url, limit).await {
            Ok(status) => {
                head.push_str(&format!(
                    " at {}: answers (HTTP {status})",
                    settings.base_url
                ));
                facts["http_status"] = json!(status);
                reachable = true;
            }
            Err(why) => {
                head.push_str(&format!(" at {}: {why}", settings.base_url));
                fixes.push(format!(
                    "check base_url in [llm] of {file}, and that its server runs and can be reached from here"
                ));
            }
        }
        facts["reachable"] = json!(reachable);
    }
    let mut parts = vec![head];
    parts.push(key.describe());
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(|v| v.as_str()).collect();
        parts.push(format!(
            "the configuration also reads {}, not set: runs stop there",
            names.join(", ")
        ));
    }
    let usable = key.usable() && reachable && others.is_empty() && fixes.is_empty();
    let check = Check::new(
        &MODEL,
        if usable { Status::Ok } else { Status::Problem },
        parts.join("; "),
        facts,
    );
    if fixes.is_empty() {
        check
    } else {
        check.with_fix(fixes.join("; "))
    }
}

/// Whether an HTTP server answers at `url` within `limit`: the status of its answer (any
/// status: the endpoint is there), or why none came.
async fn reach(url: &str, limit: Duration) -> Result<u16, String> {
    let client = agent_llm::http::client_builder()
        .connect_timeout(limit)
        .timeout(limit)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| format!("no HTTP client: {}", error_text(&error.into())))?;
    match client.get(url).send().await {
        Ok(response) => Ok(response.status().as_u16()),
        Err(error) if error.is_timeout() => Err(format!("no answer within {} s", limit.as_secs())),
        Err(error) if error.is_connect() => Err(format!(
            "cannot connect ({})",
            innermost(&anyhow::Error::new(error))
        )),
        Err(error) => Err(error_text(&anyhow::Error::new(error))),
    }
}

/// The deepest cause of an error (`Connection refused (os error 111)`), which says most.
fn innermost(error: &anyhow::Error) -> String {
    error
        .chain()
        .last()
        .map_or_else(|| error.to_string(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_comes_from_id_and_id_like() {
        let debian = Os::parse(
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\n",
            false,
        );
        assert_eq!(debian.family, Family::Debian);
        assert_eq!(
            debian.name.as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            Os::parse("ID=ubuntu\nID_LIKE=debian\n", false).family,
            Family::Ubuntu
        );
        assert_eq!(
            Os::parse("ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n", false).family,
            Family::Debian
        );
        assert_eq!(Os::parse("ID=fedora\n", false).family, Family::Fedora);
        assert_eq!(
            Os::parse("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n", false).family,
            Family::Fedora
        );
        assert_eq!(Os::parse("ID=arch\n", false).family, Family::Other);
        assert_eq!(Os::parse("", false).family, Family::Other);
        assert_eq!(Os::parse("", false).name, None);
    }

    #[test]
    fn install_commands_follow_the_system_and_the_user() {
        let debian = Os::parse("ID=debian\n", false);
        assert_eq!(
            debian.install(Package::Chromium),
            "sudo apt-get install -y chromium"
        );
        assert_eq!(
            debian.install(Package::Pandas),
            "sudo apt-get install -y python3-pandas"
        );
        assert_eq!(
            debian.install(Package::Docker),
            "sudo apt-get install -y docker.io"
        );
        let root = Os::parse("ID=debian\n", true);
        assert_eq!(root.install(Package::Xvfb), "apt-get install -y xvfb");
        let ubuntu = Os::parse("ID=ubuntu\n", false);
        assert_eq!(
            ubuntu.install(Package::Chromium),
            "sudo apt-get install -y chromium-browser"
        );
        assert_eq!(
            ubuntu.install(Package::NatsServer),
            "sudo apt-get install -y nats-server"
        );
        let fedora = Os::parse("ID=fedora\n", false);
        assert_eq!(
            fedora.install(Package::Xvfb),
            "sudo dnf install -y xorg-x11-server-Xvfb"
        );
        assert_eq!(
            fedora.install(Package::Bubblewrap),
            "sudo dnf install -y bubblewrap"
        );
        let other = Os::parse("ID=arch\n", false);
        assert_eq!(
            other.install(Package::Pandas),
            "python3 -m pip install pandas"
        );
        assert!(
            other
                .install(Package::Chromium)
                .starts_with("install Chromium")
        );
    }

    #[test]
    fn a_key_is_usable_when_set_or_not_needed() {
        assert!(Key::Set(Some("K".into())).usable());
        assert!(Key::NotNeeded("none needed (Ollama)").usable());
        assert!(!Key::Unset("K".into()).usable());
        assert!(!Key::Empty(None).usable());
        assert_eq!(
            Key::Unset("OPENAI_API_KEY".into()).describe(),
            "key: OPENAI_API_KEY is not set"
        );
        assert_eq!(Key::Set(Some("K".into())).variable(), Some("K"));
    }

    #[test]
    fn the_first_line_printed_is_the_version() {
        assert_eq!(
            first_line(b"\n  Python 3.11.2\nmore\n").as_deref(),
            Some("Python 3.11.2")
        );
        assert_eq!(first_line(b"\n \n"), None);
    }
}
