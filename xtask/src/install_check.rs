//! `cargo xtask install-check`: the `openmanus` binary installs the way users of Rust tools
//! install it — `cargo install --path crates/openmanus-cli --locked` into a temporary root —
//! and that installed binary's `openmanus demo` (no API key, no network) succeeds in a
//! temporary directory and leaves the file the demo's task asks for.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, run, say, workspace_root};

/// What the demo's script makes its `hello.py` print in the end (`crates/openmanus-cli/src/
/// demo.rs`).
const DEMO_GREETING: &str = "Hello from openmanus-rs!";

/// Installs, runs the demo, and removes the temporary directory whatever happened.
pub(crate) fn install_check() -> Result<()> {
    let scratch =
        std::env::temp_dir().join(format!("openmanus-install-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let result = check_in(&scratch);
    if let Err(error) = std::fs::remove_dir_all(&scratch) {
        say(&format!(
            "install check: could not remove {}: {error}",
            scratch.display()
        ));
    }
    result
}

fn check_in(scratch: &Path) -> Result<()> {
    let root = scratch.join("root");
    let run_dir = scratch.join("run");
    // The demo's own home: no configuration, history or store of the user is read or written.
    let home = scratch.join("home");
    for dir in [&root, &run_dir, &home] {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let mut install = cargo(&["install", "--locked", "--path"]);
    install
        .arg(workspace_root().join("crates").join("openmanus-cli"))
        .arg("--root")
        .arg(&root);
    run(
        "cargo install --path crates/openmanus-cli --locked (temporary root)",
        install,
    )?;
    let binary = root.join("bin").join("openmanus");
    if !binary.is_file() {
        bail!("cargo install succeeded but left no {}", binary.display());
    }
    let mut demo = Command::new(&binary);
    demo.arg("demo")
        .current_dir(&run_dir)
        .stdin(Stdio::null())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"));
    run("openmanus demo (the installed binary)", demo)?;
    let script = run_dir.join("workspace").join("hello.py");
    let written = std::fs::read_to_string(&script)
        .with_context(|| format!("the demo left no {}", script.display()))?;
    if !written.contains(DEMO_GREETING) {
        bail!(
            "the demo's {} does not have the changed greeting {DEMO_GREETING:?}: {written:?}",
            script.display()
        );
    }
    say(&format!(
        "install check: the installed openmanus ran its demo and wrote {}",
        script.display()
    ));
    Ok(())
}
