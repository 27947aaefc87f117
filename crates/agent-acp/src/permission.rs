//! The person in the editor: the approval policy's questions go to the editor as
//! `session/request_permission`, about the tool call that asks, with the policy's answers as the
//! options (`once` → allow once, `session` and `always` → allow always, `deny` → reject once).
//! Once asked, anything but an option the editor chose is a refusal.
//! ACP has no free-text question: `ask_human` is answered "nobody".

use std::sync::{Arc, Mutex, PoisonError};

use agent_tools::{Choice, HumanInput, ToolError};
use async_trait::async_trait;
use serde_json::{Value, json};
use tracing::{info, warn};

use crate::rpc::Outbox;

/// What the questions of one session need to know: the session, and the call running now.
#[derive(Debug, Default)]
pub struct Asking {
    /// The session's id (set once it is started).
    pub session: Option<String>,
    /// The tool call that runs now (the one a question is about): its id and title.
    pub call: Option<(String, String)>,
}

/// The editor, asked through `outbox`.
pub struct EditorInput {
    outbox: Outbox,
    asking: Arc<Mutex<Asking>>,
}

impl EditorInput {
    /// Questions of the session `asking` describes, sent through `outbox`.
    #[must_use]
    pub fn new(outbox: Outbox, asking: Arc<Mutex<Asking>>) -> Self {
        Self { outbox, asking }
    }
}

/// The ACP kind of one of the policy's answers.
fn option_kind(answer: &str) -> &'static str {
    match answer {
        "once" | "yes" => "allow_once",
        "session" | "always" => "allow_always",
        "never" => "reject_always",
        _ => "reject_once",
    }
}

#[async_trait]
impl HumanInput for EditorInput {
    async fn ask(&self, inquire: &str) -> Result<Option<String>, ToolError> {
        info!(question = inquire, "ask_human in an editor: nobody answers");
        Ok(None)
    }

    async fn choose(&self, inquire: &str, choices: &[Choice]) -> Result<Option<String>, ToolError> {
        let (session, call) = {
            let asking = self.asking.lock().unwrap_or_else(PoisonError::into_inner);
            (asking.session.clone(), asking.call.clone())
        };
        let Some(session) = session else {
            return Ok(None);
        };
        let (call_id, title) = match call {
            Some(call) => call,
            None => {
                // No call runs (a question from elsewhere): the editor is first told of the
                // call the question is about, so that its id names one.
                let (id, title) = ("permission".to_owned(), "a tool call".to_owned());
                self.outbox.notify(
                    "session/update",
                    json!({ "sessionId": session, "update": {
                        "sessionUpdate": "tool_call",
                        "toolCallId": id,
                        "title": title,
                        "kind": "other",
                        "status": "pending",
                    }}),
                );
                (id, title)
            }
        };
        let options: Vec<Value> = choices
            .iter()
            .map(|c| json!({ "optionId": c.answer, "name": c.label, "kind": option_kind(&c.answer) }))
            .collect();
        let params = json!({
            "sessionId": session,
            "toolCall": {
                "toolCallId": call_id,
                "title": title,
                "content": [{ "type": "content", "content": { "type": "text", "text": inquire } }],
            },
            "options": options,
        });
        let answer = self
            .outbox
            .request("session/request_permission", params)
            .await;
        // Once the editor was asked, only an option it chose allows; anything else (cancelled,
        // an error, an option it was not offered, the editor gone) is a refusal, never
        // "nobody is there" (which lets the sandbox decide, and runs the call).
        let refusal = || {
            choices
                .iter()
                .find(|c| option_kind(&c.answer).starts_with("reject"))
                .map(|c| c.answer.clone())
        };
        match answer {
            Ok(Ok(result)) if result["outcome"]["outcome"] == "selected" => {
                let chosen = result["outcome"]["optionId"].as_str().unwrap_or_default();
                if choices.iter().any(|c| c.answer == chosen) {
                    Ok(Some(chosen.to_owned()))
                } else {
                    warn!(
                        chosen,
                        "the editor chose an option it was not offered: refused"
                    );
                    Ok(refusal())
                }
            }
            Ok(Ok(_)) => Ok(refusal()),
            Ok(Err(error)) => {
                warn!(code = error.code, %error.message, "the editor refused the question");
                Ok(refusal())
            }
            Err(_) => Ok(refusal()),
        }
    }
}
