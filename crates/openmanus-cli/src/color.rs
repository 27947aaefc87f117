//! Whether the terminal view may use colour and animation: `--color`, `NO_COLOR`
//! (<https://no-color.org>) and `TERM=dumb`, decided once at start-up for the live view, the
//! report and the log lines alike.

use std::io::IsTerminal;
use std::sync::OnceLock;

use clap::ValueEnum;

/// `--color`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless NO_COLOR is set or TERM is `dumb`.
    #[default]
    Auto,
    /// Colour even when the output is not a terminal.
    Always,
    /// No colour, and no escape codes at all.
    Never,
}

/// What the terminal allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminal {
    /// Escape codes for colour and styles on standard error.
    pub colour: bool,
    /// A spinner redrawn in place on standard error (a terminal that is not `dumb`).
    pub animate: bool,
}

static TERMINAL: OnceLock<Terminal> = OnceLock::new();

impl Terminal {
    /// Decides from `choice` and the environment.
    pub fn decide(
        choice: ColorChoice,
        stderr_is_terminal: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let dumb = env("TERM").is_some_and(|term| term == "dumb");
        let no_color = env("NO_COLOR").is_some_and(|value| !value.is_empty());
        let colour = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stderr_is_terminal && !dumb && !no_color,
        };
        Self {
            colour,
            animate: stderr_is_terminal && !dumb,
        }
    }
}

/// Decides once, from `--color` and the process's environment.
pub fn init(choice: ColorChoice) -> Terminal {
    *TERMINAL.get_or_init(|| {
        Terminal::decide(choice, std::io::stderr().is_terminal(), |name| {
            std::env::var(name).ok()
        })
    })
}

/// What was decided (before [`init`]: no colour, no animation).
pub fn terminal() -> Terminal {
    TERMINAL.get().copied().unwrap_or(Terminal {
        colour: false,
        animate: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(choice: ColorChoice, tty: bool, vars: &[(&str, &str)]) -> Terminal {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Terminal::decide(choice, tty, move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn no_color_and_dumb_terminals_turn_colour_off() {
        let on = decide(ColorChoice::Auto, true, &[("TERM", "xterm")]);
        assert!(on.colour && on.animate);
        let no_color = decide(ColorChoice::Auto, true, &[("NO_COLOR", "1")]);
        assert!(!no_color.colour && no_color.animate);
        // An empty NO_COLOR does not count (no-color.org).
        assert!(decide(ColorChoice::Auto, true, &[("NO_COLOR", "")]).colour);
        let dumb = decide(ColorChoice::Auto, true, &[("TERM", "dumb")]);
        assert!(!dumb.colour && !dumb.animate);
        assert!(!decide(ColorChoice::Auto, false, &[]).colour);
    }

    #[test]
    fn the_flag_wins_over_the_environment() {
        assert!(decide(ColorChoice::Always, false, &[("NO_COLOR", "1")]).colour);
        assert!(!decide(ColorChoice::Never, true, &[]).colour);
        assert!(!decide(ColorChoice::Always, false, &[]).animate);
    }
}
