//! The AWS event-stream framing (`application/vnd.amazon.eventstream`), written from the format
//! rather than with the SDK's own encoder so the client's decoder is checked against an
//! independent one: a prelude (total length, headers length, both big-endian `u32`, and the
//! prelude's CRC32), string headers, the payload, and the CRC32 of everything before it.
//! And the ConverseStream events for a [`Completion`], as Bedrock sends them.

use serde_json::{Value, json};

use crate::mock_openai::Completion;

/// Header value type 7: a string with a big-endian `u16` length.
const STRING: u8 = 7;

/// One event-stream message with string headers.
#[must_use]
pub fn encode_frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut encoded_headers = Vec::new();
    for (name, value) in headers {
        let name = &name.as_bytes()[..name.len().min(255)];
        let value = &value.as_bytes()[..value.len().min(usize::from(u16::MAX))];
        encoded_headers.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        encoded_headers.extend_from_slice(name);
        encoded_headers.push(STRING);
        encoded_headers.extend_from_slice(&u16::try_from(value.len()).unwrap_or(0).to_be_bytes());
        encoded_headers.extend_from_slice(value);
    }
    let total = 12 + encoded_headers.len() + payload.len() + 4;
    let mut frame = Vec::with_capacity(total);
    frame.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    frame.extend_from_slice(
        &u32::try_from(encoded_headers.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    let prelude_crc = crc32fast::hash(&frame);
    frame.extend_from_slice(&prelude_crc.to_be_bytes());
    frame.extend_from_slice(&encoded_headers);
    frame.extend_from_slice(payload);
    let message_crc = crc32fast::hash(&frame);
    frame.extend_from_slice(&message_crc.to_be_bytes());
    frame
}

/// An `event` message of type `event_type` with a JSON payload. Like Bedrock, every payload
/// carries a `p` padding field the client must ignore.
#[must_use]
pub fn event_frame(event_type: &str, mut payload: Value) -> Vec<u8> {
    if let Value::Object(map) = &mut payload {
        map.insert("p".into(), json!("abcdefghijklmnopqrstuvwxyzABCDEF"));
    }
    encode_frame(
        &[
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An `exception` message (`throttlingException`, `modelStreamErrorException`, ...).
#[must_use]
pub fn exception_frame(exception_type: &str, message: &str) -> Vec<u8> {
    let mut payload = json!({"message": message});
    if exception_type == "modelStreamErrorException" {
        payload["originalStatusCode"] = json!(500);
        payload["originalMessage"] = json!("the model stopped answering");
    }
    encode_frame(
        &[
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// Small pieces, so clients must reassemble.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(7).map(|c| c.iter().collect()).collect()
}

/// Converse's `stopReason` for a completion.
pub(crate) fn stop_reason(completion: &Completion) -> &'static str {
    match completion.finish_reason.as_deref() {
        Some("length") => "max_tokens",
        _ if !completion.tool_calls.is_empty() => "tool_use",
        _ => "end_turn",
    }
}

/// A tool call's input as the JSON object Bedrock holds (`{}` for anything else).
pub(crate) fn tool_input(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// The ConverseStream frames for `completion`, in Bedrock's order: `messageStart`; text as
/// `contentBlockDelta`s of block 0 (text blocks have no start event) and its
/// `contentBlockStop`; per tool call a `contentBlockStart` with its id and name, its input
/// JSON in pieces, a `contentBlockStop`; `messageStop` with the stop reason; `metadata` with
/// the usage (`input_tokens`, `output_tokens`).
#[must_use]
pub fn converse_stream_frames(
    completion: &Completion,
    input_tokens: u64,
    output_tokens: u64,
) -> Vec<Vec<u8>> {
    let mut frames = vec![event_frame("messageStart", json!({"role": "assistant"}))];
    let mut block = 0;
    if let Some(text) = completion.content.as_deref().filter(|t| !t.is_empty()) {
        for piece in pieces(text) {
            frames.push(event_frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": block, "delta": {"text": piece}}),
            ));
        }
        frames.push(event_frame(
            "contentBlockStop",
            json!({"contentBlockIndex": block}),
        ));
        block += 1;
    }
    for call in &completion.tool_calls {
        frames.push(event_frame(
            "contentBlockStart",
            json!({"contentBlockIndex": block,
                "start": {"toolUse": {"toolUseId": call.id, "name": call.function.name}}}),
        ));
        for piece in pieces(&tool_input(&call.function.arguments).to_string()) {
            frames.push(event_frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": block, "delta": {"toolUse": {"input": piece}}}),
            ));
        }
        frames.push(event_frame(
            "contentBlockStop",
            json!({"contentBlockIndex": block}),
        ));
        block += 1;
    }
    frames.push(event_frame(
        "messageStop",
        json!({"stopReason": stop_reason(completion)}),
    ));
    frames.push(event_frame(
        "metadata",
        json!({
            "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens,
                      "totalTokens": input_tokens + output_tokens},
            "metrics": {"latencyMs": 1},
        }),
    ));
    frames
}

/// The whole ConverseStream body for `completion` (usage from the completion, or 10 in and 20
/// out): what a test corrupts or cuts for [`BedrockReply::RawStream`](super::BedrockReply).
#[must_use]
pub fn converse_stream_body(completion: &Completion) -> Vec<u8> {
    let (input, output) = completion
        .usage
        .map_or((10, 20), |u| (u.prompt_tokens, u.completion_tokens));
    converse_stream_frames(completion, input, output).concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_matches_the_format() {
        let frame = encode_frame(&[(":message-type", "event")], b"{}");
        // prelude 12 + header (1 + 13 + 1 + 2 + 5) + payload 2 + crc 4
        assert_eq!(frame.len(), 12 + 22 + 2 + 4);
        assert_eq!(&frame[0..4], &40u32.to_be_bytes());
        assert_eq!(&frame[4..8], &22u32.to_be_bytes());
        assert_eq!(&frame[8..12], &crc32fast::hash(&frame[..8]).to_be_bytes());
        assert_eq!(frame[12], 13);
        assert_eq!(&frame[13..26], b":message-type");
        assert_eq!(frame[26], STRING);
        assert_eq!(&frame[27..29], &5u16.to_be_bytes());
        assert_eq!(&frame[29..34], b"event");
        assert_eq!(&frame[34..36], b"{}");
        assert_eq!(&frame[36..], &crc32fast::hash(&frame[..36]).to_be_bytes());
    }
}
