//! Property: no sequence of additions and truncations leaves memory with an unpaired tool
//! message, loses the first user request, reorders messages, or keeps more than it may.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::{Memory, Message, Role, ToolCall, check_tool_pairing, turns};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    User,
    /// A new run's request (`add_task`), pinned like the first user message.
    Task,
    AssistantText,
    /// An assistant message with `calls` tool calls, answered one message at a time; the first
    /// `answered` answers are added before the step is "cancelled" and the rest are closed.
    ToolTurn {
        calls: usize,
        answered: usize,
    },
    /// A whole turn added in one `add_messages` call.
    ToolTurnBatch {
        calls: usize,
    },
    Image,
    SetMax(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::User),
        1 => Just(Op::Task),
        3 => Just(Op::AssistantText),
        6 => (1usize..4).prop_flat_map(|calls| (Just(calls), 0..=calls))
            .prop_map(|(calls, answered)| Op::ToolTurn { calls, answered }),
        2 => (1usize..4).prop_map(|calls| Op::ToolTurnBatch { calls }),
        1 => Just(Op::Image),
        1 => (1usize..12).prop_map(Op::SetMax),
    ]
}

struct Model {
    memory: Memory,
    added: Vec<Message>,
    counter: usize,
    task: Option<Message>,
}

impl Model {
    fn next(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}-{}", self.counter)
    }

    fn add(&mut self, message: Message) {
        self.added.push(message.clone());
        self.memory.add_message(message);
        self.check(true);
    }

    fn check(&self, allow_open_tail: bool) {
        let messages = self.memory.messages();
        check_tool_pairing(messages, allow_open_tail)
            .unwrap_or_else(|e| panic!("pairing broken: {e}\n{messages:#?}"));

        let first_user = self.added.iter().find(|m| m.role == Role::User);
        assert_eq!(
            self.memory.first_user_message(),
            first_user,
            "the task must stay"
        );
        // The current run's request (add_task) is pinned too.
        if let Some(task) = &self.task {
            assert!(
                messages.contains(task),
                "the current task was dropped: {task:?}\n{messages:#?}"
            );
        }

        // Order is kept: memory is a subsequence of what was added, ending with the newest.
        let mut added = self.added.iter();
        for message in messages {
            assert!(added.any(|a| a == message), "message reordered or invented");
        }
        assert_eq!(messages.last(), self.added.last());

        if messages.len() > self.memory.max_messages() {
            assert!(
                turns(messages).len() <= 3,
                "over the cap only the pinned turns (first request, current task) and the newest turn may remain"
            );
        }
    }

    fn calls(&mut self, n: usize) -> Vec<ToolCall> {
        (0..n)
            .map(|_| ToolCall::new(self.next("call"), "tool", "{}"))
            .collect()
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Task => {
                let text = self.next("task");
                let message = Message::user_message(text);
                self.task = Some(message.clone());
                self.added.push(message.clone());
                self.memory.add_task(message);
                self.check(true);
            }
            Op::User => {
                let text = self.next("user");
                self.add(Message::user_message(text));
            }
            Op::AssistantText => {
                let text = self.next("assistant");
                self.add(Message::assistant_message(text));
            }
            Op::ToolTurn { calls, answered } => {
                let calls = self.calls(calls);
                self.add(Message::from_tool_calls(calls.clone(), ""));
                for call in &calls[..answered] {
                    self.add(Message::tool_message("ok", "tool", &call.id));
                }
                let before = self.memory.len();
                let closed = self
                    .memory
                    .close_open_tool_calls(|c| format!("cancelled {}", c.id))
                    .len();
                assert_eq!(closed, calls.len() - answered);
                for call in &calls[answered..] {
                    self.added.push(Message::tool_message(
                        format!("cancelled {}", call.id),
                        "tool",
                        &call.id,
                    ));
                }
                assert!(self.memory.len() <= before + closed);
                self.check(false);
            }
            Op::ToolTurnBatch { calls } => {
                let calls = self.calls(calls);
                let mut batch = vec![Message::from_tool_calls(calls.clone(), "")];
                batch.extend(
                    calls
                        .iter()
                        .map(|c| Message::tool_message("ok", "tool", &c.id)),
                );
                self.added.extend(batch.iter().cloned());
                self.memory.add_messages(batch);
                self.check(false);
            }
            Op::Image => {
                let text = self.next("image");
                self.add(Message::user_message_with_image(text, "aW1n"));
            }
            Op::SetMax(max) => {
                self.memory.set_max_messages(max);
                if !self.added.is_empty() {
                    self.check(false);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn truncation_never_unpairs_tool_messages_or_drops_the_task(
        max in 1usize..15,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let mut model = Model { memory: Memory::new(max), added: Vec::new(), counter: 0, task: None };
        for op in &ops {
            model.apply(op);
        }
    }
}

#[test]
fn plain_slicing_would_have_broken_this_conversation() {
    // The OpenManus failure (spec W1): a cap landing inside a tool turn.
    let mut memory = Memory::new(3);
    memory.add_message(Message::user_message("task"));
    let calls: Vec<ToolCall> = (0..3)
        .map(|i| ToolCall::new(format!("c{i}"), "t", "{}"))
        .collect();
    memory.add_message(Message::from_tool_calls(calls.clone(), ""));
    for call in &calls {
        memory.add_message(Message::tool_message("ok", "t", &call.id));
    }
    memory.add_message(Message::assistant_message("summary"));
    let roles: Vec<Role> = memory.messages().iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant]);
    assert_eq!(memory.messages()[0].text(), "task");
    check_tool_pairing(memory.messages(), false).unwrap();
}
