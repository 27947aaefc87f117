//! The field names of a linear `model_request` line, shared by the writer and the reader.

/// The `kind` of a model request line.
pub const KIND_REQUEST: &str = "model_request";
/// The `kind` of a model reply line.
pub const KIND_RESPONSE: &str = "model_response";
/// The `kind` of a failed model call.
pub const KIND_ERROR: &str = "model_error";

/// The request's number in the journal (0, 1, ...); its reply or error line carries the same.
pub const SEQ: &str = "seq";
/// Every field of the body but `messages` and `tools`, verbatim.
pub const PARAMS: &str = "params";
/// The messages first seen in this request; they take the next message numbers, in order.
pub const NEW_MESSAGES: &str = "new_messages";
/// The body's messages as half-open ranges `[start, end)` of message numbers.
pub const MESSAGES: &str = "messages";
/// The body's tools as `[name, schema hash]` pairs (absent: the body has no `tools`).
pub const TOOLS: &str = "tools";
/// The tools whose schema hash appears for the first time: hash → the tool's full JSON.
pub const NEW_TOOLS: &str = "new_tools";
/// A request journaled whole, as older journals did: the wire body.
pub const LEGACY_BODY: &str = "body";
