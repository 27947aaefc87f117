//! `cargo xtask setup`, and the first step of `ci`, `integration`, `faults` and `docker`: makes
//! the machine ready for the tests before anything of the workspace is compiled.
//!
//! It checks each system package the tests need by what the tests use (the program on `PATH`,
//! the file, the `pkg-config` module, the Python module), installs the missing ones with apt
//! when it can (as root, or with passwordless `sudo`), and otherwise stops with the one command
//! that installs them. Node.js and a Python that can make virtualenvs are checked too (the test
//! peers in `target/xtask-tools/` are installed with them). Then it starts a Docker engine where
//! one can start.
//!
//! Why one file past 700 lines (a tenth of it its tests): the table of what the tests need and the
//! checks, the install and the engine start that read it are one step of `ci`, read top to bottom;
//! each probe is a few lines, and splitting them from the table would separate a need from its
//! check.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::{say, tools_dir};

/// The environment variable that turns installing off (like `--no-install`).
pub(crate) const NO_INSTALL_ENV: &str = "OPENMANUS_XTASK_NO_INSTALL";

/// How to tell that a package's part the tests use is there.
enum Probe {
    /// One of these programs is on `PATH`.
    Program(&'static [&'static str]),
    /// This file exists.
    File(&'static str),
    /// `pkg-config --exists` knows this module (what the build scripts ask).
    PkgConfig(&'static str),
    /// `/usr/bin/python3` imports tkinter (the desktop tests run their Tk application with it).
    Tkinter,
    /// `/bin/busybox` is statically linked (the Docker test image is built from it).
    StaticBusybox,
    /// The `docker` client and `dockerd` are there, or an engine already answers.
    Docker,
    /// `$NATS_SERVER` names a file, or `nats-server` is on `PATH` (as the test kit looks).
    Nats,
    /// `$OPENMANUS_PG_BIN/initdb`, or a `/usr/lib/postgresql/<version>/bin/initdb` (as the test
    /// kit looks).
    Postgres,
}

/// A Debian package the tests need, and why.
struct Need {
    package: &'static str,
    why: &'static str,
    probe: Probe,
}

/// Every system package the tests need (`.ci/run` installed the same list).
const NEEDS: &[Need] = &[
    Need {
        package: "bubblewrap",
        why: "bwrap: the sandbox tests run the real sandbox",
        probe: Probe::Program(&["bwrap"]),
    },
    Need {
        package: "xvfb",
        why: "Xvfb: the virtual display of the desktop tests (computer_use)",
        probe: Probe::Program(&["Xvfb"]),
    },
    Need {
        package: "python3-tk",
        why: "/usr/bin/python3 with tkinter: the application the desktop tests click",
        probe: Probe::Tkinter,
    },
    Need {
        package: "pkg-config",
        why: "the chart renderer's build finds fontconfig and freetype with it",
        probe: Probe::Program(&["pkg-config"]),
    },
    Need {
        package: "libfontconfig1-dev",
        why: "fontconfig (pkg-config module): the chart renderer links it",
        probe: Probe::PkgConfig("fontconfig"),
    },
    Need {
        package: "libfreetype-dev",
        why: "freetype2 (pkg-config module): the chart renderer links it",
        probe: Probe::PkgConfig("freetype2"),
    },
    Need {
        package: "fonts-dejavu-core",
        why: "DejaVu: the charts' and the Tk application's text",
        probe: Probe::File("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
    },
    Need {
        package: "fonts-wqy-microhei",
        why: "a CJK font: charts with Chinese text (language = \"zh\")",
        probe: Probe::File("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"),
    },
    Need {
        package: "chromium",
        why: "the browser tests drive the system Chromium",
        probe: Probe::Program(&["chromium", "chromium-browser", "google-chrome"]),
    },
    Need {
        package: "docker.io",
        why: "docker and dockerd: the Docker sandbox backend's tests",
        probe: Probe::Docker,
    },
    Need {
        package: "busybox-static",
        why: "a static /bin/busybox: the Docker tests' image is built from it",
        probe: Probe::StaticBusybox,
    },
    Need {
        package: "tmux",
        why: "the command line's line-editing tests type into it",
        probe: Probe::Program(&["tmux"]),
    },
    Need {
        package: "bsdutils",
        why: "script: the command line's colour tests run under its pseudo-terminal",
        probe: Probe::Program(&["script"]),
    },
    Need {
        package: "nats-server",
        why: "the workers' tests start their own nats-server -js",
        probe: Probe::Nats,
    },
    Need {
        package: "postgresql",
        why: "initdb and postgres: the session store's PostgreSQL tests start their own cluster",
        probe: Probe::Postgres,
    },
];

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// There (with a detail worth showing, such as a version).
    Present(Option<String>),
    /// Missing; this Debian package brings it.
    Missing(&'static str),
    /// Missing or unusable, and no Debian package here fixes it: what to do.
    Manual(String),
}

/// One line of the report: what was checked, why the tests need it, and what was found.
struct Check {
    name: &'static str,
    why: &'static str,
    state: State,
}

/// Makes the machine ready for the tests (see the module docs); `install` false only reports
/// and stops on anything missing. Prints a short report of what it found, installed and
/// started.
pub(crate) fn ready(install: bool) -> Result<()> {
    say("==> machine: checking the system packages and programs the tests need");
    let started = Instant::now();
    let checks = check_all();
    report(&checks);
    let packages: Vec<&'static str> = checks
        .iter()
        .filter_map(|check| match check.state {
            State::Missing(package) => Some(package),
            _ => None,
        })
        .collect();
    let manual: Vec<String> = checks
        .iter()
        .filter_map(|check| match &check.state {
            State::Manual(what) => Some(format!("{}: {what}", check.name)),
            _ => None,
        })
        .collect();
    say(&format!(
        "==> machine: checked in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    let root = is_root();
    if !packages.is_empty() {
        install_packages(&packages, install, root, &manual)?;
    }
    if !manual.is_empty() {
        bail!(
            "the tests need what no Debian package here provides:\n  {}",
            manual.join("\n  ")
        );
    }
    say(&format!("==> machine: {}", docker_engine(root)));
    say(&format!(
        "==> machine: {}",
        disk_space(&crate::target_dir(), &crate::workspace_root())
    ));
    say("==> machine: ready");
    Ok(())
}

/// Installs `packages` with apt where it can, else stops with the command that would (and
/// `manual`, what no package here fixes, so that one message says all that is missing).
fn install_packages(
    packages: &[&'static str],
    install: bool,
    root: bool,
    manual: &[String],
) -> Result<()> {
    let apt = which("apt-get").is_some();
    let sudo = !root && apt && install && sudo_works();
    if !install || !apt || !(root || sudo) {
        let command = apt_line(&apt_commands(if root { &[] } else { &["sudo"] }, packages));
        let why = if !install {
            format!("installing is turned off (--no-install or {NO_INSTALL_ENV})")
        } else if !apt {
            "there is no apt-get here: install these Debian packages' equivalents".to_owned()
        } else if which("sudo").is_none() {
            "this is not root and there is no sudo".to_owned()
        } else {
            "this is not root and sudo asks for a password".to_owned()
        };
        let also = if manual.is_empty() {
            String::new()
        } else {
            format!(
                "\n\nThey also need what no Debian package here provides:\n  {}",
                manual.join("\n  ")
            )
        };
        bail!(
            "the tests need {} missing system package(s), and {why}. Install them with:\n\n    \
             {command}{also}\n\nthen run this command again.",
            packages.len()
        );
    }
    let prefix: &[&str] = if root { &[] } else { &["sudo", "-n"] };
    let commands = apt_commands(prefix, packages);
    say(&format!(
        "==> machine: installing {} package(s){}: {}",
        packages.len(),
        if root { "" } else { " with sudo" },
        apt_line(&commands)
    ));
    let started = Instant::now();
    for argv in &commands {
        let Some((program, args)) = argv.split_first() else {
            continue;
        };
        let status = Command::new(program)
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .status()
            .with_context(|| format!("could not start {program}"))?;
        if !status.success() {
            bail!("`{}` failed ({status})", argv.join(" "));
        }
    }
    // What the tests use must be there now; a package that installs but leaves it missing
    // would otherwise fail the tests much later.
    let still: Vec<String> = check_all()
        .into_iter()
        .filter(
            |check| matches!(check.state, State::Missing(package) if packages.contains(&package)),
        )
        .map(|check| format!("{} ({})", check.name, check.why))
        .collect();
    if !still.is_empty() {
        bail!(
            "apt-get installed the packages, yet these are still not found: {}",
            still.join(", ")
        );
    }
    say(&format!(
        "==> machine: installed {} in {:.1} s",
        packages.join(", "),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// `apt-get update` and `apt-get install` of `packages`, each after `prefix` (`sudo`, `sudo
/// -n` or nothing); the install through `env DEBIAN_FRONTEND=noninteractive` so that it holds
/// under sudo too.
fn apt_commands(prefix: &[&str], packages: &[&str]) -> Vec<Vec<String>> {
    let with_prefix = |rest: &[&str]| -> Vec<String> {
        prefix
            .iter()
            .chain(rest)
            .map(|word| (*word).to_owned())
            .collect()
    };
    let mut install = with_prefix(&[
        "env",
        "DEBIAN_FRONTEND=noninteractive",
        "apt-get",
        "install",
        "-y",
        "--no-install-recommends",
    ]);
    install.extend(packages.iter().map(|package| (*package).to_owned()));
    vec![with_prefix(&["apt-get", "update"]), install]
}

/// The commands as one shell line joined with `&&` (package names need no quoting).
fn apt_line(commands: &[Vec<String>]) -> String {
    commands
        .iter()
        .map(|argv| argv.join(" "))
        .collect::<Vec<_>>()
        .join(" && ")
}

/// Prints what the checks found: one line for the present, one per missing thing.
fn report(checks: &[Check]) {
    let present: Vec<String> = checks
        .iter()
        .filter_map(|check| match &check.state {
            State::Present(None) => Some(check.name.to_owned()),
            State::Present(Some(detail)) => Some(format!("{} ({detail})", check.name)),
            _ => None,
        })
        .collect();
    if !present.is_empty() {
        say(&format!("    present: {}", present.join(", ")));
    }
    for check in checks {
        match &check.state {
            State::Present(_) => {}
            State::Missing(package) => {
                say(&format!("    missing: {package} — {}", check.why));
            }
            State::Manual(what) => say(&format!("    missing: {} — {what}", check.name)),
        }
    }
}

/// Every check: the Debian packages, then the Python and Node.js the test peers need.
fn check_all() -> Vec<Check> {
    let mut checks: Vec<Check> = NEEDS
        .iter()
        .map(|need| Check {
            name: need.package,
            why: need.why,
            state: if probe(&need.probe) {
                State::Present(None)
            } else {
                State::Missing(need.package)
            },
        })
        .collect();
    checks.push(Check {
        name: "python3 venv",
        why: "the Python test peers (fakellm, mcp, pandas, a2a-sdk) get virtualenvs",
        state: python_venv(),
    });
    checks.push(Check {
        name: "node",
        why: "the MCP test servers (npm) run on Node.js 20 or later",
        state: node(),
    });
    checks.push(Check {
        name: "npm",
        why: "installs the MCP test servers",
        state: npm(),
    });
    checks
}

fn probe(probe: &Probe) -> bool {
    match probe {
        Probe::Program(names) => names.iter().any(|name| which(name).is_some()),
        Probe::File(path) => Path::new(path).is_file(),
        Probe::PkgConfig(module) => succeeds("pkg-config", &["--exists", module]),
        Probe::Tkinter => succeeds("/usr/bin/python3", &["-c", "import tkinter, _tkinter"]),
        Probe::StaticBusybox => Path::new("/bin/busybox").is_file() && is_static("/bin/busybox"),
        Probe::Docker => {
            which("docker").is_some() && (dockerd().is_some() || engine_version().is_some())
        }
        Probe::Nats => std::env::var_os("NATS_SERVER").map_or_else(
            || which("nats-server").is_some(),
            |path| Path::new(&path).is_file(),
        ),
        Probe::Postgres => std::env::var_os("OPENMANUS_PG_BIN").map_or_else(
            || {
                std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
                    versions
                        .filter_map(Result::ok)
                        .any(|v| v.path().join("bin/initdb").is_file())
                })
            },
            |dir| Path::new(&dir).join("initdb").is_file(),
        ),
    }
}

/// Whether `ldd` finds no dynamic loader for `path` (glibc's `ldd` says "not a dynamic
/// executable" or "statically linked").
fn is_static(path: &str) -> bool {
    Command::new("ldd")
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|out| {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            text.contains("not a dynamic executable") || text.contains("statically linked")
        })
}

/// The Python the test peers' virtualenvs are made with (`$PYTHON`, else `python3`) can make
/// them: its `ensurepip` works (Debian leaves it out of python3 unless python3-venv is there).
fn python_venv() -> State {
    let chosen = std::env::var("PYTHON").ok();
    let python = chosen.clone().unwrap_or_else(|| "python3".to_owned());
    let Some(path) = resolve(&python) else {
        return match chosen {
            Some(chosen) => State::Manual(format!("PYTHON names {chosen}, which is not found")),
            // python3-venv brings Debian's python3 with it.
            None => State::Missing("python3-venv"),
        };
    };
    if succeeds(&path.to_string_lossy(), &["-m", "ensurepip", "--version"]) {
        return State::Present(Some(path.display().to_string()));
    }
    let debian = std::fs::canonicalize(&path).is_ok_and(|real| real.starts_with("/usr/bin"));
    if debian {
        State::Missing("python3-venv")
    } else {
        State::Manual(format!(
            "{} cannot make virtualenvs (its ensurepip fails): install its venv module, or set \
             PYTHON to a python3 that can",
            path.display()
        ))
    }
}

/// Node.js 20 or later (`node --version`). Debian 12's own nodejs is 18, so it is never
/// installed from here.
fn node() -> State {
    let Some(version) = output("node", &["--version"]) else {
        return State::Manual(
            "not found; install Node.js 20 or later (nodejs.org or NodeSource; Debian 12's \
             nodejs is 18)"
                .to_owned(),
        );
    };
    match node_major(&version) {
        Some(major) if major >= 20 => State::Present(Some(version)),
        _ => State::Manual(format!(
            "{version} is too old; install Node.js 20 or later (nodejs.org or NodeSource)"
        )),
    }
}

/// The major version of `node --version`'s `v20.20.2`.
fn node_major(version: &str) -> Option<u32> {
    version
        .trim()
        .strip_prefix('v')?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// `$NPM`, else `npm` on `PATH` (as the test peers' install runs it).
fn npm() -> State {
    let npm = std::env::var("NPM").unwrap_or_else(|_| "npm".to_owned());
    if resolve(&npm).is_some() {
        State::Present(None)
    } else {
        State::Manual(format!(
            "`{npm}` not found; it comes with Node.js (nodejs.org or NodeSource)"
        ))
    }
}

/// The Docker engine: already answering, started here (as root, like `.ci/run` did), or the
/// reason the Docker tests will be skipped.
fn docker_engine(root: bool) -> String {
    if let Some(version) = engine_version() {
        return format!("Docker engine {version} answers");
    }
    let Some(dockerd) = dockerd() else {
        return "no Docker engine answers and there is no dockerd; the Docker sandbox tests \
                will be skipped"
            .to_owned();
    };
    if !root {
        return "no Docker engine answers, and starting dockerd needs root; the Docker \
                sandbox tests will be skipped"
            .to_owned();
    }
    match start_dockerd(&dockerd) {
        Ok(message) | Err(message) => message,
    }
}

/// Starts `dockerd` as `.ci/run` did (vfs storage, no iptables, no bridge network: the tests
/// use containers without a network), logging to `target/xtask-tools/dockerd.log`, and waits
/// up to 30 s for it to answer. It keeps running after xtask ends (in its own process group,
/// so a Ctrl-C of the tests does not stop it).
fn start_dockerd(dockerd: &Path) -> std::result::Result<String, String> {
    use std::os::unix::process::CommandExt;

    let log_path = tools_dir().join("dockerd.log");
    let skipped = |why: String| format!("{why}; the Docker sandbox tests will be skipped");
    std::fs::create_dir_all(tools_dir())
        .map_err(|e| skipped(format!("cannot create {}: {e}", tools_dir().display())))?;
    let log = std::fs::File::create(&log_path)
        .map_err(|e| skipped(format!("cannot create {}: {e}", log_path.display())))?;
    let log_err = log
        .try_clone()
        .map_err(|e| skipped(format!("cannot open {}: {e}", log_path.display())))?;
    say("==> machine: starting dockerd (vfs storage, no iptables, no bridge)");
    let mut child = Command::new(dockerd)
        .args([
            "--storage-driver=vfs",
            "--iptables=false",
            "--ip6tables=false",
            "--bridge=none",
        ])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|e| skipped(format!("dockerd could not start: {e}")))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(version) = engine_version() {
            return Ok(format!(
                "Docker engine {version} answers (dockerd started here, pid {}, log {})",
                child.id(),
                log_path.display()
            ));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(skipped(format!(
                "dockerd could not start here ({status}; log {}: {})",
                log_path.display(),
                log_tail(&log_path)
            )));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(skipped(format!(
                "dockerd did not answer within 30 s and was stopped (log {}: {})",
                log_path.display(),
                log_tail(&log_path)
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The last lines of a log, on one line.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// The version of the Docker engine that answers, if one does.
pub(crate) fn engine_version() -> Option<String> {
    output("docker", &["version", "--format", "{{.Server.Version}}"])
        .filter(|version| !version.is_empty())
}

/// `dockerd` on `PATH`, or in `/usr/sbin` (not on a user's `PATH` on Debian).
fn dockerd() -> Option<PathBuf> {
    which("dockerd").or_else(|| {
        let path = PathBuf::from("/usr/sbin/dockerd");
        path.is_file().then_some(path)
    })
}

/// Whether this process runs as root (`id -u` is 0).
fn is_root() -> bool {
    output("id", &["-u"]).is_some_and(|uid| uid == "0")
}

/// Whether `sudo` runs commands without asking for a password.
fn sudo_works() -> bool {
    which("sudo").is_some() && succeeds("sudo", &["-n", "true"])
}

/// `program` as a path: itself when it has a `/`, else looked up on `PATH`.
fn resolve(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return path.is_file().then_some(path);
    }
    which(program)
}

/// The first executable file called `name` in a `PATH` directory.
fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;

    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// Whether `program args` runs and exits with success (its output discarded).
fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// What a cold `cargo xtask ci` leaves in `target/` (measured on a clean clone, 2026-12-07,
/// with debug sections compressed: 9.4 GiB of debug builds of every test target with and
/// without the optional features, 1.4 GiB of test peers, the docs), plus the release build of
/// `install-check` (~1.4 GiB), rounded up. `faults` adds nothing: it runs the same build.
const CI_NEEDS_GIB: u64 = 13;

/// The free space where the build goes, and a warning when it is less than a cold run writes:
/// a full disk otherwise shows only as "No space left on device" from a compiler, minutes in.
fn disk_space(target: &Path, workspace: &Path) -> String {
    // `df` needs a path that exists: the target dir, else the workspace it will be made in.
    let at = if target.exists() {
        target.to_path_buf()
    } else {
        workspace.to_path_buf()
    };
    let Some(free) =
        output("df", &["-Pk", &at.to_string_lossy()]).and_then(|out| df_free_kib(&out))
    else {
        return format!(
            "free disk space under {} unknown (df did not answer)",
            at.display()
        );
    };
    let free_gib = free / (1024 * 1024);
    if free_gib < CI_NEEDS_GIB {
        format!(
            "WARNING: {free_gib} GiB free under {}; a cold run writes about {CI_NEEDS_GIB} GiB \
             there and may fail with \"No space left on device\" (free some, or set \
             CARGO_TARGET_DIR to a larger disk)",
            at.display()
        )
    } else {
        format!(
            "{free_gib} GiB free under {} (a cold run writes about {CI_NEEDS_GIB} GiB)",
            at.display()
        )
    }
}

/// The available KiB in `df -Pk` output (POSIX format: a header, then one line whose fourth
/// column is the available space).
fn df_free_kib(out: &str) -> Option<u64> {
    out.lines().nth(1)?.split_whitespace().nth(3)?.parse().ok()
}

/// The trimmed standard output of `program args` when it exits with success.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apt_commands_as_root_and_with_sudo() {
        let root = apt_commands(&[], &["bubblewrap", "chromium"]);
        assert_eq!(
            apt_line(&root),
            "apt-get update && env DEBIAN_FRONTEND=noninteractive apt-get install -y \
             --no-install-recommends bubblewrap chromium"
        );
        let sudo = apt_commands(&["sudo", "-n"], &["tmux"]);
        assert_eq!(sudo[0], ["sudo", "-n", "apt-get", "update"]);
        assert_eq!(
            sudo[1],
            [
                "sudo",
                "-n",
                "env",
                "DEBIAN_FRONTEND=noninteractive",
                "apt-get",
                "install",
                "-y",
                "--no-install-recommends",
                "tmux"
            ]
        );
    }

    #[test]
    fn df_output_gives_the_available_space() {
        let out = "Filesystem     1024-blocks      Used Available Capacity Mounted on\n\
                   /dev/vda        264091736  29360128  67108864      31% /\n";
        assert_eq!(df_free_kib(out), Some(67_108_864));
        assert_eq!(df_free_kib("Filesystem 1024-blocks Used Available\n"), None);
        assert_eq!(df_free_kib("header\n/dev/x 1 2 lots 4% /\n"), None);
    }

    #[test]
    fn disk_space_reads_this_machine() {
        let here = disk_space(&crate::target_dir(), Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(here.contains("GiB"), "{here}");
    }

    #[test]
    fn node_major_reads_the_version() {
        assert_eq!(node_major("v20.20.2\n"), Some(20));
        assert_eq!(node_major("v18.19.0"), Some(18));
        assert_eq!(node_major("20.1.0"), None);
        assert_eq!(node_major(""), None);
    }

    #[test]
    fn every_package_of_the_old_ci_script_is_checked() {
        // The list .ci/run installed before this module took over.
        for package in [
            "bubblewrap",
            "xvfb",
            "python3-tk",
            "pkg-config",
            "libfontconfig1-dev",
            "libfreetype-dev",
            "fonts-dejavu-core",
            "fonts-wqy-microhei",
            "chromium",
            "docker.io",
            "busybox-static",
            "tmux",
            "bsdutils",
            "nats-server",
            "postgresql",
        ] {
            assert!(
                NEEDS.iter().any(|need| need.package == package),
                "{package} is not checked"
            );
        }
    }

    #[test]
    fn which_finds_programs_and_not_directories() {
        // `sh` is on every PATH this runs on; `/usr` is a directory, never a program.
        assert!(which("sh").is_some_and(|path| path.is_absolute() && path.is_file()));
        assert_eq!(which("no-such-program-for-xtask"), None);
        assert_eq!(resolve("/usr"), None);
    }
}
