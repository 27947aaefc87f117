//! The test peers: independent programs the integration tests talk to (fakellm, the MCP
//! servers and SDK, the A2A SDKs, pandas, the ACP SDK, Arize Phoenix), installed once into `target/xtask-tools/` from PyPI
//! and npm, unless an environment variable points at one already installed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{run, tools_dir};

/// The version of `fakellm` (PyPI) the integration tests run against.
const FAKELLM_VERSION: &str = "0.3.5";

/// Returns the `fakellm` executable the tests use: `$FAKELLM_BIN` if set, else one installed
/// (once) into a virtualenv under `target/xtask-tools/`.
fn ensure_fakellm() -> Result<PathBuf> {
    ensure_venv(
        "FAKELLM_BIN",
        &format!("fakellm-{FAKELLM_VERSION}"),
        &format!("fakellm=={FAKELLM_VERSION}"),
        "fakellm",
    )
}

/// A program from PyPI in a virtualenv created (once) under `target/xtask-tools/<dir>`: `$env`
/// if set, else the virtualenv's `bin/<program>` after `pip install <requirement>`. A marker
/// file records a finished install, so an interrupted one is done again.
fn ensure_venv(env: &str, dir: &str, requirement: &str, program: &str) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Ok(PathBuf::from(path));
    }
    let venv = tools_dir().join(dir);
    let bin = venv.join("bin").join(program);
    let marker = venv.join(".installed");
    if bin.exists() && marker.exists() {
        return Ok(bin);
    }
    let base = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let mut create = Command::new(&base);
    create.args(["-m", "venv"]).arg(&venv);
    run(&format!("create a virtualenv for {requirement}"), create)?;
    let mut install = Command::new(venv.join("bin").join("pip"));
    install.args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        requirement,
    ]);
    run(&format!("install {requirement} (PyPI)"), install)?;
    if !bin.exists() {
        bail!(
            "{requirement} was installed but {} is missing",
            bin.display()
        );
    }
    std::fs::write(&marker, requirement).with_context(|| format!("write {}", marker.display()))?;
    Ok(bin)
}

/// The version of `@modelcontextprotocol/server-everything` (npm) the MCP tests run against.
const MCP_EVERYTHING_VERSION: &str = "2026.8.31";
/// The version of `@modelcontextprotocol/server-filesystem` (npm) the MCP tests run against.
const MCP_FILESYSTEM_VERSION: &str = "2026.8.31";
/// The Python `mcp` SDK (PyPI) the MCP tests run against: 1.x has the FastMCP API OpenManus
/// uses (2.x renamed it).
const MCP_PYTHON_VERSION: &str = "1.30.0";

/// Returns the `mcp-server-everything` executable the MCP tests use: `$MCP_EVERYTHING_BIN` if
/// set, else one installed (once) with npm under `target/xtask-tools/npm/`.
pub(crate) fn ensure_mcp_everything() -> Result<PathBuf> {
    ensure_npm_peer(
        "MCP_EVERYTHING_BIN",
        "server-everything",
        MCP_EVERYTHING_VERSION,
        "mcp-server-everything",
    )
}

/// Returns the `mcp-server-filesystem` executable the MCP tests use: `$MCP_FILESYSTEM_BIN` if
/// set, else one installed (once) with npm under `target/xtask-tools/npm/`.
fn ensure_mcp_filesystem() -> Result<PathBuf> {
    ensure_npm_peer(
        "MCP_FILESYSTEM_BIN",
        "server-filesystem",
        MCP_FILESYSTEM_VERSION,
        "mcp-server-filesystem",
    )
}

/// `$env_var` if set, else `@modelcontextprotocol/{package}@{version}` installed (once) with npm
/// under `target/xtask-tools/npm/`, as the path of its executable `bin`.
fn ensure_npm_peer(env_var: &str, package: &str, version: &str, bin: &str) -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os(env_var) {
        return Ok(PathBuf::from(bin));
    }
    let dir = tools_dir().join("npm");
    let bin = dir.join("node_modules").join(".bin").join(bin);
    let manifest = dir
        .join("node_modules")
        .join("@modelcontextprotocol")
        .join(package)
        .join("package.json");
    if bin.exists() && has_version(&manifest, version) {
        return Ok(bin);
    }
    npm_install(
        &dir,
        &[format!("@modelcontextprotocol/{package}@{version}")],
        &format!("install the MCP test server {package} (npm)"),
    )?;
    if !bin.exists() {
        bail!("{package} was installed but {} is missing", bin.display());
    }
    Ok(bin)
}

/// Whether the npm package whose `package.json` is `manifest` is at `version`.
fn has_version(manifest: &Path, version: &str) -> bool {
    std::fs::read_to_string(manifest)
        .is_ok_and(|p| p.contains(&format!("\"version\": \"{version}\"")))
}

/// `npm install`s `specs` (`name@version`) into `dir`, a private package of its own.
fn npm_install(dir: &Path, specs: &[String], what: &str) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let manifest = dir.join("package.json");
    if !manifest.exists() {
        std::fs::write(&manifest, "{\"private\": true}\n")
            .with_context(|| format!("write {}", manifest.display()))?;
    }
    let mut install = Command::new(std::env::var("NPM").unwrap_or_else(|_| "npm".to_owned()));
    install
        .current_dir(dir)
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
        .args(specs);
    run(what, install)
}

/// The official ACP TypeScript SDK (npm) the `openmanus acp` tests drive the binary with, and
/// the zod it imports (a peer dependency npm does not install by itself).
const ACP_SDK_VERSION: &str = "2.4.0";
const ZOD_VERSION: &str = "3.25.76";

/// Returns the SDK's `dist/v1/stable/acp.js` the ACP tests import: `$ACP_SDK` if set, else the
/// SDK installed (once) with npm under `target/xtask-tools/acp-sdk-<version>/`.
fn ensure_acp_sdk() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("ACP_SDK") {
        return Ok(PathBuf::from(path));
    }
    let dir = tools_dir().join(format!("acp-sdk-{ACP_SDK_VERSION}"));
    let package = dir.join("node_modules/@agentclientprotocol/sdk");
    let entry = package.join("dist/v1/stable/acp.js");
    let installed = has_version(&package.join("package.json"), ACP_SDK_VERSION);
    if entry.exists() && installed && dir.join("node_modules/zod").exists() {
        return Ok(entry);
    }
    npm_install(
        &dir,
        &[
            format!("@agentclientprotocol/sdk@{ACP_SDK_VERSION}"),
            format!("zod@{ZOD_VERSION}"),
        ],
        "install the ACP test peer @agentclientprotocol/sdk (npm)",
    )?;
    if !entry.exists() {
        bail!(
            "the ACP SDK was installed but {} is missing",
            entry.display()
        );
    }
    Ok(entry)
}

/// Returns the Python interpreter of a virtualenv holding the `mcp` SDK (FastMCP server and the
/// SDK client) the MCP tests use: `$MCP_PYTHON` if set, else a virtualenv created (once) under
/// `target/xtask-tools/`.
fn ensure_mcp_python() -> Result<PathBuf> {
    ensure_venv(
        "MCP_PYTHON",
        &format!("mcp-python-{MCP_PYTHON_VERSION}"),
        &format!("mcp=={MCP_PYTHON_VERSION}"),
        "python",
    )
}

/// The pandas version the DataAnalysis tests' Python snippets import.
const PANDAS_VERSION: &str = "2.2.3";

/// Returns a Python interpreter with pandas for the DataAnalysis tests: `$ANALYSIS_PYTHON` if
/// set, else a virtualenv created (once) under `target/xtask-tools/`.
fn ensure_analysis_python() -> Result<PathBuf> {
    ensure_venv(
        "ANALYSIS_PYTHON",
        &format!("analysis-python-pandas-{PANDAS_VERSION}"),
        &format!("pandas=={PANDAS_VERSION}"),
        "python",
    )
}

/// The A2A Python SDK (PyPI) the A2A tests' clients and peer servers use: OpenManus's pin (protocol
/// 0.2) and the current release (protocol 1.0), each in its own virtualenv.
const A2A_SDK_LEGACY_VERSION: &str = "0.2.5";
const A2A_SDK_VERSION: &str = "1.3.0";

/// Returns a Python interpreter with a2a-sdk 0.2.5: `$A2A_PYTHON_0_2` if set, else a virtualenv
/// created (once) under `target/xtask-tools/`.
fn ensure_a2a_python_legacy() -> Result<PathBuf> {
    ensure_venv(
        "A2A_PYTHON_0_2",
        &format!("a2a-python-{A2A_SDK_LEGACY_VERSION}"),
        &format!("a2a-sdk=={A2A_SDK_LEGACY_VERSION}"),
        "python",
    )
}

/// Returns a Python interpreter with the current a2a-sdk (and its HTTP server extra, for the
/// peer agent the `a2a_call` tests delegate to): `$A2A_PYTHON_1` if set, else a virtualenv
/// created (once) under `target/xtask-tools/`.
fn ensure_a2a_python() -> Result<PathBuf> {
    ensure_venv(
        "A2A_PYTHON_1",
        &format!("a2a-python-{A2A_SDK_VERSION}"),
        &format!("a2a-sdk[http-server]=={A2A_SDK_VERSION}"),
        "python",
    )
}

/// The Arize Phoenix release (PyPI) the telemetry tests export to and read spans back from.
const PHOENIX_VERSION: &str = "20.26.1";

/// Returns the `phoenix` executable of the telemetry tests: `$PHOENIX_BIN` if set, else one
/// installed (once) into a virtualenv under `target/xtask-tools/` (about 0.9 GB, 1.5 min).
fn ensure_phoenix() -> Result<PathBuf> {
    ensure_venv(
        "PHOENIX_BIN",
        &format!("phoenix-{PHOENIX_VERSION}"),
        &format!("arize-phoenix=={PHOENIX_VERSION}"),
        "phoenix",
    )
}

/// Installs (once) the independent peers the integration tests talk to — fakellm (PyPI), the
/// MCP servers server-everything and server-filesystem (npm), the Python `mcp` SDK, pandas and
/// the A2A SDKs (PyPI), the ACP TypeScript SDK (npm), Arize Phoenix (PyPI) — and returns the
/// environment that points the tests at them.
pub(crate) fn test_peers() -> Result<Vec<(&'static str, OsString)>> {
    Ok(vec![
        ("FAKELLM_BIN", ensure_fakellm()?.into()),
        ("MCP_EVERYTHING_BIN", ensure_mcp_everything()?.into()),
        ("MCP_FILESYSTEM_BIN", ensure_mcp_filesystem()?.into()),
        ("MCP_PYTHON", ensure_mcp_python()?.into()),
        ("ANALYSIS_PYTHON", ensure_analysis_python()?.into()),
        ("A2A_PYTHON_0_2", ensure_a2a_python_legacy()?.into()),
        ("A2A_PYTHON_1", ensure_a2a_python()?.into()),
        ("ACP_SDK", ensure_acp_sdk()?.into()),
        ("PHOENIX_BIN", ensure_phoenix()?.into()),
    ])
}

/// Points `command` at the test peers, and keeps a machine proxy away from loopback traffic.
pub(crate) fn with_test_peers(command: &mut Command, peers: &[(&'static str, OsString)]) {
    command.envs(peers.iter().map(|(name, value)| (name, value)));
    let mut no_proxy = std::env::var("NO_PROXY").unwrap_or_default();
    for host in ["127.0.0.1", "localhost", "::1"] {
        if !no_proxy.split(',').any(|h| h.trim() == host) {
            if !no_proxy.is_empty() {
                no_proxy.push(',');
            }
            no_proxy.push_str(host);
        }
    }
    command
        .env("NO_PROXY", &no_proxy)
        .env("no_proxy", &no_proxy);
}
