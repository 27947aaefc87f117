//! The W3C trace context of a `tools/call` as HTTP headers too.
//!
//! A call carries its trace context in `_meta` (`traceparent`, `tracestate`: SEP-414), which an
//! MCP server reads whatever the transport. Over HTTP the same values also go as the request's
//! `traceparent` and `tracestate` headers, which a server instrumented at the HTTP layer (an
//! OpenTelemetry middleware, a proxy) continues without knowing MCP. The headers are read from
//! the message itself: the transports send from tasks of their own, where the caller's span is
//! not current.

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestParamsMeta as _};

/// The `traceparent` and `tracestate` headers of `message`: those of its `_meta` when it is a
/// `tools/call` that carries them; none otherwise (telemetry off, other messages).
pub(crate) fn of(message: &ClientJsonRpcMessage) -> Vec<(HeaderName, HeaderValue)> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return Vec::new();
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return Vec::new();
    };
    let header = |name: &'static str, value: Option<&str>| {
        let value = HeaderValue::from_str(value?).ok()?;
        Some((HeaderName::from_static(name), value))
    };
    [
        header("traceparent", call.params.traceparent()),
        header("tracestate", call.params.tracestate()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientRequest, PingRequest, RequestId,
        RequestParamsMeta as _,
    };

    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn call(traceparent: Option<&str>, tracestate: Option<&str>) -> ClientJsonRpcMessage {
        let mut params = CallToolRequestParams::new("greet");
        if let Some(value) = traceparent {
            params.set_traceparent(value);
        }
        if let Some(value) = tracestate {
            params.set_tracestate(value);
        }
        ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            RequestId::Number(1),
        )
    }

    fn names(headers: &[(HeaderName, HeaderValue)]) -> Vec<(&str, &str)> {
        headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.to_str().unwrap_or("?")))
            .collect()
    }

    #[test]
    fn a_traced_call_gives_its_meta_as_headers() {
        assert_eq!(
            names(&of(&call(Some(PARENT), Some("vendor=1")))),
            [("traceparent", PARENT), ("tracestate", "vendor=1")]
        );
        assert_eq!(
            names(&of(&call(Some(PARENT), None))),
            [("traceparent", PARENT)]
        );
    }

    #[test]
    fn nothing_for_an_untraced_call_other_requests_or_a_value_no_header_can_hold() {
        assert!(of(&call(None, None)).is_empty());
        assert!(of(&call(Some("00-x\n-y"), None)).is_empty());
        let ping = ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            RequestId::Number(2),
        );
        assert!(of(&ping).is_empty());
    }
}
