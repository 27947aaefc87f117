//! The confinement of the code-running tools, by each mechanism, against the real kernel: a
//! hidden secret cannot be read, nothing outside the writable paths can be written, the network
//! cannot be reached, and what is allowed works.
//!
//! This test binary is its own Landlock shim (`harness = false`: its `main` calls
//! `shim_main` first, as openmanus's does), so it runs its tests itself.

// Without libtest this is not `cfg(test)`, where the workspace's lints allow these already.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::print_stdout
)]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};
use std::time::Duration;

use agent_config::SandboxMode;
use agent_sandbox::{Confinement, ConfinementOptions, Mechanism, shim_main};

/// A home with a secret, a workspace and a place outside it, under `/var/tmp` (not under
/// `/tmp`, which bubblewrap replaces anyway: the test must not pass for that reason; the target
/// directory itself may be under `/tmp`).
struct Place {
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    outside: PathBuf,
}

impl Place {
    fn new() -> Self {
        Self::new_in(Path::new("/var/tmp"))
    }

    /// A place under `parent` (under `/tmp`: a workspace the private `/tmp` must not hide).
    fn new_in(parent: &Path) -> Self {
        let dir = tempfile::tempdir_in(parent).expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".ssh")).expect("mkdir");
        std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE-KEY-42\n").expect("write");
        std::fs::write(home.join(".netrc"), "machine x password NETRC-42\n").expect("write");
        let workspace = root.join("workspace");
        std::fs::create_dir(&workspace).expect("mkdir");
        let outside = root.join("outside");
        std::fs::create_dir(&outside).expect("mkdir");
        Self {
            _dir: dir,
            home,
            workspace,
            outside,
        }
    }

    fn options(&self, mode: SandboxMode) -> ConfinementOptions {
        ConfinementOptions {
            hidden: vec![self.home.join(".ssh"), self.home.join(".netrc")],
            ..ConfinementOptions::new(mode, &self.workspace)
        }
    }
}

fn bash(confinement: &Confinement, cwd: &Path, script: &str) -> Output {
    let launcher = confinement.launcher();
    Command::new(&launcher[0])
        .args(&launcher[1..])
        .args(["bash", "-c", script])
        .current_dir(cwd)
        .output()
        .expect("the launcher starts")
}

fn confine(
    runtime: &tokio::runtime::Runtime,
    options: &ConfinementOptions,
    mechanism: Mechanism,
) -> Confinement {
    runtime
        .block_on(Confinement::with_mechanism(options, mechanism))
        .unwrap_or_else(|error| panic!("{} cannot confine here: {error}", mechanism.as_str()))
}

fn secrets_are_hidden_and_writes_stay_inside(
    runtime: &tokio::runtime::Runtime,
    mechanism: Mechanism,
) {
    let place = Place::new();
    let confinement = confine(
        runtime,
        &place.options(SandboxMode::WorkspaceWrite),
        mechanism,
    );
    assert_eq!(confinement.mechanism(), mechanism);
    let home = place.home.display();
    let read = bash(
        &confinement,
        &place.workspace,
        &format!("cat {home}/.ssh/id_ed25519; cat {home}/.netrc; echo done"),
    );
    let stdout = String::from_utf8_lossy(&read.stdout);
    assert!(stdout.contains("done"), "the script ran: {read:?}");
    assert!(
        !stdout.contains("PRIVATE-KEY-42") && !stdout.contains("NETRC-42"),
        "{stdout}"
    );

    let outside = place.outside.join("escaped.txt");
    let write = bash(
        &confinement,
        &place.workspace,
        &format!(
            "echo out > {}; echo in > inside.txt; echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
            outside.display()
        ),
    );
    assert!(!outside.exists(), "wrote outside the workspace: {write:?}");
    assert!(!place.home.join("x").exists());
    assert_eq!(
        std::fs::read_to_string(place.workspace.join("inside.txt"))
            .ok()
            .as_deref(),
        Some("in\n"),
        "{write:?}"
    );
    assert_eq!(String::from_utf8_lossy(&write.stdout), "tmp\n", "{write:?}");
    assert!(write.status.success(), "{write:?}");
}

fn read_only_writes_nowhere_but_tmp(runtime: &tokio::runtime::Runtime, mechanism: Mechanism) {
    read_only_in(runtime, mechanism, &Place::new());
    read_only_in(runtime, mechanism, &Place::new_in(&std::env::temp_dir()));
}

fn read_only_in(runtime: &tokio::runtime::Runtime, mechanism: Mechanism, place: &Place) {
    let confinement = confine(runtime, &place.options(SandboxMode::ReadOnly), mechanism);
    std::fs::write(place.workspace.join("given.txt"), "given\n").expect("write");
    let out = bash(
        &confinement,
        &place.workspace,
        "cat given.txt; echo new > new.txt; echo t > \"$TMPDIR/t\" && echo tmp-ok",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("given\n"), "{out:?}");
    assert!(stdout.contains("tmp-ok"), "{out:?}");
    assert!(!place.workspace.join("new.txt").exists(), "{out:?}");
}

/// Connects from a confined bash to a listener of this process; whether it was reached.
fn reaches_the_network(confinement: &Confinement, cwd: &Path) -> bool {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let out = bash(
        confinement,
        cwd,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo sent >&3 && echo connected"),
    );
    // The script has ended: a connection it made is queued on the listener by now.
    let reached = match listener.accept() {
        Ok((mut stream, _)) => {
            stream.set_nonblocking(false).expect("blocking");
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            let mut text = String::new();
            let _ = stream.read_to_string(&mut text);
            text == "sent\n"
        }
        Err(_) => false,
    };
    let connected = String::from_utf8_lossy(&out.stdout).contains("connected");
    assert_eq!(reached, connected, "{out:?}");
    reached
}

fn the_network_is_off_unless_allowed(runtime: &tokio::runtime::Runtime, mechanism: Mechanism) {
    let place = Place::new();
    let off = confine(
        runtime,
        &place.options(SandboxMode::WorkspaceWrite),
        mechanism,
    );
    assert!(!off.network_allowed());
    assert!(!reaches_the_network(&off, &place.workspace));
    let on = confine(
        runtime,
        &ConfinementOptions {
            network: true,
            ..place.options(SandboxMode::WorkspaceWrite)
        },
        mechanism,
    );
    assert!(on.network_allowed());
    assert!(reaches_the_network(&on, &place.workspace));
}

fn full_access_is_no_confinement(runtime: &tokio::runtime::Runtime) {
    let place = Place::new();
    let none = runtime
        .block_on(Confinement::new(&place.options(SandboxMode::FullAccess)))
        .expect("full access needs nothing");
    assert!(none.is_none());
    let default = runtime
        .block_on(Confinement::new(
            &place.options(SandboxMode::WorkspaceWrite),
        ))
        .expect("this machine confines")
        .expect("workspace-write confines");
    assert_eq!(
        default.mechanism(),
        Mechanism::Bubblewrap,
        "bubblewrap is preferred"
    );
}

fn landlock_refuses_a_workspace_holding_a_secret(runtime: &tokio::runtime::Runtime) {
    let place = Place::new();
    let options = ConfinementOptions {
        hidden: vec![place.workspace.join(".ssh")],
        ..place.options(SandboxMode::WorkspaceWrite)
    };
    std::fs::create_dir(place.workspace.join(".ssh")).expect("mkdir");
    let error = runtime
        .block_on(Confinement::with_mechanism(&options, Mechanism::Landlock))
        .expect_err("Landlock cannot hide inside a writable directory");
    let message = error.to_string();
    assert!(
        message.contains(".ssh") && message.contains("full-access"),
        "{message}"
    );
}

fn main() -> ExitCode {
    if let Some(code) = shim_main() {
        return code;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut tests: Vec<(String, Box<dyn Fn()>)> = Vec::new();
    for mechanism in [Mechanism::Bubblewrap, Mechanism::Landlock] {
        let name = mechanism.as_str();
        let rt = &runtime;
        tests.push((
            format!("{name}: secrets hidden, writes inside"),
            Box::new(move || secrets_are_hidden_and_writes_stay_inside(rt, mechanism)),
        ));
        tests.push((
            format!("{name}: read-only"),
            Box::new(move || read_only_writes_nowhere_but_tmp(rt, mechanism)),
        ));
        tests.push((
            format!("{name}: network"),
            Box::new(move || the_network_is_off_unless_allowed(rt, mechanism)),
        ));
    }
    let rt = &runtime;
    tests.push((
        "full access".into(),
        Box::new(move || full_access_is_no_confinement(rt)),
    ));
    tests.push((
        "landlock: secret in the workspace".into(),
        Box::new(move || landlock_refuses_a_workspace_holding_a_secret(rt)),
    ));
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failed = 0;
    for (name, test) in &tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(test)) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
