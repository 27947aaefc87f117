//! Project automation: `cargo xtask <command>`.
//!
//! * `ci` — format check, clippy with warnings denied (also of the lean build, without the
//!   `browser`, `charts` and `docker` features), `cargo package` of every library crate, docs
//!   with warnings denied, and every test of the workspace (and the lean build's). This is the README's test command and what `.ci/run` executes.
//! * `integration` — only the end-to-end suites (real programs against each other).
//! * `faults` — the fault cases, one by one, with a "cases held / tried" summary.
//! * `bench` — the benchmarks in release mode (figures, never pass/fail).
//! * `fmt` — format the workspace.
//! * `docker` — only the Docker sandbox backend's tests (`ci` runs them too, when an engine
//!   answers), building their images from host files first.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

mod faults;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci      fmt check, clippy (-D warnings; also of the lean build, --no-default-features),
          cargo package of every library crate, rustdoc (-D warnings), cargo test --workspace
          and the lean build's tests (agents, agent-sandbox, the lean binary)
          (installs the test peer fakellm from PyPI into target/xtask-tools/ on first use;
          set FAKELLM_BIN to use another copy, and the MCP test peer
          @modelcontextprotocol/server-everything and server-filesystem with npm into
          target/xtask-tools/npm (set MCP_EVERYTHING_BIN / MCP_FILESYSTEM_BIN to use other
          copies), and the Python mcp SDK from PyPI into a virtualenv under
          target/xtask-tools/ (set MCP_PYTHON to another interpreter that has it), and
          pandas from PyPI into another virtualenv there for the DataAnalysis tests (set
          ANALYSIS_PYTHON to another interpreter that has it), and the A2A Python SDK from
          PyPI, 0.2.5 and 1.3.0, each in its own virtualenv there for the A2A tests (set
          A2A_PYTHON_0_2 / A2A_PYTHON_1 to other interpreters that have them))
  integration
          the end-to-end suites only: the openmanus binary, the LLM client over HTTP (mock
          server and fakellm), MCP against real servers, the example agent crate
  faults  the fault cases of issue 21 (LLM failures, escaped processes, Ctrl-C, secrets, huge
          output, broken MCP servers, a killed Chromium, a full disk, a killed run resumed),
          each test alone; prints cases held / tried (docs/faults.md lists them)
  bench   agent-loop, request-bytes, LLM-client, local-tool, browser, start-up, whole-process, server and worker benchmarks
          (release; prints figures; instructions with valgrind when installed)
  fmt     cargo fmt --all
  docker  only the Docker backend's tests (their images built offline first; needs an engine)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench(&args[1..]),
        Some("integration") => integration(&args[1..]),
        Some("faults") => faults::faults(),
        Some("fmt") => run("format", cargo(&["fmt", "--all"])),
        Some("docker") => docker_tests().and_then(|ran| match ran {
            Some((_, 0, _)) => Ok(()),
            Some((_, failed, _)) => Err(anyhow::anyhow!("{failed} Docker sandbox tests failed")),
            None => Err(anyhow::anyhow!(
                "the Docker sandbox tests could not run here"
            )),
        }),
        Some("-h" | "--help" | "help") => {
            say(USAGE);
            Ok(())
        }
        Some(other) => Err(anyhow::anyhow!("unknown command `{other}`\n\n{USAGE}")),
        None => Err(anyhow::anyhow!("{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln_(&format!("xtask: {error:#}"));
            ExitCode::FAILURE
        }
    }
}

fn ci() -> Result<()> {
    run("format check", cargo(&["fmt", "--all", "--", "--check"]))?;
    run(
        "clippy",
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    // The lean build (no browser, charts or Docker client): the crates that have the features,
    // checked and linted without them; their tests run further down.
    run(
        "clippy, lean build",
        cargo(&[
            "clippy",
            "-p",
            "openmanus-cli",
            "-p",
            "openmanus-agents",
            "-p",
            "openmanus-agent-sandbox",
            "--no-default-features",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    // Every library crate can be packaged for crates.io (together: they depend on each other).
    run(
        "cargo package (library crates)",
        cargo(&[
            "package",
            "--workspace",
            "--no-verify",
            "--allow-dirty",
            "--exclude",
            "openmanus-cli",
            "--exclude",
            "openmanus-agent-testkit",
            "--exclude",
            "xtask",
            "--exclude",
            "openmanus-e2e",
            "--exclude",
            "word-stats-agent",
        ]),
    )?;
    let mut doc = cargo(&["doc", "--workspace", "--no-deps", "--locked"]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    run("rustdoc", doc)?;
    let mut test = cargo(&["test", "--workspace", "--locked"]);
    with_test_peers(&mut test)?;
    let (mut passed, mut failed, mut ignored) = run_tests(test)?;
    // The lean build's own tests: what it leaves out is refused by the feature's name.
    let mut lean = cargo(&[
        "test",
        "-p",
        "openmanus-agents",
        "-p",
        "openmanus-agent-sandbox",
        "--no-default-features",
        "--locked",
    ]);
    with_test_peers(&mut lean)?;
    let (lean_passed, lean_failed, lean_ignored) = run_tests(lean)?;
    passed += lean_passed;
    failed += lean_failed;
    ignored += lean_ignored;
    // And the lean binary itself (tests/lean.rs; empty in the default build).
    let lean_cli = cargo(&[
        "test",
        "-p",
        "openmanus-cli",
        "--no-default-features",
        "--test",
        "lean",
        "--locked",
    ]);
    let (lean_passed, lean_failed, lean_ignored) = run_tests(lean_cli)?;
    passed += lean_passed;
    failed += lean_failed;
    ignored += lean_ignored;
    if failed == 0
        && let Some((docker_passed, docker_failed, _)) = docker_tests()?
    {
        passed += docker_passed;
        ignored = ignored.saturating_sub(docker_passed + docker_failed);
        if docker_failed > 0 {
            bail!("{docker_failed} Docker sandbox tests failed");
        }
    }
    // One plain closing line for whoever reads the end of the log.
    say(&format!(
        "tests: {passed} passed, {failed} failed, {ignored} skipped"
    ));
    if passed == 0 {
        bail!("no test ran");
    }
    Ok(())
}

/// The image the Docker sandbox tests run: the host's static busybox and its bash (with the
/// libraries `ldd` names), imported with `docker import` (no registry is needed).
const DOCKER_TEST_IMAGE: &str = "openmanus-sandbox-test:busybox-bash";

/// The image the Docker backend's display tests run: the busybox image's files plus the host's
/// Xvfb, xkbcomp and keymaps, and python3 with tkinter, Tcl/Tk and a font (the test application
/// is Tk), all with their libraries; imported the same way, nothing downloaded.
const DOCKER_DESKTOP_IMAGE: &str = "openmanus-sandbox-test:desktop";

/// Runs the Docker backend's tests (ignored in the plain run) when a Docker engine answers;
/// otherwise says plainly that they were skipped. Returns their counts when they ran.
fn docker_tests() -> Result<Option<(u64, u64, u64)>> {
    let engine = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdin(Stdio::null())
        .output();
    let version = match engine {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        _ => {
            say(
                "Docker sandbox tests: skipped (no Docker engine answers; .ci/run starts one where it can)",
            );
            return Ok(None);
        }
    };
    if !Path::new("/bin/busybox").is_file() {
        say(
            "Docker sandbox tests: skipped (no /bin/busybox to build the test image; apt-get install busybox-static)",
        );
        return Ok(None);
    }
    ensure_image(DOCKER_TEST_IMAGE, |_| Ok(()))?;
    let desktop = if let (true, Some(tkinter)) = (Path::new("/usr/bin/Xvfb").is_file(), tkinter()) {
        ensure_image(DOCKER_DESKTOP_IMAGE, |root| {
            add_desktop_files(root, &tkinter)
        })?;
        true
    } else {
        say(
            "Docker display tests: their image cannot be built here (no /usr/bin/Xvfb or no python3 tkinter; apt-get install xvfb python3-tk fonts-dejavu-core); they will fail",
        );
        false
    };
    say(&format!(
        "Docker sandbox tests: engine {version}, images {DOCKER_TEST_IMAGE}{}",
        if desktop {
            format!(" and {DOCKER_DESKTOP_IMAGE}")
        } else {
            String::new()
        }
    ));
    let mut test = cargo(&[
        "test",
        "--locked",
        "-p",
        "openmanus-agent-sandbox",
        "-p",
        "openmanus-agents",
        "-p",
        "openmanus-cli",
        "--test",
        "docker",
        "--",
        "--ignored",
    ]);
    test.env("OPENMANUS_DOCKER_IMAGE", DOCKER_TEST_IMAGE);
    test.env("OPENMANUS_DOCKER_DESKTOP_IMAGE", DOCKER_DESKTOP_IMAGE);
    run_tests(test).map(Some)
}

/// The file of the host `/usr/bin/python3`'s `_tkinter` module, when it has tkinter (the
/// display tests' application is Tk).
fn tkinter() -> Option<PathBuf> {
    let out = Command::new("/usr/bin/python3")
        .args(["-c", "import tkinter, _tkinter; print(_tkinter.__file__)"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && path.is_file()).then_some(path)
}

/// Imports `tag` unless the engine has it: a root of the host's static busybox (every applet
/// linked), bash with its libraries, `/tmp` (mode 1777) and `/workspace`, plus what `extra`
/// adds, as one `docker import` layer.
fn ensure_image(tag: &str, extra: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let present = Command::new("docker")
        .args(["image", "inspect", tag])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    let busybox = Path::new("/bin/busybox");
    let root = tools_dir().join(format!("docker-rootfs-{}", tag.replace([':', '/'], "-")));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["bin", "tmp", "workspace"] {
        std::fs::create_dir_all(root.join(dir))
            .with_context(|| format!("create {}", root.join(dir).display()))?;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))
            .context("chmod /tmp of the image")?;
    }
    std::fs::copy(busybox, root.join("bin/busybox")).context("copy busybox")?;
    copy_with_libraries(Path::new("/bin/bash"), &root)?;
    let list = Command::new(busybox)
        .arg("--list")
        .output()
        .context("busybox --list")?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let link = root.join("bin").join(applet);
        if applet != "busybox" && !link.exists() {
            std::os::unix::fs::symlink("busybox", &link)
                .with_context(|| format!("link {applet}"))?;
        }
    }
    extra(&root)?;
    let mut tar = Command::new("tar");
    tar.arg("-C")
        .arg(&root)
        .args(["-c", "."])
        .stdout(Stdio::piped());
    let mut tar = tar.spawn().context("start tar")?;
    let Some(archive) = tar.stdout.take() else {
        bail!("tar has no output");
    };
    let mut import = Command::new("docker");
    import.args(["import", "-", tag]).stdin(archive);
    run(&format!("import the test image {tag} into Docker"), import)?;
    let archived = tar.wait().context("wait for tar")?;
    if !archived.success() {
        // A partial image would be reused by every later run: remove it.
        let _ = Command::new("docker").args(["rmi", tag]).status();
        bail!("tar failed ({archived}) while building the Docker test image {tag}");
    }
    Ok(())
}

/// The display image's additions: Xvfb and xkbcomp (which Xvfb runs for the keymap) with the
/// keymaps, python3 with its standard library (no tests, caches or packages) and tkinter, Tcl/Tk's
/// script libraries, fontconfig's configuration and the DejaVu fonts.
fn add_desktop_files(root: &Path, tkinter: &Path) -> Result<()> {
    for binary in [
        Path::new("/usr/bin/Xvfb"),
        Path::new("/usr/bin/xkbcomp"),
        Path::new("/usr/bin/python3"),
        tkinter,
    ] {
        copy_with_libraries(binary, root)?;
    }
    let python = std::fs::canonicalize("/usr/bin/python3").context("resolve python3")?;
    let stdlib = Path::new("/usr/lib").join(python.file_name().context("python3's file name")?);
    for dir in [
        stdlib.as_path(),
        Path::new("/usr/share/X11/xkb"),
        Path::new("/usr/share/tcltk"),
        Path::new("/etc/fonts"),
        Path::new("/usr/share/fonts/truetype/dejavu"),
    ] {
        let target = root.join(dir.strip_prefix("/").unwrap_or(dir));
        std::fs::create_dir_all(&target).with_context(|| format!("create {}", target.display()))?;
        let mut tar = Command::new("sh");
        tar.arg("-c")
            .arg(
                "tar -C \"$0\" -c --exclude=./test --exclude=__pycache__ --exclude=./site-packages \
                 --exclude=./dist-packages --exclude=./idlelib --exclude=./ensurepip . \
                 | tar -C \"$1\" -x",
            )
            .arg(dir)
            .arg(&target);
        run(
            &format!("copy {} into the display image", dir.display()),
            tar,
        )?;
    }
    Ok(())
}

/// Runs `cargo test`, echoing its output, and adds up the `test result:` lines.
fn run_tests(mut command: Command) -> Result<(u64, u64, u64)> {
    say(&format!("==> tests: {command:?}"));
    let started = Instant::now();
    // No terminal on stdin: tools that would prompt a human (ask_human) must see there is none.
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .context("could not start cargo test")?;
    let mut totals = (0, 0, 0);
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading cargo test output")?;
            say(&line);
            if let Some(counts) = line.strip_prefix("test result: ") {
                totals.0 += count(counts, "passed");
                totals.1 += count(counts, "failed");
                totals.2 += count(counts, "ignored");
            }
        }
    }
    let status = child.wait().context("waiting for cargo test")?;
    say(&format!(
        "==> tests: {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    if !status.success() {
        say(&format!(
            "tests: {} passed, {} failed, {} skipped",
            totals.0,
            totals.1.max(1),
            totals.2
        ));
        bail!("tests failed ({status})");
    }
    Ok(totals)
}

/// The number before `word` in a `test result:` line (`ok. 3 passed; 0 failed; ...`).
fn count(line: &str, word: &str) -> u64 {
    line.split([';', '.'])
        .filter_map(|part| part.trim().strip_suffix(word))
        .find_map(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

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
fn ensure_mcp_everything() -> Result<PathBuf> {
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
    let installed = std::fs::read_to_string(&manifest)
        .is_ok_and(|p| p.contains(&format!("\"version\": \"{version}\"")));
    if bin.exists() && installed {
        return Ok(bin);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let root_manifest = dir.join("package.json");
    if !root_manifest.exists() {
        std::fs::write(&root_manifest, "{\"private\": true}\n")
            .with_context(|| format!("write {}", root_manifest.display()))?;
    }
    let mut install = Command::new(std::env::var("NPM").unwrap_or_else(|_| "npm".to_owned()));
    install.current_dir(&dir).args([
        "install",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        &format!("@modelcontextprotocol/{package}@{version}"),
    ]);
    run(
        &format!("install the MCP test server {package} (npm)"),
        install,
    )?;
    if !bin.exists() {
        bail!("{package} was installed but {} is missing", bin.display());
    }
    Ok(bin)
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

/// Copies `binary` and the shared libraries `ldd` lists for it into `root`, at their paths.
fn copy_with_libraries(binary: &Path, root: &Path) -> Result<()> {
    let ldd = Command::new("ldd")
        .arg(binary)
        .output()
        .with_context(|| format!("ldd {}", binary.display()))?;
    let mut files = vec![binary.to_path_buf()];
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let path = line
            .split("=>")
            .last()
            .and_then(|rest| rest.split_whitespace().next())
            .filter(|p| p.starts_with('/'));
        if let Some(path) = path {
            files.push(PathBuf::from(path));
        }
    }
    for file in files {
        let resolved =
            std::fs::canonicalize(&file).with_context(|| format!("resolve {}", file.display()))?;
        let relative = file.strip_prefix("/").unwrap_or(&file);
        let target = root.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("create {}", parent.display()))?;
        }
        if target.exists() || target.is_symlink() {
            std::fs::remove_file(&target)
                .with_context(|| format!("replace {}", target.display()))?;
        }
        std::fs::copy(&resolved, &target)
            .with_context(|| format!("copy {} to {}", resolved.display(), target.display()))?;
    }
    Ok(())
}

/// Where xtask installs the test peers: `target/xtask-tools/`.
fn tools_dir() -> PathBuf {
    workspace_root().join("target").join("xtask-tools")
}

fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map_or(manifest.clone(), Path::to_path_buf)
}

/// Installs (once) the independent peers the integration tests talk to — fakellm (PyPI), the
/// MCP servers server-everything and server-filesystem (npm) and the Python `mcp` SDK (PyPI) —
/// and points `command` at them; also keeps a machine proxy
/// away from loopback traffic.
fn with_test_peers(command: &mut Command) -> Result<()> {
    command.env("FAKELLM_BIN", ensure_fakellm()?);
    command.env("MCP_EVERYTHING_BIN", ensure_mcp_everything()?);
    command.env("MCP_FILESYSTEM_BIN", ensure_mcp_filesystem()?);
    command.env("MCP_PYTHON", ensure_mcp_python()?);
    command.env("ANALYSIS_PYTHON", ensure_analysis_python()?);
    command.env("A2A_PYTHON_0_2", ensure_a2a_python_legacy()?);
    command.env("A2A_PYTHON_1", ensure_a2a_python()?);
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
    Ok(())
}

/// `cargo xtask integration`: the suites that run real programs against each other — the
/// `openmanus` binary as a subprocess, the HTTP client against the mock server and fakellm,
/// MCP against real servers, the example agent crate.
fn integration(extra: &[String]) -> Result<()> {
    let mut test = cargo(&[
        "test",
        "--locked",
        "-p",
        "openmanus-e2e",
        "-p",
        "openmanus-cli",
        "-p",
        "openmanus-agent-mcp",
        "-p",
        "word-stats-agent",
        "-p",
        "openmanus-agent-llm",
        "-p",
        "openmanus-agent-charts",
        "-p",
        "openmanus-agent-server",
    ]);
    test.args(extra);
    with_test_peers(&mut test)?;
    let (passed, failed, ignored) = run_tests(test)?;
    say(&format!(
        "tests: {passed} passed, {failed} failed, {ignored} skipped"
    ));
    Ok(())
}

fn bench(extra: &[String]) -> Result<()> {
    run(
        "build the release openmanus binary",
        cargo(&["build", "--release", "--locked", "--bin", "openmanus"]),
    )?;
    // The binary is where cargo put it: CARGO_TARGET_DIR (relative to the workspace) or target/.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || workspace_root().join("target"),
        |dir| workspace_root().join(dir),
    );
    let binary = target.join("release").join("openmanus");
    for name in [
        "agent_loop",
        "request_bytes",
        "llm_client",
        "tools",
        "browser",
        "cli_startup",
        "process_cost",
        "server",
        "workers",
    ] {
        let mut command = cargo(&[
            "bench",
            "--locked",
            "-p",
            "openmanus-e2e",
            "--bench",
            name,
            "--",
        ]);
        command.args(extra).env("OPENMANUS_BIN", &binary);
        run(&format!("benchmark {name}"), command)?;
    }
    Ok(())
}

fn cargo(args: &[&str]) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    command.args(args);
    command
}

fn run(what: &str, mut command: Command) -> Result<()> {
    say(&format!("==> {what}: {command:?}"));
    let started = Instant::now();
    let status = command
        .status()
        .with_context(|| format!("could not start {what}"))?;
    say(&format!(
        "==> {what}: {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

#[allow(clippy::print_stdout)]
fn say(line: &str) {
    println!("{line}");
}

#[allow(clippy::print_stderr)]
fn eprintln_(line: &str) {
    eprintln!("{line}");
}
