//! The Landlock mechanism: the program runs through this process's own executable, started as
//! `EXE __openmanus_confine SPEC -- PROGRAM ARGS…`. That process (the shim) is single-threaded
//! at that point: it restricts itself with Landlock and a seccomp filter, which an executed
//! program inherits and can never lift, then executes the program in its place (same process,
//! so the tool's process group, signals and exit code are the program's).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};
use serde::{Deserialize, Serialize};

use super::{ConfinementOptions, cover};

/// The first argument that makes a process the shim.
pub const SHIM_ARG: &str = "__openmanus_confine";

/// Exit code of a shim that could not confine (nothing ran).
const CANNOT_CONFINE: u8 = 126;
/// Exit code of a shim that confined but could not execute the program.
const CANNOT_EXECUTE: u8 = 127;

/// Devices a confined program may write besides its writable directories.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The executable that serves as the shim: set by [`shim_main`].
static SHIM: OnceLock<PathBuf> = OnceLock::new();

/// What the shim enforces (its second argument, as JSON).
#[derive(Debug, Serialize, Deserialize)]
struct Spec {
    hidden: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    tmp: PathBuf,
    network: bool,
}

/// Call first thing in `main` of a program that confines its tools: when this process was
/// started as the shim, it confines itself and executes the program (returning only the exit
/// code of a failure, to return from `main`); otherwise it records this executable as the shim
/// of the Landlock mechanism and returns `None`. Without it, only bubblewrap can confine.
#[must_use]
pub fn shim_main() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    let _program = args.next();
    if args.next().as_deref() != Some(SHIM_ARG.as_ref()) {
        if let Ok(exe) = std::env::current_exe() {
            let _ = SHIM.set(exe);
        }
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    Some(run(&rest))
}

/// The launcher of the Landlock mechanism, its private temporary directory `tmp`.
pub(super) fn launcher(options: &ConfinementOptions, tmp: &Path) -> Result<Vec<String>, String> {
    let Some(exe) = SHIM.get() else {
        return Err(
            "this program cannot start the Landlock shim (its main does not call \
             agent_sandbox::confine::shim_main)"
                .to_owned(),
        );
    };
    let writable = options.writable_dirs();
    let hidden = options.hidden_paths();
    if let Some((secret, dir)) = hidden.iter().find_map(|secret| {
        writable
            .iter()
            .find(|dir| secret.starts_with(dir))
            .map(|dir| (secret, dir))
    }) {
        return Err(format!(
            "{} is writable and holds the hidden {}, which Landlock cannot keep out of reach",
            dir.display(),
            secret.display()
        ));
    }
    let spec = Spec {
        hidden,
        writable,
        tmp: tmp.to_path_buf(),
        network: options.network_allowed(),
    };
    let spec = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
    let exe = exe
        .to_str()
        .ok_or_else(|| format!("the path {} is not UTF-8", exe.display()))?;
    Ok(vec![
        exe.to_owned(),
        SHIM_ARG.to_owned(),
        spec,
        "--".to_owned(),
    ])
}

/// The shim: `SPEC -- PROGRAM ARGS…`.
fn run(args: &[OsString]) -> ExitCode {
    let fail = |code: u8, message: &str| {
        let _ = writeln!(std::io::stderr(), "openmanus confinement: {message}");
        ExitCode::from(code)
    };
    let [spec, dashes, program, rest @ ..] = args else {
        return fail(CANNOT_CONFINE, "usage: SPEC -- PROGRAM [ARGS…]");
    };
    if dashes != "--" {
        return fail(CANNOT_CONFINE, "usage: SPEC -- PROGRAM [ARGS…]");
    }
    let spec: Spec = match spec.to_str().map(serde_json::from_str) {
        Some(Ok(spec)) => spec,
        Some(Err(error)) => return fail(CANNOT_CONFINE, &format!("bad spec: {error}")),
        None => return fail(CANNOT_CONFINE, "bad spec: not UTF-8"),
    };
    if let Err(error) = restrict(&spec) {
        return fail(CANNOT_CONFINE, &error);
    }
    let error = std::process::Command::new(program)
        .args(rest)
        .env("TMPDIR", &spec.tmp)
        .exec();
    fail(
        CANNOT_EXECUTE,
        &format!("cannot run {}: {error}", program.to_string_lossy()),
    )
}

/// Landlock (file system, signals, abstract sockets), then seccomp (network, io_uring).
fn restrict(spec: &Spec) -> Result<(), String> {
    let abi = ABI::V6;
    let cover = cover::cover(Path::new("/"), &spec.hidden);
    let writable = spec.writable.iter().chain(std::iter::once(&spec.tmp));
    let status = landlock::Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|ruleset| ruleset.scope(Scope::from_all(abi)))
        .and_then(landlock::Ruleset::create)
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(&cover.beneath, AccessFs::from_read(abi)))
        })
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(&cover.listed, AccessFs::ReadDir)))
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        })
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(abi))))
        .and_then(landlock::RulesetCreated::restrict_self)
        .map_err(|error| format!("Landlock: {error}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("this kernel does not enforce Landlock".to_owned());
    }
    deny_syscalls(!spec.network)
}

/// A seccomp filter: `io_uring_setup` (which would bypass the filter) always, and `socket`
/// unless the network is allowed, fail with `EACCES`.
fn deny_syscalls(deny_network: bool) -> Result<(), String> {
    let mut rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    if deny_network {
        rules.insert(libc::SYS_socket, Vec::new());
    }
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|error| format!("seccomp: {error}"))?;
    let errno = u32::try_from(libc::EACCES).map_err(|error| error.to_string())?;
    let filter = seccompiler::SeccompFilter::new(
        rules,
        seccompiler::SeccompAction::Allow,
        seccompiler::SeccompAction::Errno(errno),
        arch,
    )
    .map_err(|error| format!("seccomp: {error}"))?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|error: seccompiler::BackendError| format!("seccomp: {error}"))?;
    seccompiler::apply_filter(&program).map_err(|error| format!("seccomp: {error}"))
}
