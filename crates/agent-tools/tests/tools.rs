//! Schema snapshots and behaviour of the built-in tools and the collection.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_tools::{
    CreateChatCompletion, Terminate, Tool, ToolCollection, ToolContext, ToolError, ToolResult,
    TypedTool, parameters_schema,
};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn ctx() -> ToolContext {
    ToolContext::default()
}

#[test]
fn terminate_schema_snapshot() {
    assert_eq!(
        serde_json::to_value(Terminate.to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "terminate",
                "description": "End the interaction. Call this once the request has been fully handled, or when you cannot make any further progress on it; after this call no more actions are taken.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "status": {
                            "type": "string",
                            "description": "Whether the interaction succeeded or failed.",
                            "enum": ["success", "failure"]
                        }
                    },
                    "required": ["status"]
                }
            }
        })
    );
}

#[test]
fn create_chat_completion_schema_snapshot() {
    assert_eq!(
        serde_json::to_value(CreateChatCompletion::new().to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "create_chat_completion",
                "description": "Produce the final answer in the output format described by this tool's parameters.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "response": {
                            "type": "string",
                            "description": "The answer text to return to the user."
                        }
                    },
                    "required": ["response"]
                }
            }
        })
    );
}

/// A shape exercising the schema normaliser.
#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
struct Report {
    /// Title.
    title: String,
    /// Optional score.
    score: Option<f64>,
    /// Tags.
    tags: Vec<String>,
    /// Optional severity.
    #[serde(default)]
    severity: Option<Severity>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Severity {
    /// Minor.
    Low,
    /// Major.
    High,
}

#[test]
fn optional_fields_and_enums_use_plain_openai_types() {
    assert_eq!(
        parameters_schema::<Report>(),
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "Title."},
                "score": {"type": "number", "format": "double", "description": "Optional score."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
                "severity": {"type": "string", "enum": ["low", "high"], "description": "Optional severity."}
            },
            "required": ["title", "tags"]
        })
    );
}

#[test]
fn a_schema_without_fields_still_has_an_object_root() {
    #[derive(Deserialize, JsonSchema)]
    struct Nothing {}
    let schema = parameters_schema::<Nothing>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"], json!({}));
}

#[tokio::test]
async fn terminate_reports_the_status_and_validates_it() {
    let ok = Terminate
        .execute(json!({"status": "failure"}), &ctx())
        .await
        .unwrap();
    assert_eq!(
        ok.to_string(),
        "The interaction has been completed with status: failure"
    );

    let bad = Terminate
        .execute(json!({"status": "maybe"}), &ctx())
        .await
        .unwrap_err();
    assert!(matches!(bad, ToolError::InvalidArguments(_)));
    assert!(
        bad.to_string()
            .starts_with("Invalid arguments: unknown variant `maybe`"),
        "{bad}"
    );

    let missing = Terminate.execute(json!({}), &ctx()).await.unwrap_err();
    assert_eq!(
        missing.to_string(),
        "Invalid arguments: missing field `status`"
    );

    let not_object = Terminate.execute(json!([1]), &ctx()).await.unwrap_err();
    assert_eq!(
        not_object.to_string(),
        "Invalid arguments: expected a JSON object, got an array"
    );
}

#[tokio::test]
async fn create_chat_completion_returns_the_response_or_the_structured_object() {
    let text = CreateChatCompletion::new()
        .execute(json!({"response": "42"}), &ctx())
        .await
        .unwrap();
    assert_eq!(text, ToolResult::success("42"));

    let structured = CreateChatCompletion::structured::<Report>();
    assert_eq!(structured.parameters(), parameters_schema::<Report>());
    let out = structured
        .execute(
            json!({"title": "t", "tags": ["a"], "severity": "high"}),
            &ctx(),
        )
        .await
        .unwrap();
    let parsed: Report = serde_json::from_str(out.output.as_deref().unwrap()).unwrap();
    assert_eq!(
        parsed,
        Report {
            title: "t".into(),
            score: None,
            tags: vec!["a".into()],
            severity: Some(Severity::High)
        }
    );
    let invalid = structured
        .execute(json!({"title": 3}), &ctx())
        .await
        .unwrap_err();
    assert!(matches!(invalid, ToolError::InvalidArguments(_)));
}

/// A tool that fails in a configurable way and counts cleanups.
struct Flaky {
    name: &'static str,
    cleanups: Arc<AtomicUsize>,
    fail_cleanup: bool,
}

#[derive(Deserialize, JsonSchema)]
struct FlakyArgs {
    /// `ok`, `failure` or `crash`.
    mode: String,
}

#[async_trait]
impl TypedTool for Flaky {
    type Args = FlakyArgs;
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "flaky"
    }
    async fn call(&self, args: FlakyArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        match args.mode.as_str() {
            "ok" => Ok(ToolResult::success(format!("ok from {}", ctx.call_id))),
            "failure" => Err(ToolError::failure("expected failure")),
            _ => Err(ToolError::execution(std::io::Error::other("boom"))),
        }
    }
    async fn cleanup(&self) -> Result<(), ToolError> {
        self.cleanups.fetch_add(1, Ordering::SeqCst);
        if self.fail_cleanup {
            Err(ToolError::failure("cleanup broke"))
        } else {
            Ok(())
        }
    }
}

fn flaky(name: &'static str, cleanups: &Arc<AtomicUsize>, fail_cleanup: bool) -> Arc<dyn Tool> {
    Arc::new(Flaky {
        name,
        cleanups: cleanups.clone(),
        fail_cleanup,
    })
}

#[tokio::test]
async fn collection_skips_duplicates_maps_failures_and_cleans_everything() {
    let cleanups = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolCollection::new();
    assert!(tools.add_shared(flaky("a", &cleanups, false)));
    assert!(
        !tools.add_shared(flaky("a", &cleanups, false)),
        "duplicate name is skipped"
    );
    assert!(tools.add_shared(flaky("b", &cleanups, true)));
    assert!(tools.add_tool(Terminate));
    assert_eq!(tools.names(), vec!["a", "b", "terminate"]);
    let names: Vec<Value> = tools
        .to_params()
        .iter()
        .map(|d| json!(d.function.name))
        .collect();
    assert_eq!(names, vec![json!("a"), json!("b"), json!("terminate")]);

    let ctx = ToolContext::new(Default::default(), "call_9");
    assert_eq!(
        tools
            .execute("a", json!({"mode": "ok"}), &ctx)
            .await
            .unwrap()
            .to_string(),
        "ok from call_9"
    );
    assert_eq!(
        tools
            .execute("a", json!({"mode": "failure"}), &ctx)
            .await
            .unwrap(),
        ToolResult::failure("expected failure")
    );
    assert_eq!(
        tools
            .execute("a", json!({"mode": "crash"}), &ctx)
            .await
            .unwrap_err()
            .to_string(),
        "boom"
    );
    assert_eq!(
        tools.execute("zzz", json!({}), &ctx).await.unwrap(),
        ToolResult::failure("Tool zzz is invalid")
    );

    let failures = tools.cleanup_all().await;
    assert_eq!(
        cleanups.load(Ordering::SeqCst),
        2,
        "both flaky tools were cleaned"
    );
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].0, "b");

    let removed = tools.remove_tool("a").unwrap();
    assert_eq!(removed.name(), "a");
    assert_eq!(tools.names(), vec!["b", "terminate"]);
    assert_eq!(tools.to_params().len(), 2);
    assert_eq!(tools.get_tool("terminate").unwrap().name(), "terminate");
    assert!(tools.remove_tool("a").is_none());
    assert!(
        tools.add_shared(flaky("a", &cleanups, false)),
        "a removed name can be added again"
    );
    assert_eq!(tools.names(), vec!["b", "terminate", "a"]);
}
