//! How a run ends and what a session is ([`Ending`], [`RunState`], [`SessionState`]), and what a
//! stored event is ([`EventKind`], [`RunId`], [`EventId`]): the words the store, the workers,
//! the web server, A2A and the CLI share. Each is written as the same snake-case text in JSON, in
//! SQLite and on the page.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A run's id (its row id in the session store; increasing over the whole store).
pub type RunId = i64;
/// An event's id: increasing over the whole store, never reused (the SSE `Last-Event-ID`).
pub type EventId = i64;

/// A text that names none of an enum's values (a newer writer's, or a damaged record).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?}")]
pub struct UnknownValue {
    /// What was being read (`run state`, `event kind`, ...).
    pub what: &'static str,
    /// The text.
    pub value: String,
}

/// How a run ended, in the few cases a front end tells apart (exit codes, HTTP states, A2A
/// task states, a worker's result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// The agent finished (or every step of the flow's plan was completed).
    Finished,
    /// The step budget ran out first.
    MaxSteps,
    /// The run was cancelled.
    Cancelled,
    /// The run failed, or the flow ended with steps not done (blocked, timed out).
    Failed,
    /// A budget of `[agent]` (tokens, cost, time) was reached; the status says which.
    Budget,
    /// The model declined the task (a refusal, or the provider's content filter stopped its
    /// reply); the status carries what it said.
    Refused,
}

impl Ending {
    /// Every ending, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::Finished,
        Self::MaxSteps,
        Self::Cancelled,
        Self::Failed,
        Self::Budget,
        Self::Refused,
    ];

    /// The text it is written as (in JSON too): snake case.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Finished => "finished",
            Self::MaxSteps => "max_steps",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
            Self::Budget => "budget",
            Self::Refused => "refused",
        }
    }

    /// The state the session store records for a run that ended so. A budget reached is
    /// recorded as `max_steps` (the run stopped on a limit; the status text says which).
    #[must_use]
    pub fn run_state(self) -> RunState {
        match self {
            Self::Finished => RunState::Finished,
            Self::MaxSteps | Self::Budget => RunState::MaxSteps,
            Self::Cancelled => RunState::Cancelled,
            Self::Failed => RunState::Failed,
            Self::Refused => RunState::Refused,
        }
    }
}

macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The text stored (and serialised): snake case.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(UnknownValue { what: $what, value: other.to_owned() }),
                }
            }
        }
    };
}

text_enum!(
    /// Where a session stands: the state of its latest run, or idle before the first.
    SessionState, "session state" {
        /// No run yet, or the last one ran out of steps (a new task continues it).
        Idle = "idle",
        /// A run is in progress.
        Running = "running",
        /// The last run finished.
        Finished = "finished",
        /// The last run failed (or the model refused it).
        Failed = "failed",
        /// The last run was cancelled, or its process ended in the middle of it.
        Interrupted = "interrupted",
    }
);

text_enum!(
    /// How a run ended (or that it has not).
    RunState, "run state" {
        /// In progress (or its process died and nobody has looked since:
        /// `agent_store::Store::mark_interrupted_runs`).
        Running = "running",
        /// The agent finished (or the flow completed its plan).
        Finished = "finished",
        /// The step budget ran out first.
        MaxSteps = "max_steps",
        /// The run was cancelled.
        Cancelled = "cancelled",
        /// The run failed.
        Failed = "failed",
        /// The process running it ended in the middle of it (killed, crashed).
        Interrupted = "interrupted",
        /// The model declined the task (a refusal, or its provider's content filter).
        Refused = "refused",
    }
);

impl RunState {
    /// The state a session takes when its latest run ends so.
    #[must_use]
    pub fn session_state(self) -> SessionState {
        match self {
            Self::Running => SessionState::Running,
            Self::Finished => SessionState::Finished,
            Self::MaxSteps => SessionState::Idle,
            Self::Failed | Self::Refused => SessionState::Failed,
            Self::Cancelled | Self::Interrupted => SessionState::Interrupted,
        }
    }
}

text_enum!(
    /// What was decided about a tool call that needed more than its confinement allows.
    PermissionDecision, "permission decision" {
        /// It ran with more (unconfined), once or under a standing permission.
        Allowed = "allowed",
        /// It was refused (or kept to what the confinement allowed).
        Denied = "denied",
    }
);

text_enum!(
    /// Who made a [`PermissionDecision`].
    Decider, "decider" {
        /// The approval policy (`[permissions] approval`), with nobody asked.
        Policy = "policy",
        /// A rule (`[[permissions.rules]]`, or one an "always" answer wrote).
        Rule = "rule",
        /// A hook command.
        Hook = "hook",
        /// The person driving the run, asked.
        Person = "person",
    }
);

text_enum!(
    /// What a stored event is.
    EventKind, "event kind" {
        /// An `agent_core::AgentEvent` (its JSON, tagged by `type`).
        Agent = "agent",
        /// A planning-flow event (`agents::flow::FlowEvent`'s JSON).
        Flow = "flow",
        /// A run began: `{"run_id", "task"}`.
        RunStarted = "run_started",
        /// A run ended: `{"run_id", "state", "status", "answer", "usage", "changes"}`.
        RunFinished = "run_finished",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_round_trip_and_unknown_ones_are_named() {
        for &state in RunState::ALL {
            assert_eq!(state.as_str().parse::<RunState>(), Ok(state));
            assert_eq!(
                serde_json::to_string(&state).unwrap(),
                format!("\"{state}\"")
            );
        }
        let error = "later".parse::<EventKind>().unwrap_err();
        assert_eq!(error.to_string(), "unknown event kind \"later\"");
    }

    #[test]
    fn every_ending_has_its_run_state() {
        assert_eq!(Ending::Finished.run_state(), RunState::Finished);
        assert_eq!(Ending::MaxSteps.run_state(), RunState::MaxSteps);
        assert_eq!(Ending::Budget.run_state(), RunState::MaxSteps);
        assert_eq!(Ending::Cancelled.run_state(), RunState::Cancelled);
        assert_eq!(Ending::Failed.run_state(), RunState::Failed);
        assert_eq!(Ending::Refused.run_state(), RunState::Refused);
        assert_eq!(RunState::Refused.session_state(), SessionState::Failed);
        for ending in Ending::ALL {
            assert_eq!(
                serde_json::to_string(&ending).unwrap(),
                format!("\"{}\"", ending.as_str())
            );
        }
    }
}
