//! `openmanus completions SHELL`: the shell's completion script for every command and flag,
//! generated from the argument definitions (clap_complete), on standard output.

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GlobalArgs};
use crate::output::EXIT_OK;

/// Writes the completion script for `shell` on standard output.
///
/// # Errors
///
/// `--json` (a shell script is not JSON: refused rather than ignored); standard output cannot
/// be written.
pub fn generate(global: &GlobalArgs, shell: Shell) -> Result<u8> {
    use std::io::Write;
    if global.json {
        anyhow::bail!("completions prints a shell script, not JSON: drop --json");
    }
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "openmanus", &mut script);
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&script)
        .and_then(|()| stdout.flush())
        .context("cannot write the completion script")?;
    Ok(EXIT_OK)
}
