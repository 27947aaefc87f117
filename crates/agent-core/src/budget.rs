//! The limits a run may use ([`Budget`]: tokens, cost and wall time), measured by a
//! [`BudgetMeter`] that one agent owns or that a flow shares between its executors. What is
//! measured is a [`TokenUsage`], added up from the run's events.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_protocol::TokenUsage;
use serde::Serialize;

use crate::event::AgentEvent;

/// Which limit of a [`Budget`] a run reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    /// Input plus output tokens.
    Tokens,
    /// US dollars.
    Cost,
    /// Wall-clock time.
    Time,
}

impl BudgetKind {
    /// `tokens`, `cost` or `time`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tokens => "tokens",
            Self::Cost => "cost",
            Self::Time => "time",
        }
    }
}

/// A budget a run reached: which one, how much was used and the limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BudgetExceeded {
    /// The limit reached.
    pub kind: BudgetKind,
    /// What was used: tokens, US dollars or seconds.
    pub used: f64,
    /// The limit, in the same unit.
    pub limit: f64,
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            BudgetKind::Tokens => write!(
                f,
                "token budget reached: {} of {} tokens used",
                self.used, self.limit
            ),
            BudgetKind::Cost => write!(
                f,
                "cost budget reached: ${:.4} of ${:.4} spent",
                self.used, self.limit
            ),
            BudgetKind::Time => write!(
                f,
                "time budget reached: {:.1} s of {} s elapsed",
                self.used, self.limit
            ),
        }
    }
}

/// Limits on one run (or, through a shared [`BudgetMeter`], on a whole flow). `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// Input plus output tokens.
    pub max_tokens: Option<u64>,
    /// US dollars, counted at the models' prices (calls of unpriced models count nothing).
    pub max_cost_usd: Option<f64>,
    /// Wall-clock time from the start of the run.
    pub max_duration: Option<Duration>,
}

impl Budget {
    /// Whether no limit is set.
    #[must_use]
    pub fn is_unlimited(&self) -> bool {
        self.max_tokens.is_none() && self.max_cost_usd.is_none() && self.max_duration.is_none()
    }

    /// The first limit that `usage` after `elapsed` has reached, if any (tokens, then cost, then
    /// time). A limit is reached when what was used is at least the limit.
    #[must_use]
    pub fn check(&self, usage: &TokenUsage, elapsed: Duration) -> Option<BudgetExceeded> {
        if let Some(max) = self.max_tokens
            && usage.total_tokens() >= max
        {
            return Some(BudgetExceeded {
                kind: BudgetKind::Tokens,
                used: usage.total_tokens() as f64,
                limit: max as f64,
            });
        }
        if let Some(max) = self.max_cost_usd
            && usage.cost_usd.unwrap_or(0.0) >= max
        {
            return Some(BudgetExceeded {
                kind: BudgetKind::Cost,
                used: usage.cost_usd.unwrap_or(0.0),
                limit: max,
            });
        }
        if let Some(max) = self.max_duration
            && elapsed >= max
        {
            return Some(BudgetExceeded {
                kind: BudgetKind::Time,
                used: elapsed.as_secs_f64(),
                limit: max.as_secs_f64(),
            });
        }
        None
    }

    /// The time budget as reached after `elapsed` (`None` without a time limit).
    #[must_use]
    pub fn time_exceeded(&self, elapsed: Duration) -> Option<BudgetExceeded> {
        self.max_duration.map(|max| BudgetExceeded {
            kind: BudgetKind::Time,
            used: elapsed.as_secs_f64(),
            limit: max.as_secs_f64(),
        })
    }
}

#[derive(Debug)]
struct MeterState {
    started: Instant,
    usage: TokenUsage,
}

/// Measures what a budget limits: the usage added since [`BudgetMeter::restart`], and the time
/// since then. Clones share the measure, so a flow gives one meter to all its executors
/// ([`BaseAgent::share_budget_meter`](crate::BaseAgent::share_budget_meter)) and its limits hold
/// over all its steps.
#[derive(Debug, Clone)]
pub struct BudgetMeter {
    state: Arc<Mutex<MeterState>>,
}

impl Default for BudgetMeter {
    fn default() -> Self {
        Self::new()
    }
}

impl BudgetMeter {
    /// A meter started now, with nothing used.
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(MeterState {
                started: Instant::now(),
                usage: TokenUsage::default(),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MeterState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts again from now with nothing used.
    pub fn restart(&self) {
        let mut state = self.lock();
        state.started = Instant::now();
        state.usage = TokenUsage::default();
    }

    /// Adds what `event` reports (only an [`AgentEvent::TokenUsage`] reports anything).
    pub fn record(&self, event: &AgentEvent) {
        if let Some(call) = event.token_usage() {
            self.lock().usage.add_call(&call);
        }
    }

    /// What was used since the start.
    #[must_use]
    pub fn usage(&self) -> TokenUsage {
        self.lock().usage
    }

    /// When the meter started.
    #[must_use]
    pub fn started(&self) -> Instant {
        self.lock().started
    }

    /// The limit of `budget` reached so far, if any.
    #[must_use]
    pub fn check(&self, budget: &Budget) -> Option<BudgetExceeded> {
        let state = self.lock();
        budget.check(&state.usage, state.started.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_is_reached_at_its_value() {
        let budget = Budget {
            max_tokens: Some(100),
            max_cost_usd: Some(1.0),
            max_duration: Some(Duration::from_secs(60)),
        };
        let mut usage = TokenUsage {
            prompt_tokens: 90,
            completion_tokens: 9,
            cost_usd: Some(0.99),
            ..TokenUsage::default()
        };
        assert_eq!(budget.check(&usage, Duration::from_secs(59)), None);
        usage.completion_tokens = 10;
        let hit = budget.check(&usage, Duration::ZERO).unwrap();
        assert_eq!(hit.kind, BudgetKind::Tokens);
        assert_eq!(
            hit.to_string(),
            "token budget reached: 100 of 100 tokens used"
        );
        usage.completion_tokens = 0;
        usage.cost_usd = Some(1.25);
        let hit = budget.check(&usage, Duration::ZERO).unwrap();
        assert_eq!(
            hit.to_string(),
            "cost budget reached: $1.2500 of $1.0000 spent"
        );
        usage.cost_usd = None;
        let hit = budget.check(&usage, Duration::from_secs(61)).unwrap();
        assert_eq!(
            hit.to_string(),
            "time budget reached: 61.0 s of 60 s elapsed"
        );
        assert!(Budget::default().is_unlimited());
        assert_eq!(Budget::default().check(&usage, Duration::MAX), None);
    }

    #[test]
    fn clones_of_a_meter_share_what_they_measure() {
        let meter = BudgetMeter::new();
        let shared = meter.clone();
        shared.record(&AgentEvent::TokenUsage {
            prompt_tokens: 5,
            cached_prompt_tokens: 0,
            completion_tokens: 5,
            cost_usd: Some(0.1),
        });
        assert_eq!(meter.usage().total_tokens(), 10);
        meter.restart();
        assert_eq!(shared.usage(), TokenUsage::default());
    }
}
