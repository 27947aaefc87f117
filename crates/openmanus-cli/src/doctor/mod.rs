//! `openmanus doctor`: what this machine has for each capability an agent may need, each
//! checked within a time limit and all at once, with the command that adds what is missing.
//!
//! The probes are the owning libraries': Chromium's lookup and version are agent-browser's,
//! the sandbox's probe, its X server's lookup and the Docker engine's version agent-sandbox's,
//! programs found on `PATH` and run within a limit agent-process's. This file runs them side by
//! side, reads the model's key and endpoint from the configuration as the run commands load it,
//! and renders the findings.

mod model;
mod os;
mod probes;

use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};

use crate::cli::GlobalArgs;
use crate::config::LoadProblem;
use crate::output::{EXIT_FAILED, EXIT_OK, say};
use model::model;
use os::Os;
use probes::{bubblewrap, chromium, docker, nats, pandas, python, xvfb};

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
