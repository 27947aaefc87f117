//! `openmanus config init`: writes a commented starting configuration, by default the per-user
//! one (`~/.config/openmanus/config.toml`). Asks the provider, the model and where the key comes
//! from when standard input is a terminal and the flags do not say; otherwise uses the flags and
//! each provider's defaults.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;

use crate::output::{EXIT_OK, say};

/// The providers `config init` knows how to set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Provider {
    /// OpenAI (api.openai.com).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
    /// A local Ollama server (no key).
    Ollama,
    /// DeepSeek (OpenAI-compatible).
    Deepseek,
    /// OpenRouter (OpenAI-compatible).
    Openrouter,
    /// Azure OpenAI.
    Azure,
    /// Amazon Bedrock (credentials from the AWS environment).
    Bedrock,
}

/// What one provider needs in `[llm]`.
struct Defaults {
    api_type: Option<&'static str>,
    model: &'static str,
    base_url: &'static str,
    /// The environment variable the key is read from (`None`: the provider takes no key here).
    key_env: Option<&'static str>,
    max_tokens: u32,
}

impl Provider {
    fn defaults(self) -> Defaults {
        let d = |api_type, model, base_url, key_env, max_tokens| Defaults {
            api_type,
            model,
            base_url,
            key_env,
            max_tokens,
        };
        match self {
            Self::Openai => d(
                None,
                "gpt-4o",
                "https://api.openai.com/v1",
                Some("OPENAI_API_KEY"),
                4096,
            ),
            Self::Anthropic => d(
                Some("anthropic"),
                "claude-sonnet-4-5-20250929",
                "https://api.anthropic.com",
                Some("ANTHROPIC_API_KEY"),
                8192,
            ),
            Self::Ollama => d(
                Some("ollama"),
                "llama3.2",
                "http://localhost:11434/v1",
                None,
                4096,
            ),
            Self::Deepseek => d(
                None,
                "deepseek-chat",
                "https://api.deepseek.com/v1",
                Some("DEEPSEEK_API_KEY"),
                8192,
            ),
            Self::Openrouter => d(
                None,
                "openai/gpt-4o",
                "https://openrouter.ai/api/v1",
                Some("OPENROUTER_API_KEY"),
                4096,
            ),
            Self::Azure => d(
                Some("azure"),
                "gpt-4o",
                "${AZURE_OPENAI_ENDPOINT}",
                Some("AZURE_OPENAI_API_KEY"),
                4096,
            ),
            Self::Bedrock => d(
                Some("aws"),
                "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
                "",
                None,
                8192,
            ),
        }
    }

    fn name(self) -> String {
        self.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_owned())
    }
}

/// The flags of `config init`.
#[derive(Debug, Clone, clap::Args)]
pub struct InitArgs {
    /// The provider (asked when standard input is a terminal; default openai).
    #[arg(long, value_enum)]
    pub provider: Option<Provider>,
    /// The environment variable the API key is read from (default: the provider's, e.g.
    /// OPENAI_API_KEY). The key itself is never written to the file.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The API's base URL (default: the provider's).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Write this file instead of the per-user one.
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// Replace the file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Never ask; use the flags and the provider's defaults.
    #[arg(long)]
    pub yes: bool,
}

/// The answers: what goes into the file.
struct Choices {
    provider: Provider,
    model: String,
    base_url: String,
    key_env: Option<String>,
}

/// `openmanus config init`.
///
/// # Errors
///
/// No per-user directory is known (no `HOME`), the file exists (without `--force`), or it
/// cannot be written.
///
/// `model` is the global `--model` (the default model offered), `json` the global `--json`.
pub fn init(args: &InitArgs, model: Option<&str>, json: bool) -> Result<u8> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let path = match &args.path {
        Some(path) => cwd.join(path),
        None => agent_config::ConfigLoader::new(&cwd)
            .user_config_path()
            .context(
                "no per-user configuration directory: neither XDG_CONFIG_HOME nor HOME is set; \
                 pass --path FILE",
            )?,
    };
    if path.exists() && !args.force {
        bail!(
            "{} already exists; pass --force to replace it, or --path FILE to write another",
            path.display()
        );
    }
    let ask = !args.yes && args.provider.is_none() && std::io::stdin().is_terminal();
    let choices = if ask {
        ask_choices(args, model)?
    } else {
        let provider = args.provider.unwrap_or(Provider::Openai);
        let defaults = provider.defaults();
        Choices {
            provider,
            model: model.unwrap_or(defaults.model).to_owned(),
            base_url: args
                .base_url
                .clone()
                .unwrap_or_else(|| defaults.base_url.to_owned()),
            key_env: args
                .api_key_env
                .clone()
                .or_else(|| defaults.key_env.map(str::to_owned)),
        }
    };
    if let Some(var) = &choices.key_env
        && (var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        bail!("`{var}` is not an environment variable name");
    }
    let text = render(&choices);
    // What we write must load: check it before it lands (the key variable may be unset here).
    agent_config::ConfigLoader::new(&cwd)
        .with_env(|_| Some("set".to_owned()))
        .parse_str(&text)
        .context("the configuration to write does not load (a bug)")?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    if json {
        say(&serde_json::json!({"type": "config_written", "path": path,
                                "provider": choices.provider.name(), "model": choices.model,
                                "base_url": choices.base_url, "api_key_env": choices.key_env})
        .to_string());
    } else {
        say(&format!("wrote {}", path.display()));
        say(&next_steps(&choices, &path));
    }
    Ok(EXIT_OK)
}

fn next_steps(choices: &Choices, path: &Path) -> String {
    let mut out = String::from("next:");
    if let Some(var) = &choices.key_env {
        let _ = write!(out, "\n  export {var}=...        # your API key");
    }
    if choices.provider == Provider::Ollama {
        let _ = write!(out, "\n  ollama pull {}", choices.model);
    }
    let _ = write!(
        out,
        "\n  openmanus config check   # shows the settings it loads\n  openmanus demo           \
         # a first run that needs no key\n  openmanus -p \"...\"      # a real task\n\
         Edit {} for more (every key is described in it).",
        path.display()
    );
    out
}

/// Asks on the terminal; Enter keeps the default shown in brackets.
fn ask_choices(args: &InitArgs, model: Option<&str>) -> Result<Choices> {
    let names: Vec<String> = Provider::value_variants()
        .iter()
        .map(|p| p.name())
        .collect();
    let provider = loop {
        let answer = ask(&format!("Provider ({})", names.join(", ")), "openai")?;
        match Provider::from_str(&answer, true) {
            Ok(provider) => break provider,
            Err(_) => crate::output::note(&format!("  not one of: {}", names.join(", "))),
        }
    };
    let defaults = provider.defaults();
    let model = ask("Model", model.unwrap_or(defaults.model))?;
    let base_url = match &args.base_url {
        Some(url) => url.clone(),
        None => ask("Base URL", defaults.base_url)?,
    };
    let key_env = match (&args.api_key_env, defaults.key_env) {
        (Some(var), _) => Some(var.clone()),
        (None, Some(default)) => Some(ask("Environment variable holding the API key", default)?),
        (None, None) => None,
    };
    Ok(Choices {
        provider,
        model,
        base_url,
        key_env,
    })
}

fn ask(question: &str, default: &str) -> Result<String> {
    use std::io::{BufRead, Write};
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "{question} [{default}]: ");
    let _ = stderr.flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the answer")?;
    let answer = line.trim();
    Ok(if answer.is_empty() {
        default.to_owned()
    } else {
        answer.to_owned()
    })
}

/// A TOML string literal.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The file: `[llm]` filled in, every other section commented out with its default.
fn render(choices: &Choices) -> String {
    let defaults = choices.provider.defaults();
    let mut out = format!(
        "# openmanus configuration, written by `openmanus config init --provider {}`.\n\
         #\n\
         # Lookup order: --config FILE, $OPENMANUS_CONFIG, ./config/config.toml, this per-user\n\
         # file, then ./config/config.example.toml. Any key can be overridden for one run with\n\
         # -c KEY=VALUE (e.g. -c llm.temperature=0.2), the model with --model NAME.\n\
         # A string written \"${{NAME}}\" is read from the environment variable NAME. Unknown keys\n\
         # are errors, so typos are caught. `openmanus config check` shows what is loaded.\n\n\
         # The default model: every agent uses it unless an [llm.<agent>] section says otherwise.\n\
         [llm]\n",
        choices.provider.name()
    );
    if let Some(api_type) = defaults.api_type {
        let _ = writeln!(out, "api_type = {}", quoted(api_type));
    }
    let _ = writeln!(out, "model = {}", quoted(&choices.model));
    if choices.provider == Provider::Azure {
        let _ = writeln!(
            out,
            "deployment = {}                # the deployment name, when it differs",
            quoted(&choices.model)
        );
        let _ = writeln!(out, "api_version = \"2024-10-21\"");
    }
    let _ = writeln!(out, "base_url = {}", quoted(&choices.base_url));
    match &choices.key_env {
        Some(var) => {
            let _ = writeln!(
                out,
                "api_key = {}       # read from the environment; never write the key here",
                quoted(&format!("${{{var}}}"))
            );
        }
        None if choices.provider == Provider::Bedrock => {
            out.push_str(
                "# credentials come from the AWS environment (AWS_PROFILE, AWS_REGION, ...)\n",
            );
        }
        None => out.push_str("# api_key = \"...\"                  # this server needs none\n"),
    }
    let _ = writeln!(out, "max_tokens = {}", defaults.max_tokens);
    out.push_str(
        "temperature = 0.0\n\
         # stream = true                      # show the reply as it arrives\n\
         # max_attempts = 6                   # attempts per call, the first included\n\
         # max_connect_attempts = 3           # when the server cannot be reached\n\
         # supports_images = true             # default: from the model table\n\
         \n\
         # [llm.vision]                       # the model for images (screenshots, --image)\n\
         # model = \"gpt-4o-mini\"\n\
         #\n\
         # [llm.swe]                          # one agent's own model: manus, swe, mcp_agent, ...\n\
         # model = \"o3\"\n\
         \n\
         # Settings for every agent.\n\
         # [agent]\n",
    );
    // The default agent's own budget, read where Manus declares it (every kind's is the same).
    let _ = writeln!(out, "# max_steps = {}", agents::MANUS_MAX_STEPS);
    out.push_str(
        "# workspace_root = \"workspace\"       # relative to the current directory\n\
         \n\
         # The browser the browser tool drives.\n\
         # [browser]\n\
         # headless = true\n\
         \n\
         # Web search.\n\
         # [search]\n\
         # engine = \"DuckDuckGo\"\n\
         \n\
         # What bash and python may do: read-only, workspace-write (write only in the\n\
         # workspace, secrets hidden, no network) or full-access (--sandbox MODE for one run).\n\
         # [permissions]\n\
         # sandbox = \"workspace-write\"\n\
         # network = false\n\
         \n\
         # Or run them in the sandbox (bubblewrap or Docker), with limits.\n\
         # [sandbox]\n\
         # use_sandbox = false\n\
         \n\
         # Where runs are recorded (`openmanus sessions`).\n\
         # [store]\n\
         # enabled = true\n\
         # url = \"postgres://openmanus@db.internal:5432/openmanus\"   # shared by several servers\n\
         \n\
         # MCP servers go in mcp.json beside this file (see `openmanus config check`).\n",
    );
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    #[test]
    fn every_provider_renders_a_configuration_that_loads() {
        for &provider in Provider::value_variants() {
            let defaults = provider.defaults();
            let choices = Choices {
                provider,
                model: defaults.model.to_owned(),
                base_url: defaults.base_url.to_owned(),
                key_env: defaults.key_env.map(str::to_owned),
            };
            let text = render(&choices);
            let config = agent_config::ConfigLoader::new("")
                .with_env(|name| Some(format!("value-of-{name}")))
                .parse_str(&text)
                .unwrap_or_else(|e| panic!("{provider:?}: {e}\n{text}"));
            assert_eq!(config.default_llm().model, defaults.model);
            if let Some(var) = defaults.key_env {
                assert_eq!(
                    config.default_llm().api_key.expose(),
                    format!("value-of-{var}")
                );
            }
        }
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quoted("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    }
}
