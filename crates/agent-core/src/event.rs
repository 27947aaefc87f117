//! Typed events emitted by the agent loop, and the bus that carries them to subscribers.
//!
//! Every subscriber gets its own unbounded channel: the agent never waits for a slow consumer and
//! no event is dropped for a consumer that is still listening. A dropped receiver unsubscribes.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use agent_protocol::TokenUsage;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::schema::{AgentState, ToolCall};

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// `run()` accepted a request.
    RunStarted {
        /// The agent's name.
        agent: String,
        /// The request, if one was given.
        request: Option<String>,
    },
    /// A step begins.
    StepStarted {
        /// 1-based step number.
        step: u32,
        /// The step budget.
        max_steps: u32,
    },
    /// The model answered: its text and the tool calls it asked for.
    Thought {
        /// Step number.
        step: u32,
        /// The assistant text (may be empty).
        content: String,
        /// The requested calls (already filtered by the `tool_choice` rules).
        tool_calls: Vec<ToolCall>,
    },
    /// A tool call is about to run.
    ToolCallStarted {
        /// Step number.
        step: u32,
        /// The call.
        call: ToolCall,
    },
    /// A tool call produced its observation.
    ToolCallFinished {
        /// Step number.
        step: u32,
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The observation stored in memory (after truncation).
        observation: String,
        /// False when the observation reports an error.
        success: bool,
    },
    /// A tool call still running told how it is getting on (the other agent's status over
    /// `a2a_call`, …). Live views show it; the observation follows in
    /// [`AgentEvent::ToolCallFinished`].
    ToolProgress {
        /// Step number.
        step: u32,
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// What it said.
        message: String,
    },
    /// A step ended with this result line.
    StepFinished {
        /// Step number.
        step: u32,
        /// What the step returned.
        result: String,
    },
    /// The agent's state changed.
    StateChanged {
        /// Old state.
        from: AgentState,
        /// New state.
        to: AgentState,
    },
    /// A piece of the model's reply text, as it streams in (only for streamed replies; the
    /// whole text follows in [`AgentEvent::Thought`]). Live views show it; journals and stores
    /// skip it, since the thought carries the same text. After an [`AgentEvent::Retry`], the
    /// deltas start again from the beginning of the reply.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A piece of the model's reasoning, as it streams in, from models that send it apart
    /// from the reply (`reasoning_content`: DeepSeek's reasoner, reasoning models behind vLLM,
    /// SGLang, OpenRouter, Ollama). Live only, as [`AgentEvent::TextDelta`]: it is not sent
    /// back to the model, and journals and stores skip it. Editors show it as the agent's
    /// thought (`agent_thought_chunk`).
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// Tokens used by one model call, as reported by the provider, and what they cost.
    TokenUsage {
        /// Input tokens.
        prompt_tokens: u64,
        /// Of the input tokens, those read from the provider's prompt cache.
        cached_prompt_tokens: u64,
        /// Output tokens.
        completion_tokens: u64,
        /// The call's cost in US dollars at the model's price; `None` when the model has no
        /// price.
        cost_usd: Option<f64>,
    },
    /// Older turns of the conversation were replaced to keep requests within the model's
    /// context window.
    Compacted {
        /// Step number.
        step: u32,
        /// How: `summary` (the model summarised them) or `cut` (they were dropped).
        strategy: String,
        /// Messages removed from memory (the summary message added is not counted).
        removed_messages: usize,
        /// Estimated tokens of the next request before the compaction.
        tokens_before: u64,
        /// Estimated tokens of the next request after it.
        tokens_after: u64,
    },
    /// A model call is being retried.
    Retry {
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Delay before the next attempt, in milliseconds.
        delay_ms: u64,
        /// Why it failed.
        reason: String,
    },
    /// An image entered memory (a tool's screenshot or chart, a browser state's screenshot):
    /// what the model will see, for front ends that show it.
    Image {
        /// Step number.
        step: u32,
        /// The text of the message carrying it (e.g. `Image returned by browser_use:`).
        caption: String,
        /// The image, base64-encoded as it goes to the model.
        image: String,
    },
    /// A tool call needed more than its confinement allows (a write outside the workspace,
    /// the network, …), and this was decided: the audit of the approval policy.
    Permission {
        /// Step number.
        step: u32,
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// What the call needed, in words (`write outside the workspace`, `the network`).
        request: String,
        /// What was decided.
        decision: agent_protocol::PermissionDecision,
        /// Who decided.
        by: agent_protocol::Decider,
        /// Why, and how to allow it when denied.
        detail: String,
    },
    /// Stuck detection fired after this step.
    Stuck {
        /// Step number.
        step: u32,
    },
    /// The run ended.
    Finished {
        /// A one-line summary of the outcome, as [`RunStatus`](crate::RunStatus)'s `Display`:
        /// ``finished (special tool `terminate`)``, `max_steps (30)`, `cancelled`, `error: ...`.
        status: String,
        /// Steps executed.
        steps: u32,
        /// Tokens and cost of the run's model calls, in the JSON of a run's tally
        /// ([`agent_protocol::usage::tally`]: the cost a number, with `unpriced_calls`).
        #[serde(with = "agent_protocol::usage::tally")]
        usage: TokenUsage,
    },
}

/// A synchronous subscriber ([`EventBus::subscribe_with`]): called with each event as it is
/// emitted; returns `false` to unsubscribe.
pub type EventSink = Arc<dyn Fn(&AgentEvent) -> bool + Send + Sync>;

/// One subscriber of a bus.
#[derive(Clone)]
enum Subscriber {
    Channel(UnboundedSender<AgentEvent>),
    Sink(EventSink),
}

impl Subscriber {
    /// Delivers `event`; whether the subscriber is still listening.
    fn deliver(&self, event: &AgentEvent) -> bool {
        match self {
            Self::Channel(tx) => tx.send(event.clone()).is_ok(),
            Self::Sink(sink) => sink(event),
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Self::Channel(tx) => tx.is_closed(),
            Self::Sink(_) => false,
        }
    }
}

/// Fan-out of [`AgentEvent`]s to any number of subscribers. Cloning shares the subscriber list.
#[derive(Clone, Default)]
pub struct EventBus {
    subscribers: Arc<Mutex<Vec<Subscriber>>>,
}

impl fmt::Debug for EventBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.subscriber_count())
            .finish()
    }
}

impl EventBus {
    /// A bus with no subscribers.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A new receiver of every event emitted from now on.
    #[must_use]
    pub fn subscribe(&self) -> UnboundedReceiver<AgentEvent> {
        let (tx, rx) = unbounded_channel();
        self.lock().push(Subscriber::Channel(tx));
        rx
    }

    /// Calls `sink` with every event emitted from now on, synchronously, in the emitting task
    /// (keep it cheap: queue the event, do not process it there), until it returns `false`. A
    /// sink sees the events in the exact order they are emitted, interleaved with whatever
    /// else the emitting code does, such as memory changes; a session store records both
    /// through one queue this way.
    pub fn subscribe_with(&self, sink: EventSink) {
        self.lock().push(Subscriber::Sink(sink));
    }

    /// Sends `event` to every live subscriber, forgetting the ones that stopped listening.
    pub fn emit(&self, event: AgentEvent) {
        self.lock().retain(|subscriber| subscriber.deliver(&event));
    }

    /// Number of live subscribers.
    #[must_use]
    pub fn subscriber_count(&self) -> usize {
        let mut subscribers = self.lock();
        subscribers.retain(|subscriber| !subscriber.is_closed());
        subscribers.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber>> {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl AgentEvent {
    /// Whether the event is for live views only — streamed text and reasoning, which the
    /// thought that follows carries whole or which is never sent back — and not journaled or
    /// stored.
    #[must_use]
    pub fn is_live_only(&self) -> bool {
        matches!(self, Self::TextDelta { .. } | Self::ReasoningDelta { .. })
    }

    /// The tokens and cost of the model call a [`AgentEvent::TokenUsage`] reports (`None` for
    /// every other event): what a run's tally adds with [`TokenUsage::add_call`].
    #[must_use]
    pub fn token_usage(&self) -> Option<TokenUsage> {
        match *self {
            Self::TokenUsage {
                prompt_tokens,
                cached_prompt_tokens,
                completion_tokens,
                cost_usd,
            } => Some(TokenUsage {
                prompt_tokens,
                cached_prompt_tokens,
                completion_tokens,
                cost_usd,
                ..TokenUsage::default()
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_and_reasoning_are_live_only() {
        assert!(AgentEvent::TextDelta { text: "a".into() }.is_live_only());
        assert!(AgentEvent::ReasoningDelta { text: "b".into() }.is_live_only());
        let thought = AgentEvent::Thought {
            step: 1,
            content: "a".into(),
            tool_calls: Vec::new(),
        };
        assert!(!thought.is_live_only());
    }

    #[test]
    fn events_read_back_from_their_json() {
        let events = [
            AgentEvent::Thought {
                step: 2,
                content: "look".into(),
                tool_calls: vec![ToolCall::new("c1", "bash", r#"{"command":"ls"}"#)],
            },
            AgentEvent::StateChanged {
                from: AgentState::Idle,
                to: AgentState::Running,
            },
            AgentEvent::TokenUsage {
                prompt_tokens: 10,
                cached_prompt_tokens: 2,
                completion_tokens: 3,
                cost_usd: Some(0.5),
            },
            AgentEvent::Finished {
                status: "finished".into(),
                steps: 3,
                usage: TokenUsage::default(),
            },
        ];
        for event in events {
            let json = serde_json::to_value(&event).unwrap();
            let back: AgentEvent = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(back, event, "{json}");
        }
    }

    #[test]
    fn every_subscriber_gets_every_event_and_dropped_ones_are_pruned() {
        let bus = EventBus::new();
        let mut a = bus.subscribe();
        let b = bus.subscribe();
        assert_eq!(bus.subscriber_count(), 2);
        drop(b);
        bus.emit(AgentEvent::Stuck { step: 1 });
        bus.emit(AgentEvent::Stuck { step: 2 });
        assert_eq!(bus.subscriber_count(), 1);
        assert_eq!(a.try_recv().ok(), Some(AgentEvent::Stuck { step: 1 }));
        assert_eq!(a.try_recv().ok(), Some(AgentEvent::Stuck { step: 2 }));
        assert!(a.try_recv().is_err());
    }

    #[test]
    fn a_sink_sees_events_in_order_until_it_unsubscribes() {
        let bus = EventBus::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        bus.subscribe_with(Arc::new(move |event: &AgentEvent| {
            let mut log = log.lock().unwrap();
            log.push(event.clone());
            log.len() < 2
        }));
        for step in 1..=3 {
            bus.emit(AgentEvent::Stuck { step });
        }
        assert_eq!(
            *seen.lock().unwrap(),
            [AgentEvent::Stuck { step: 1 }, AgentEvent::Stuck { step: 2 }]
        );
        assert_eq!(bus.subscriber_count(), 0);
    }

    #[test]
    fn events_serialise_with_a_type_tag() {
        let json = serde_json::to_value(AgentEvent::StateChanged {
            from: AgentState::Idle,
            to: AgentState::Running,
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "state_changed", "from": "IDLE", "to": "RUNNING"})
        );
    }

    fn usage_event(prompt: u64, completion: u64, cost: Option<f64>) -> AgentEvent {
        AgentEvent::TokenUsage {
            prompt_tokens: prompt,
            cached_prompt_tokens: 0,
            completion_tokens: completion,
            cost_usd: cost,
        }
    }

    #[test]
    fn a_token_usage_event_reports_its_call_and_no_other_event_does() {
        let mut usage = TokenUsage::default();
        for event in [
            usage_event(100, 10, Some(0.5)),
            usage_event(200, 20, None),
            AgentEvent::Stuck { step: 1 },
        ] {
            if let Some(call) = event.token_usage() {
                usage.add_call(&call);
            }
        }
        assert_eq!(usage.total_tokens(), 330);
        assert_eq!(usage.cost_usd, Some(0.5));
        assert_eq!(usage.unpriced_calls, 1);
    }

    #[test]
    fn finished_carries_the_run_tally_json() {
        let mut usage = TokenUsage::default();
        usage.add_call(&TokenUsage {
            prompt_tokens: 40,
            completion_tokens: 4,
            ..TokenUsage::default()
        });
        let json = serde_json::to_string(&AgentEvent::Finished {
            status: "finished".into(),
            steps: 1,
            usage,
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"type":"finished","status":"finished","steps":1,"usage":{"prompt_tokens":40,"cached_prompt_tokens":0,"completion_tokens":4,"cost_usd":0.0,"unpriced_calls":1}}"#
        );
        let back: AgentEvent = serde_json::from_str(&json).unwrap();
        assert!(matches!(back, AgentEvent::Finished { usage: read, .. } if read == usage));
    }
}
