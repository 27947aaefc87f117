//! The Agent Card: who the agent is, where it answers, what it can do. One card serves both
//! dialects: `supportedInterfaces` for 1.0 clients (one interface per protocol version, the
//! same URL), `url`/`protocolVersion`/`preferredTransport` for 0.2/0.3 clients.

use serde_json::{Value, json};

use crate::codec::{PROTOCOL_LEGACY, PROTOCOL_V1};

/// One thing the agent can do (here: one of its tools).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Keywords.
    pub tags: Vec<String>,
}

/// What a card says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardInfo {
    /// The agent's name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Its version.
    pub version: String,
    /// The URL of its JSON-RPC endpoint.
    pub url: String,
    /// Whether it streams (`message/stream`).
    pub streaming: bool,
    /// What it can do.
    pub skills: Vec<Skill>,
    /// Whether requests need `Authorization: Bearer <token>`.
    pub bearer: bool,
    /// Whether it posts push notifications of a task's changes to a client's URL.
    pub push_notifications: bool,
}

/// The card as JSON.
#[must_use]
pub fn agent_card(info: &CardInfo) -> Value {
    let skills: Vec<Value> = info
        .skills
        .iter()
        .map(|skill| {
            json!({
                "id": skill.id,
                "name": skill.name,
                "description": skill.description,
                "tags": skill.tags,
                "inputModes": ["text/plain"],
                "outputModes": ["text/plain"],
            })
        })
        .collect();
    let mut card = json!({
        "name": info.name,
        "description": info.description,
        "version": info.version,
        "url": info.url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": PROTOCOL_LEGACY,
        "supportedInterfaces": [
            {"url": info.url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_V1},
            {"url": info.url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "capabilities": {
            "streaming": info.streaming,
            "pushNotifications": info.push_notifications,
            "stateTransitionHistory": false,
        },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
    });
    if info.bearer {
        card["securitySchemes"] = json!({
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "the server's token (OPENMANUS_SERVER_TOKEN)"
            }
        });
        card["security"] = json!([{ "bearer": [] }]);
    }
    card
}

/// The JSON-RPC URL of a card, from `supportedInterfaces` (preferring 1.0) or `url`, with the
/// dialect to speak there.
#[must_use]
pub fn endpoint_of(card: &Value) -> Option<(String, crate::Dialect)> {
    let interfaces = card["supportedInterfaces"].as_array();
    let jsonrpc = |version_ok: &dyn Fn(&str) -> bool| {
        interfaces.and_then(|list| {
            list.iter().find_map(|i| {
                let binding = i["protocolBinding"].as_str().unwrap_or("JSONRPC");
                let version = i["protocolVersion"].as_str().unwrap_or_default();
                (binding.eq_ignore_ascii_case("JSONRPC") && version_ok(version))
                    .then(|| i["url"].as_str().map(str::to_owned))
                    .flatten()
            })
        })
    };
    if let Some(url) = jsonrpc(&|v| v == "1.0" || v.starts_with("1.")) {
        return Some((url, crate::Dialect::V1));
    }
    if let Some(url) = jsonrpc(&|v| v.starts_with("0.")) {
        return Some((url, crate::Dialect::Legacy));
    }
    card["url"]
        .as_str()
        .map(|url| (url.to_owned(), crate::Dialect::Legacy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_serves_both_dialects() {
        let info = CardInfo {
            name: "OpenManus".into(),
            description: "d".into(),
            version: "0.1.0".into(),
            url: "http://127.0.0.1:1/a2a".into(),
            streaming: true,
            skills: vec![],
            bearer: true,
            push_notifications: true,
        };
        let card = agent_card(&info);
        assert_eq!(card["security"][0]["bearer"], json!([]));
        assert_eq!(card["capabilities"]["pushNotifications"], true);
        assert_eq!(
            endpoint_of(&card),
            Some(("http://127.0.0.1:1/a2a".into(), crate::Dialect::V1))
        );
        let legacy = json!({"url": "http://x/"});
        assert_eq!(
            endpoint_of(&legacy),
            Some(("http://x/".into(), crate::Dialect::Legacy))
        );
    }
}
