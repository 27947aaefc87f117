//! Push notifications: where a client wants to be told of a task's changes, read and written in
//! either dialect, and what one notification carries.
//!
//! * Protocol 0.2/0.3 (`tasks/pushNotificationConfig/{set,get,list,delete}`): the settings are
//!   `{taskId, pushNotificationConfig: {id, url, token, authentication: {schemes,
//!   credentials}}}`, and a notification is the task as it stands.
//! * Protocol 1.0 (`{Create,Get,List,Delete}TaskPushNotificationConfig(s)`): the settings are
//!   flat, `{taskId, id, url, token, authentication: {scheme, credentials}}`, and a notification
//!   is the stream response of the change (`{statusUpdate: …}`, `{artifactUpdate: …}`).
//!
//! Either way the token goes in `X-A2A-Notification-Token` and the authentication, when it has
//! credentials, in `Authorization: <scheme> <credentials>`. A setting without an id takes the
//! task's id.

use serde_json::{Value, json};

use crate::codec::Dialect;
use crate::rpc::RpcError;
use crate::types::{StreamEvent, Task};

/// The header that carries a setting's token.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// What a push notification request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOp {
    /// Add (or replace, by id) a setting of a task.
    Set,
    /// One setting of a task.
    Get,
    /// Every setting of a task.
    List,
    /// Remove a setting of a task.
    Delete,
}

impl PushOp {
    /// The operation of a push notification method name, in either dialect.
    #[must_use]
    pub fn of_method(name: &str) -> Option<Self> {
        Some(match name {
            "tasks/pushNotificationConfig/set" | "CreateTaskPushNotificationConfig" => Self::Set,
            "tasks/pushNotificationConfig/get" | "GetTaskPushNotificationConfig" => Self::Get,
            "tasks/pushNotificationConfig/list" | "ListTaskPushNotificationConfigs" => Self::List,
            "tasks/pushNotificationConfig/delete" | "DeleteTaskPushNotificationConfig" => {
                Self::Delete
            }
            _ => return None,
        })
    }
}

/// Where and how to tell a client of a task's changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfig {
    /// The setting's id (the task's id when the client gave none).
    pub id: String,
    /// The client's URL the notifications are posted to (`http` or `https`).
    pub url: String,
    /// Sent back in [`TOKEN_HEADER`], for the client to check.
    pub token: Option<String>,
    /// The authentication scheme (`Bearer`, …) and its credentials, for `Authorization`.
    pub authentication: Option<(String, String)>,
    /// The dialect of the client that asked: what the notifications look like.
    pub dialect: Dialect,
}

impl PushConfig {
    /// The headers of a notification: the token and the authorisation, when set.
    #[must_use]
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(token) = &self.token {
            headers.push((TOKEN_HEADER, token.clone()));
        }
        if let Some((scheme, credentials)) = &self.authentication {
            headers.push(("Authorization", format!("{scheme} {credentials}")));
        }
        headers
    }

    /// The body of the notification of `event`, for a task that now stands as `task`: the task
    /// (0.2/0.3), or the event's stream response (1.0).
    #[must_use]
    pub fn body(&self, event: &StreamEvent, task: &Task) -> Value {
        match self.dialect {
            Dialect::Legacy => Dialect::Legacy.encode_task(task),
            Dialect::V1 => Dialect::V1.encode_event(event),
        }
    }

    /// The setting as this crate stores it (every field, the dialect by name).
    #[must_use]
    pub fn to_stored(&self) -> Value {
        json!({
            "id": self.id,
            "url": self.url,
            "token": self.token,
            "authentication": self.authentication.as_ref().map(|(s, c)| json!({"scheme": s, "credentials": c})),
            "dialect": match self.dialect { Dialect::Legacy => "0.3", Dialect::V1 => "1.0" },
        })
    }

    /// A setting written by [`PushConfig::to_stored`].
    #[must_use]
    pub fn from_stored(value: &Value) -> Option<Self> {
        Some(Self {
            id: value["id"].as_str()?.to_owned(),
            url: value["url"].as_str()?.to_owned(),
            token: value["token"].as_str().map(str::to_owned),
            authentication: value["authentication"]
                .as_object()
                .and_then(|a| Some((a.get("scheme")?.as_str()?, a.get("credentials")?.as_str()?)))
                .map(|(s, c)| (s.to_owned(), c.to_owned())),
            dialect: match value["dialect"].as_str()? {
                "0.3" => Dialect::Legacy,
                _ => Dialect::V1,
            },
        })
    }
}

/// Posts one notification: `body` to the setting's URL with its headers, within `timeout`.
///
/// # Errors
///
/// The request failed or the client answered with an error status.
pub async fn notify(
    http: &reqwest::Client,
    config: &PushConfig,
    body: &Value,
    timeout: std::time::Duration,
) -> Result<(), reqwest::Error> {
    let mut request = http.post(&config.url).json(body).timeout(timeout);
    for (name, value) in config.headers() {
        request = request.header(name, value);
    }
    request.send().await?.error_for_status()?;
    Ok(())
}

/// The task and setting ids a get or delete request names (the setting's id may be left out
/// of a get: the task's only setting, or the one with the task's id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushQuery {
    /// The task.
    pub task_id: String,
    /// The setting.
    pub config_id: Option<String>,
}

fn text(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl Dialect {
    /// Reads a setting (the inner object in 0.2/0.3, the flat one in 1.0) for `task_id`.
    ///
    /// # Errors
    ///
    /// `-32602` without a URL, or with one that is not `http` or `https`.
    pub fn decode_push_config(self, value: &Value, task_id: &str) -> Result<PushConfig, RpcError> {
        let url = text(value, "url")
            .ok_or_else(|| RpcError::invalid_params("a push notification setting needs a url"))?;
        let scheme_ok = url
            .split_once("://")
            .is_some_and(|(scheme, rest)| matches!(scheme, "http" | "https") && !rest.is_empty());
        if !scheme_ok {
            return Err(RpcError::invalid_params(format!(
                "push notification url {url:?}: only http and https URLs are accepted"
            )));
        }
        let auth = &value["authentication"];
        let scheme = match self {
            Self::Legacy => auth["schemes"]
                .as_array()
                .and_then(|s| s.first())
                .and_then(Value::as_str)
                .map(str::to_owned),
            Self::V1 => text(auth, "scheme"),
        };
        let authentication = scheme.zip(text(auth, "credentials"));
        Ok(PushConfig {
            id: text(value, "id").unwrap_or_else(|| task_id.to_owned()),
            url,
            token: text(value, "token"),
            authentication,
            dialect: self,
        })
    }

    /// Reads the setting a `message/send` (`SendMessage`) carries in its configuration, if any.
    /// The task is not known yet: the setting's id is left empty for the server to fill.
    ///
    /// # Errors
    ///
    /// As [`Dialect::decode_push_config`].
    pub fn decode_send_push(self, params: &Value) -> Result<Option<PushConfig>, RpcError> {
        let key = match self {
            Self::Legacy => "pushNotificationConfig",
            Self::V1 => "taskPushNotificationConfig",
        };
        match params["configuration"].get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => self.decode_push_config(value, "").map(Some),
        }
    }

    /// Reads the parameters of a set request: the task and the setting.
    ///
    /// # Errors
    ///
    /// `-32602` without a task id, or as [`Dialect::decode_push_config`].
    pub fn decode_push_set(self, params: &Value) -> Result<(String, PushConfig), RpcError> {
        let task_id = text(params, "taskId")
            .ok_or_else(|| RpcError::invalid_params("\"taskId\" (the task id) is required"))?;
        let setting = match self {
            Self::Legacy => &params["pushNotificationConfig"],
            Self::V1 => params,
        };
        let config = self.decode_push_config(setting, &task_id)?;
        Ok((task_id, config))
    }

    /// Reads the parameters of a get, list or delete request.
    ///
    /// # Errors
    ///
    /// `-32602` without a task id.
    pub fn decode_push_query(self, params: &Value) -> Result<PushQuery, RpcError> {
        let (task, config) = match self {
            Self::Legacy => (text(params, "id"), text(params, "pushNotificationConfigId")),
            Self::V1 => (text(params, "taskId"), text(params, "id")),
        };
        let task_id = task.ok_or_else(|| RpcError::invalid_params("the task id is required"))?;
        Ok(PushQuery {
            task_id,
            config_id: config,
        })
    }

    /// A setting of `task_id`, as a set or get request answers.
    #[must_use]
    pub fn encode_push(self, task_id: &str, config: &PushConfig) -> Value {
        let mut setting = json!({ "id": config.id, "url": config.url });
        if let Some(token) = &config.token {
            setting["token"] = json!(token);
        }
        if let Some((scheme, credentials)) = &config.authentication {
            setting["authentication"] = match self {
                Self::Legacy => json!({"schemes": [scheme], "credentials": credentials}),
                Self::V1 => json!({"scheme": scheme, "credentials": credentials}),
            };
        }
        match self {
            Self::Legacy => json!({ "taskId": task_id, "pushNotificationConfig": setting }),
            Self::V1 => {
                setting["taskId"] = json!(task_id);
                setting
            }
        }
    }

    /// The settings of `task_id`, as a list request answers.
    #[must_use]
    pub fn encode_push_list(self, task_id: &str, configs: &[PushConfig]) -> Value {
        let configs: Vec<Value> = configs
            .iter()
            .map(|c| self.encode_push(task_id, c))
            .collect();
        match self {
            Self::Legacy => Value::Array(configs),
            Self::V1 => json!({ "configs": configs, "nextPageToken": "" }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dialects_read_and_write_a_setting() {
        let legacy = json!({"taskId": "t", "pushNotificationConfig": {
            "url": "http://127.0.0.1:9/hook", "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "secret"}}});
        let (task, config) = Dialect::Legacy.decode_push_set(&legacy).unwrap();
        assert_eq!(task, "t");
        assert_eq!(config.id, "t", "no id: the task's");
        assert_eq!(
            config.authentication,
            Some(("Bearer".into(), "secret".into()))
        );
        let mut written = legacy.clone();
        written["pushNotificationConfig"]["id"] = json!("t");
        assert_eq!(Dialect::Legacy.encode_push("t", &config), written);

        let v1 = json!({"taskId": "t", "id": "c1", "url": "https://example.test/hook",
            "authentication": {"scheme": "Basic", "credentials": "abc"}});
        let (_, config) = Dialect::V1.decode_push_set(&v1).unwrap();
        assert_eq!(config.id, "c1");
        assert_eq!(config.token, None);
        assert_eq!(Dialect::V1.encode_push("t", &config), v1);
        assert_eq!(
            config.headers(),
            [("Authorization", "Basic abc".to_owned())]
        );
        assert_eq!(PushConfig::from_stored(&config.to_stored()), Some(config));
    }

    #[test]
    fn a_setting_without_an_http_url_is_refused() {
        for url in [
            json!(null),
            json!(""),
            json!("file:///etc/passwd"),
            json!("http://"),
        ] {
            let params = json!({"taskId": "t", "url": url});
            let error = Dialect::V1.decode_push_set(&params).unwrap_err();
            assert_eq!(error.code, crate::rpc::code::INVALID_PARAMS, "{url}");
        }
        assert!(
            Dialect::V1
                .decode_push_set(&json!({"url": "http://a/"}))
                .is_err()
        );
    }

    #[test]
    fn method_names_and_queries() {
        assert_eq!(
            PushOp::of_method("tasks/pushNotificationConfig/list"),
            Some(PushOp::List)
        );
        assert_eq!(
            PushOp::of_method("DeleteTaskPushNotificationConfig"),
            Some(PushOp::Delete)
        );
        assert_eq!(PushOp::of_method("tasks/get"), None);
        let query = Dialect::Legacy
            .decode_push_query(&json!({"id": "t", "pushNotificationConfigId": "c"}))
            .unwrap();
        assert_eq!(query.config_id.as_deref(), Some("c"));
        let query = Dialect::V1
            .decode_push_query(&json!({"taskId": "t"}))
            .unwrap();
        assert_eq!((query.task_id.as_str(), query.config_id), ("t", None));
        assert!(Dialect::V1.decode_push_query(&json!({"id": "c"})).is_err());
    }
}
