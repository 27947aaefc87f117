//! Property tests of the stream reassembly (issue 21): whatever way a reply is cut into chunks,
//! and however the tool calls' fragments are interleaved, the assembled reply is the original;
//! no input makes the assembler panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_core::ToolCall;
use agent_llm::StreamAssembler;
use proptest::prelude::*;
use serde_json::json;

/// Cuts `text` into pieces at the given fractions, on character boundaries.
fn pieces(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            if chars.is_empty() {
                0
            } else {
                c % (chars.len() + 1)
            }
        })
        .collect();
    points.push(0);
    points.push(chars.len());
    points.sort_unstable();
    points.dedup();
    let cut: Vec<String> = points
        .windows(2)
        .map(|w| chars[w[0]..w[1]].iter().collect())
        .collect();
    // An empty text is one empty piece.
    if cut.is_empty() {
        vec![String::new()]
    } else {
        cut
    }
}

#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: String,
    arguments: String,
    cuts: Vec<usize>,
}

fn call() -> impl Strategy<Value = Call> {
    (
        "[a-zA-Z0-9]{1,12}",
        "[a-z_]{1,16}",
        any::<String>(),
        proptest::collection::vec(any::<usize>(), 0..6),
    )
        .prop_map(|(id, name, arguments, cuts)| Call {
            id,
            name,
            arguments,
            cuts,
        })
}

proptest! {
    #[test]
    fn any_chunking_and_interleaving_reassembles_the_reply(
        content in any::<String>(),
        content_cuts in proptest::collection::vec(any::<usize>(), 0..6),
        calls in proptest::collection::vec(call(), 0..4),
        order in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        // Unique ids: the assembler replaces repeated ones.
        let calls: Vec<Call> = calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| Call { id: format!("{}{i}", c.id), ..c })
            .collect();
        let mut chunks = Vec::new();
        for piece in pieces(&content, &content_cuts).into_iter().filter(|p| !p.is_empty()) {
            chunks.push(json!({"choices": [{"index": 0, "delta": {"content": piece}}]}));
        }
        // Each call's fragments in order; the first carries the id and the name.
        let mut queues: Vec<Vec<serde_json::Value>> = calls
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let parts = pieces(&c.arguments, &c.cuts);
                parts
                    .iter()
                    .enumerate()
                    .map(|(k, part)| {
                        let fragment = if k == 0 {
                            json!({"index": index, "id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": part}})
                        } else {
                            json!({"index": index, "function": {"arguments": part}})
                        };
                        json!({"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]})
                    })
                    .rev()
                    .collect()
            })
            .collect();
        let mut picks = order.into_iter().cycle();
        while queues.iter().any(|q| !q.is_empty()) {
            let open: Vec<usize> = (0..queues.len()).filter(|i| !queues[*i].is_empty()).collect();
            let pick = open[usize::from(picks.next().unwrap_or(0)) % open.len()];
            chunks.push(queues[pick].pop().unwrap());
        }
        chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));

        let mut assembler = StreamAssembler::default();
        for chunk in &chunks {
            assembler.push(&chunk.to_string()).unwrap();
        }
        prop_assert!(assembler.finished());
        prop_assert_eq!(
            assembler.received_tokens(),
            !content.is_empty() || !calls.is_empty()
        );
        let reply = assembler.finish();
        prop_assert_eq!(reply.content, (!content.is_empty()).then_some(content));
        let expected: Vec<ToolCall> = calls
            .iter()
            .map(|c| ToolCall::new(c.id.clone(), c.name.clone(), c.arguments.clone()))
            .collect();
        prop_assert_eq!(reply.tool_calls, expected);
    }

    #[test]
    fn no_chunk_makes_the_assembler_panic(chunks in proptest::collection::vec(any::<String>(), 0..8)) {
        let mut assembler = StreamAssembler::default();
        for chunk in &chunks {
            let _ = assembler.push(chunk);
        }
        let _ = assembler.finish();
    }

    #[test]
    fn no_json_chunk_makes_the_assembler_panic(
        index in proptest::option::of(any::<i64>()),
        id in proptest::option::of(any::<String>()),
        name in proptest::option::of(any::<String>()),
        arguments in proptest::option::of(prop_oneof![
            any::<String>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            Just(json!({"already": "parsed"})),
            Just(serde_json::Value::Null),
        ]),
        repeat in 1usize..4,
    ) {
        let fragment = json!({"index": index, "id": id, "function": {"name": name, "arguments": arguments}});
        let chunk = json!({"choices": [{"delta": {"tool_calls": [fragment]}}]}).to_string();
        let mut assembler = StreamAssembler::default();
        for _ in 0..repeat {
            assembler.push(&chunk).unwrap();
        }
        let _ = assembler.finish();
    }
}
