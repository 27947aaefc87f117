//! A session's modes and configuration options: the approval policy (`session/set_mode`, the
//! `mode` option) and the agent kind that continues the conversation (the `agent` option, or a
//! mode named after a kind), and switching them.

use std::sync::{Arc, Mutex};

use agent_config::ApprovalPolicy;
use agent_session::Target;
use agents::AgentKind;
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::info;

use crate::permission::Asking;
use crate::rpc::{Outbox, RpcError, code};
use crate::{AcpAgent, Slot, lock, no_session};

/// `session/set_mode`'s parameters.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetMode {
    session_id: String,
    mode_id: String,
}

/// `session/set_config_option`'s parameters (a select's value: the boolean options are not
/// offered).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetConfigOption {
    session_id: String,
    config_id: String,
    value: Value,
}

impl AcpAgent {
    /// `session/set_mode`: the session's approval policy from now on, its run included; or,
    /// for editors without configuration options, a mode that names an agent kind (`swe`,
    /// `flow`, ...) switches the session's agent as the `agent` option does.
    pub(crate) async fn set_mode(
        &self,
        request: SetMode,
        outbox: &Outbox,
    ) -> Result<Value, RpcError> {
        if let Ok(policy) = request.mode_id.parse::<ApprovalPolicy>() {
            self.set_approval(&request.session_id, policy)?;
        } else if let Some(target) = self.offered_target(&request.mode_id) {
            self.switch_agent(&request.session_id, target, outbox)
                .await?;
        } else {
            return Err(RpcError::invalid_params(format!(
                "no mode {:?}: untrusted, on-request or never (or an agent: {})",
                request.mode_id,
                self.offered_targets()
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(json!({}))
    }

    /// `session/set_config_option`: `agent` switches the session's agent kind (its
    /// conversation kept), `mode` its approval policy; answers every option as it now stands.
    pub(crate) async fn set_config_option(
        &self,
        request: SetConfigOption,
        outbox: &Outbox,
    ) -> Result<Value, RpcError> {
        let id = &request.session_id;
        let value = request.value.as_str().ok_or_else(|| {
            RpcError::invalid_params(format!(
                "the value of {:?} is one of its options' ids, a string",
                request.config_id
            ))
        })?;
        match request.config_id.as_str() {
            AGENT_OPTION => {
                let target = self.offered_target(value).ok_or_else(|| {
                    RpcError::invalid_params(format!("no agent {value:?} to switch to"))
                })?;
                self.switch_agent(id, target, outbox).await?;
            }
            MODE_OPTION => {
                let policy = value.parse::<ApprovalPolicy>().map_err(|_| {
                    RpcError::invalid_params(format!(
                        "no mode {value:?}: untrusted, on-request or never"
                    ))
                })?;
                self.set_approval(id, policy)?;
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "no option {other:?}: {AGENT_OPTION} or {MODE_OPTION}"
                )));
            }
        }
        let slot = self.open_slot(id, outbox).await?;
        let target = slot
            .session
            .try_lock()
            .map_or(self.target, |session| session.target());
        let state = self.session_state(target, slot.approval.get());
        Ok(json!({ "configOptions": state["configOptions"] }))
    }

    /// The session's approval policy from now on, its run included.
    fn set_approval(&self, id: &str, policy: ApprovalPolicy) -> Result<(), RpcError> {
        self.slot(id)?.approval.set(policy);
        info!(session = %id, mode = %policy, "ACP mode set");
        Ok(())
    }

    /// Continues the session `id` with an agent of `target`, its workspace, conversation,
    /// mode and the editor's MCP servers kept; only between prompts. A recorded session whose
    /// new agent cannot be built is left as it was (and opens again at its next prompt).
    async fn switch_agent(
        &self,
        id: &str,
        target: Target,
        outbox: &Outbox,
    ) -> Result<(), RpcError> {
        let slot = self.open_slot(id, outbox).await?;
        drop(slot);
        // Taken out of the map when nothing else holds it (no prompt, question or cancel).
        let slot = {
            let mut sessions = lock(&self.sessions);
            match sessions.get(id) {
                Some(slot) if Arc::strong_count(slot) == 1 => sessions.remove(id),
                Some(_) => None,
                None => return Err(no_session(id)),
            }
        };
        let Some(Ok(slot)) = slot.map(Arc::try_unwrap) else {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                "this session is running a prompt; its agent can change once it is answered",
            ));
        };
        let Slot {
            session,
            cancel,
            approval,
            servers,
            recorded,
            used,
        } = slot;
        let mut session = session.into_inner();
        let asking = Arc::new(Mutex::new(Asking::default()));
        let factory = self.session_factory(
            session.workspace(),
            servers.clone(),
            outbox,
            &asking,
            &approval,
        );
        match session.switch(&factory, target).await {
            Ok(()) => {
                info!(session = %id, agent = %target, "ACP session switched its agent");
                self.keep(session, id, outbox, &asking, approval, servers)
                    .await;
                Ok(())
            }
            Err(error) => {
                // As it was: the same slot, its questions and updates wired as before.
                let slot = Slot {
                    session: tokio::sync::Mutex::new(session),
                    cancel,
                    approval,
                    servers,
                    recorded,
                    used,
                };
                lock(&self.sessions).insert(id.to_owned(), Arc::new(slot));
                Err(RpcError::internal(format!(
                    "cannot switch to the {target} agent: {error}"
                )))
            }
        }
    }

    /// What the editor may switch a session to: the agent kinds this build makes (the MCP
    /// agent only when it has its server), and the planning flow.
    fn offered_targets(&self) -> Vec<Target> {
        AgentKind::ALL
            .into_iter()
            .filter(|kind| self.factory.builds(*kind))
            .map(Target::Agent)
            .chain([Target::Flow])
            .collect()
    }

    /// The offered target named `name`.
    fn offered_target(&self, name: &str) -> Option<Target> {
        self.offered_targets()
            .into_iter()
            .find(|target| target.as_str() == name)
    }

    /// A session's modes and configuration options, as `session/new` and `session/load`
    /// answer them.
    pub(crate) fn session_state(&self, target: Target, approval: ApprovalPolicy) -> Value {
        json!({
            "modes": modes(approval),
            "configOptions": [
                select(
                    AGENT_OPTION,
                    "Agent",
                    "Which agent continues the conversation",
                    None,
                    target.as_str(),
                    self.offered_targets()
                        .into_iter()
                        .map(|t| (t.as_str(), target_name(t), target_description(t)))
                        .collect(),
                ),
                select(
                    MODE_OPTION,
                    "Approval",
                    "When the agent asks before it acts",
                    Some("mode"),
                    approval.as_str(),
                    ApprovalPolicy::ALL
                        .iter()
                        .map(|p| {
                            let (name, description) = describe_policy(*p);
                            (p.as_str(), name, description)
                        })
                        .collect(),
                ),
            ],
        })
    }
}

/// The configuration option that switches the agent kind.
const AGENT_OPTION: &str = "agent";
/// The configuration option that sets the approval policy (the same as the modes).
const MODE_OPTION: &str = "mode";

/// A policy's name and description, as the editor shows them.
fn describe_policy(policy: ApprovalPolicy) -> (&'static str, &'static str) {
    match policy {
        ApprovalPolicy::Untrusted => (
            "Ask before code",
            "Asks before any command or code that is not known to be harmless",
        ),
        ApprovalPolicy::OnRequest => (
            "Ask when the sandbox refuses",
            "Runs confined; asks when a call needs more than the sandbox allows",
        ),
        ApprovalPolicy::Never => (
            "Never ask",
            "Runs confined; what the sandbox refuses stays refused",
        ),
    }
}

/// A target's name in the editor's menu.
fn target_name(target: Target) -> &'static str {
    match target {
        Target::Agent(kind) => kind.agent_name(),
        Target::Flow => "Planning flow",
    }
}

/// A target's description in the editor's menu.
fn target_description(target: Target) -> &'static str {
    match target {
        Target::Agent(kind) => kind.description(),
        Target::Flow => "Plans the task in steps and hands each to an agent",
    }
}

/// A `select` configuration option (`SessionConfigOption`): `options` as (value, name,
/// description), `current` selected.
fn select(
    id: &str,
    name: &str,
    description: &str,
    category: Option<&str>,
    current: &str,
    options: Vec<(&str, &str, &str)>,
) -> Value {
    let options: Vec<Value> = options
        .into_iter()
        .map(|(value, name, description)| {
            json!({ "value": value, "name": name, "description": description })
        })
        .collect();
    let mut option = json!({
        "id": id, "name": name, "description": description, "type": "select",
        "currentValue": current, "options": options,
    });
    if let Some(category) = category {
        option["category"] = json!(category);
    }
    option
}

/// The session's modes (`SessionModeState`): the approval policies, `current` selected.
fn modes(current: ApprovalPolicy) -> Value {
    let available: Vec<Value> = ApprovalPolicy::ALL
        .iter()
        .map(|policy| {
            let (name, description) = describe_policy(*policy);
            json!({ "id": policy.as_str(), "name": name, "description": description })
        })
        .collect();
    json!({ "currentModeId": current.as_str(), "availableModes": available })
}
