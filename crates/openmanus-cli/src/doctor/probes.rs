//! The checks of the programs a capability needs, each through its owning library's probe.

use std::path::Path;
use std::time::Duration;

use agent_config::Config;
use serde_json::json;

use super::os::{Os, Package};
use super::{BUBBLEWRAP, CHROMIUM, Capability, Check, DOCKER, NATS, PANDAS, PYTHON, Status, XVFB};

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
pub(super) async fn chromium(config: &Config, os: &Os, limit: Duration) -> Check {
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
pub(super) async fn chromium(_config: &Config, _os: &Os, _limit: Duration) -> Check {
    Check::not_in_build(&CHROMIUM, "browser")
}

pub(super) async fn bubblewrap(config: &Config, os: &Os, limit: Duration) -> Check {
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

pub(super) async fn xvfb(config: &Config, os: &Os) -> Check {
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
pub(super) async fn docker(os: &Os, limit: Duration) -> Check {
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
pub(super) async fn docker(_os: &Os, _limit: Duration) -> Check {
    Check::not_in_build(&DOCKER, "docker")
}

pub(super) async fn python(os: &Os, limit: Duration) -> Check {
    program(&PYTHON, "python3", os, Package::Python3, limit).await
}

/// What imports pandas and prints its version.
#[cfg(feature = "charts")]
const IMPORT_PANDAS: &str = "import pandas, sys; sys.stdout.write(pandas.__version__)";

#[cfg(feature = "charts")]
pub(super) async fn pandas(os: &Os, limit: Duration) -> Check {
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
    let fix = if python.starts_with("/usr/bin") || os.family == super::os::Family::Other {
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
pub(super) async fn pandas(_os: &Os, _limit: Duration) -> Check {
    Check::not_in_build(&PANDAS, "charts")
}

pub(super) async fn nats(os: &Os, limit: Duration) -> Check {
    program(&NATS, "nats-server", os, Package::NatsServer, limit).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_printed_is_the_version() {
        assert_eq!(
            first_line(b"\n  Python 3.11.2\nmore\n").as_deref(),
            Some("Python 3.11.2")
        );
        assert_eq!(first_line(b"\n \n"), None);
    }
}
