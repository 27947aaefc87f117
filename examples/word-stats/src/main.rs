//! Runs the word-stats agent against any OpenAI-compatible endpoint:
//! `word-stats-agent <base_url> <model> <text>` (the key comes from `OPENAI_API_KEY`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;

use agent_core::Agent;
use agent_llm::{LlmClient, LlmSettings};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base_url, model, text] = args.as_slice() else {
        eprintln!("usage: word-stats-agent <base_url> <model> <text>");
        return std::process::ExitCode::from(2);
    };
    let settings = LlmSettings::new(model, base_url)
        .with_api_key(std::env::var("OPENAI_API_KEY").unwrap_or_default());
    let client = match LlmClient::new(settings) {
        Ok(client) => client,
        Err(error) => {
            eprintln!("error: {error}");
            return std::process::ExitCode::from(1);
        }
    };
    let mut agent = word_stats_agent::word_stats_agent(Arc::new(client));
    match agent
        .run(Some(format!("How many words are in this text? {text}")))
        .await
    {
        Ok(outcome) => {
            // The answer the model gave when it finished; the step transcript when it gave none.
            match outcome.answer() {
                Some(answer) => println!("{answer}"),
                None => println!("{}", outcome.text()),
            }
            std::process::ExitCode::from(u8::from(!outcome.is_finished()))
        }
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::from(1)
        }
    }
}
