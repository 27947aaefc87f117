//! The `Tool` trait, the typed helper `TypedTool`, and schema generation from `schemars`.

use agent_core::{BoxError, CancellationToken, ToolDefinition};
use async_trait::async_trait;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use thiserror::Error;

use crate::ToolResult;

/// Why a tool call failed.
///
/// [`ToolError::Failure`] is OpenManus's `ToolError`: an expected failure whose message the model
/// should read as the tool's result (`ToolCollection` turns it into a failed [`ToolResult`]).
/// The other variants are reported to the model as
/// `Error: ⚠️ Tool '{name}' encountered a problem: {error}`.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ToolError {
    /// An expected failure, shown to the model as the tool's error result.
    #[error("{0}")]
    Failure(String),
    /// The arguments do not match the tool's schema.
    #[error("Invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool itself broke.
    #[error("{0}")]
    Execution(#[source] BoxError),
}

impl ToolError {
    /// An expected failure with `message`.
    pub fn failure(message: impl Into<String>) -> Self {
        Self::Failure(message.into())
    }

    /// Wraps any error as an execution failure.
    pub fn execution(error: impl Into<BoxError>) -> Self {
        Self::Execution(error.into())
    }
}

/// What a running tool call may know about its surroundings.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    /// Fires when the run is cancelled; long-running tools should stop promptly.
    pub cancellation: CancellationToken,
    /// The id of the tool call being executed (empty outside an agent).
    pub call_id: String,
    /// The session the call belongs to, when the run is one's (for hooks and logs).
    pub session: Option<String>,
    /// Where a long call tells how it is getting on ([`ToolContext::report`]); the agent makes
    /// each report an event.
    pub progress: Option<Progress>,
}

/// Receives a running call's reports of how it is getting on, until the call is over
/// ([`Progress::close`]).
#[derive(Clone)]
pub struct Progress {
    report: std::sync::Arc<dyn Fn(&str) + Send + Sync>,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Progress {
    /// Reports go to `report`.
    pub fn new(report: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            report: std::sync::Arc::new(report),
            open: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
        }
    }

    /// The call is over: reports made from now on (by a task the tool left running with a
    /// clone of its context) are dropped, so none follows the call's end.
    pub fn close(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

impl ToolContext {
    /// A context for the call `call_id` under `cancellation`.
    pub fn new(cancellation: CancellationToken, call_id: impl Into<String>) -> Self {
        Self {
            cancellation,
            call_id: call_id.into(),
            session: None,
            progress: None,
        }
    }

    /// The same context, its reports going to `progress`.
    #[must_use]
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Tells how the call is getting on (nothing happens outside an agent that listens).
    pub fn report(&self, message: &str) {
        if let Some(progress) = &self.progress
            && progress.open.load(std::sync::atomic::Ordering::SeqCst)
        {
            (progress.report)(message);
        }
    }

    /// The same context, in session `session`.
    #[must_use]
    pub fn with_session(mut self, session: Option<&str>) -> Self {
        self.session = session.map(str::to_owned);
        self
    }
}

/// A tool the model can call. Tools are shared (`Arc<dyn Tool>`) and take `&self`; keep mutable
/// state behind interior mutability.
///
/// Most tools implement [`TypedTool`] instead, which provides this trait with the schema derived
/// from an argument struct.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments; its root is `{"type": "object", ...}`.
    fn parameters(&self) -> Value;

    /// Runs the tool with parsed JSON `args`.
    ///
    /// # Errors
    ///
    /// See [`ToolError`] for how each kind reaches the model.
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolResult, ToolError>;

    /// Releases resources (processes, connections); called at the end of every agent run.
    ///
    /// # Errors
    ///
    /// Logged by the agent, never raised.
    async fn cleanup(&self) -> Result<(), ToolError> {
        Ok(())
    }

    /// The OpenAI function-calling definition of the tool.
    fn to_param(&self) -> ToolDefinition {
        ToolDefinition::new(self.name(), self.description(), self.parameters())
    }
}

/// A tool whose arguments are a Rust type: the JSON schema comes from its `JsonSchema` derive and
/// the arguments are deserialised (and so validated) before [`TypedTool::call`] runs. Every
/// `TypedTool` is a [`Tool`].
///
/// ```
/// use agent_tools::{Tool, ToolContext, ToolError, ToolResult, TypedTool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Args {
///     /// Text to shout.
///     text: String,
/// }
///
/// struct Shout;
///
/// #[async_trait::async_trait]
/// impl TypedTool for Shout {
///     type Args = Args;
///     fn name(&self) -> &str { "shout" }
///     fn description(&self) -> &str { "Upper-cases text." }
///     async fn call(&self, args: Args, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
///         Ok(ToolResult::success(args.text.to_uppercase()))
///     }
/// }
///
/// let schema = Shout.parameters();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["text"]));
/// ```
#[async_trait]
pub trait TypedTool: Send + Sync {
    /// The argument type.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// The name the model calls.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// Runs the tool.
    ///
    /// # Errors
    ///
    /// See [`ToolError`].
    async fn call(&self, args: Self::Args, ctx: &ToolContext) -> Result<ToolResult, ToolError>;

    /// Releases resources.
    ///
    /// # Errors
    ///
    /// Logged by the agent, never raised.
    async fn cleanup(&self) -> Result<(), ToolError> {
        Ok(())
    }
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        TypedTool::name(self)
    }
    fn description(&self) -> &str {
        TypedTool::description(self)
    }
    fn parameters(&self) -> Value {
        parameters_schema::<T::Args>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let args = parse_args::<T::Args>(args)?;
        self.call(args, ctx).await
    }
    async fn cleanup(&self) -> Result<(), ToolError> {
        TypedTool::cleanup(self).await
    }
}

/// Deserialises tool arguments, turning a mismatch into [`ToolError::InvalidArguments`] with
/// serde's precise message (missing field, wrong type, unknown variant).
///
/// # Errors
///
/// [`ToolError::InvalidArguments`].
pub fn parse_args<A: DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    if !args.is_object() {
        return Err(ToolError::InvalidArguments(format!(
            "expected a JSON object, got {}",
            json_kind(&args)
        )));
    }
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The function-calling parameter schema of `A`: subschemas inlined; no `$schema`, `title` or
/// type-level `description` at the root (those are Rust docs, not model instructions); a root
/// `"type": "object"` with `properties`; unit-variant enums as `{"type": "string", "enum": [...]}`;
/// optional fields shown as their plain type (`Option<String>` is `{"type": "string"}`, not
/// required) as OpenAI tools expect; and wrapped doc-comment lines joined into one line per
/// paragraph.
#[must_use]
pub fn parameters_schema<A: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<A>().to_value();
    if let Value::Object(root) = &mut value {
        for key in ["title", "$schema", "description"] {
            root.remove(key);
        }
        root.insert("type".to_owned(), Value::String("object".to_owned()));
        root.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        normalize(root);
    }
    value
}

/// Applies the simplifications of [`parameters_schema`] to a schema node and everything under it.
fn normalize(node: &mut Map<String, Value>) {
    collapse_string_consts(node);
    if let Some(Value::String(description)) = node.get_mut("description") {
        *description = unwrap_doc_lines(description);
    }
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(property) = property {
                simplify_optional(property);
                normalize(property);
            }
        }
    }
    if let Some(Value::Object(items)) = node.get_mut("items") {
        normalize(items);
    }
}

/// Joins the lines of a wrapped doc comment into one line per paragraph (a blank line still
/// separates paragraphs), so descriptions read as the model expects.
fn unwrap_doc_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| {
            paragraph
                .split('\n')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `oneOf`/`anyOf` of string `const`s (what schemars makes of an enum with documented variants)
/// becomes `"type": "string", "enum": [...]`.
fn collapse_string_consts(node: &mut Map<String, Value>) {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(options)) = node.get(key) else {
            continue;
        };
        let values: Option<Vec<Value>> = options
            .iter()
            .map(|option| {
                let option = option.as_object()?;
                let value = option.get("const").filter(|c| c.is_string())?;
                let typed_string = option.get("type").is_none_or(|t| t == "string");
                typed_string.then(|| value.clone())
            })
            .collect();
        if let Some(values) = values.filter(|v| !v.is_empty()) {
            node.remove(key);
            node.insert("type".to_owned(), Value::String("string".to_owned()));
            node.insert("enum".to_owned(), Value::Array(values));
        }
    }
}

/// Rewrites `"type": [T, "null"]` to `"type": T` and `anyOf: [S, {"type": "null"}]` to `S`, and
/// drops `"default": null` and `null` enum members, for a property (optional fields).
fn simplify_optional(property: &mut Map<String, Value>) {
    let is_null = |o: &Value| o.get("type").is_some_and(|t| t == "null");
    if property.get("default") == Some(&Value::Null) {
        property.remove("default");
    }
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            property.insert("type".to_owned(), only);
        }
    }
    for key in ["anyOf", "oneOf"] {
        let inner = match property.get(key) {
            Some(Value::Array(options)) if options.len() == 2 && options.iter().any(is_null) => {
                options.iter().find(|o| !is_null(o)).cloned()
            }
            _ => None,
        };
        if let Some(Value::Object(inner)) = inner {
            property.remove(key);
            for (k, v) in inner {
                property.entry(k).or_insert(v);
            }
        }
    }
    if let Some(Value::Array(options)) = property.get_mut("enum") {
        options.retain(|o| !o.is_null());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn reports_after_the_call_is_closed_are_dropped() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&heard);
        let progress = Progress::new(move |message| {
            if let Ok(mut heard) = sink.lock() {
                heard.push(message.to_owned());
            }
        });
        let ctx = ToolContext::new(CancellationToken::new(), "c1").with_progress(progress.clone());
        // A clone the tool kept (as a task it spawned would).
        let kept = ctx.clone();
        ctx.report("half way");
        progress.close();
        kept.report("after the end");
        ctx.report("after the end too");
        assert_eq!(*heard.lock().unwrap(), ["half way"]);
    }
}
