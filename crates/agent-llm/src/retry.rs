//! Retrying transient failures: jittered exponential backoff (tokio-retry's strategy, shaped like
//! tenacity's `wait_random_exponential(min, max)`), `Retry-After` honoured, permanent errors
//! returned at once.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use agent_core::{AgentEvent, EventBus};
use tokio_retry::strategy::{ExponentialBackoff, jitter};
use tracing::{info, warn};

use crate::LlmError;

/// How many attempts, and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// Shortest wait.
    pub min_delay: Duration,
    /// Longest backoff wait.
    pub max_delay: Duration,
    /// Longest `Retry-After` waited for; a longer one returns the error at once.
    pub max_retry_after: Duration,
    /// Attempts in all when the server cannot be reached (connection refused, no route, DNS):
    /// fewer than for a server that answered, so a wrong `base_url` fails within seconds.
    pub max_connect_attempts: u32,
    /// Attempts in all when an attempt timed out (no answer within the request timeout, or a
    /// stream silent for the idle timeout): a server that hung twice is not asked six times.
    pub max_timeout_attempts: u32,
    /// Longest one call may take, every attempt and wait included (`None`: no limit). An
    /// attempt still running at the limit is abandoned with [`LlmError::Timeout`].
    pub call_timeout: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(300),
            max_connect_attempts: 3,
            max_timeout_attempts: 2,
            call_timeout: Some(Duration::from_secs(600)),
        }
    }
}

impl RetryPolicy {
    /// The policy an `[llm]` section configures (attempts, backoff, `Retry-After` cap, connect
    /// and timeout attempts, the per-call limit); every provider's client uses it.
    #[must_use]
    pub fn from_settings(settings: &crate::LlmSettings) -> Self {
        Self {
            max_attempts: settings.max_attempts.max(1),
            min_delay: crate::settings::secs(settings.backoff_min_secs).unwrap_or_default(),
            max_delay: crate::settings::secs(settings.backoff_max_secs).unwrap_or_default(),
            max_retry_after: crate::settings::secs(settings.max_retry_after_secs)
                .unwrap_or_default(),
            max_connect_attempts: settings.max_connect_attempts.max(1),
            max_timeout_attempts: settings.max_timeout_attempts.max(1),
            call_timeout: crate::settings::secs(settings.call_timeout_secs),
        }
    }
    /// The backoff windows: after failed attempt k the wait is drawn from
    /// `[min_delay, min(max_delay, min_delay * 2^(k-1))]`, so 1, 1–2, 1–4, 1–8, 1–16 s by default.
    fn delays(&self) -> impl Iterator<Item = Duration> + use<> {
        let min = self.min_delay;
        let max = self.max_delay.max(min);
        let unit = u64::try_from(min.as_millis().max(1) / 2)
            .unwrap_or(u64::MAX)
            .max(1);
        ExponentialBackoff::from_millis(2)
            .factor(unit)
            .max_delay(max)
            .map(move |cap| min + jitter(cap.saturating_sub(min)))
    }

    /// How many attempts in all `error`'s kind of failure is given.
    fn attempts_for(&self, error: &LlmError) -> u32 {
        let all = self.max_attempts.max(1);
        match error {
            LlmError::Connect(_) => self.max_connect_attempts.clamp(1, all),
            LlmError::Timeout(_) => self.max_timeout_attempts.clamp(1, all),
            _ => all,
        }
    }

    /// Runs `attempt` until it succeeds, fails permanently, the attempts its kind of failure is
    /// given run out, or the call's time limit passes. Each retry is logged and, when `events`
    /// is given, emitted as [`AgentEvent::Retry`]; a stream cut after its first token is
    /// retried as a new request and the event says the partial reply was discarded.
    ///
    /// # Errors
    ///
    /// The last error ([`LlmError::Timeout`] when the call's time limit passed mid-attempt).
    pub async fn run<T, F, Fut>(
        &self,
        events: Option<&EventBus>,
        mut attempt: F,
    ) -> Result<T, LlmError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        let deadline = self
            .call_timeout
            .map(|limit| (limit, Instant::now() + limit));
        let mut delays = self.delays();
        let mut number = 1;
        loop {
            let outcome = match deadline {
                Some((limit, at)) => tokio::time::timeout_at(at, attempt(number))
                    .await
                    .unwrap_or(Err(LlmError::Timeout(limit))),
                None => attempt(number).await,
            };
            let error = match outcome {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            if !error.is_retryable() || number >= self.attempts_for(&error) {
                return Err(error);
            }
            let backoff = delays.next().unwrap_or(self.max_delay);
            let delay = match error.retry_after() {
                Some(asked) if asked > self.max_retry_after => return Err(error),
                Some(asked) => asked,
                None => backoff,
            };
            if let Some((_, at)) = deadline
                && Instant::now() + delay >= at
            {
                // No time left for another attempt: the last error is the answer.
                return Err(error);
            }
            let reason = match &error {
                LlmError::StreamInterrupted {
                    received_tokens: true,
                    ..
                } => format!("{error}; the partial reply is discarded and the request sent again"),
                _ => error.to_string(),
            };
            if let Some(events) = events {
                // The event is the report (the terminal shows it as one line); the log only
                // keeps a trace of it, so a retry is not reported twice.
                info!(attempt = number, delay_ms = delay.as_millis(), %reason, "model call failed; retrying");
                events.emit(AgentEvent::Retry {
                    attempt: number,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    reason,
                });
            } else {
                warn!(attempt = number, delay_ms = delay.as_millis(), %reason, "model call failed; retrying");
            }
            tokio::time::sleep(delay).await;
            number += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn fast() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 6,
            min_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(8),
            max_retry_after: Duration::from_millis(200),
            max_connect_attempts: 3,
            max_timeout_attempts: 2,
            call_timeout: None,
        }
    }

    #[test]
    fn backoff_windows_grow_and_stay_within_bounds() {
        let policy = RetryPolicy::default();
        for _ in 0..50 {
            let delays: Vec<Duration> = policy.delays().take(7).collect();
            for (k, delay) in delays.iter().enumerate() {
                let cap = Duration::from_secs(1 << k).min(Duration::from_secs(60));
                assert!(
                    *delay >= Duration::from_secs(1) && *delay <= cap,
                    "attempt {k}: {delay:?} not in [1 s, {cap:?}]"
                );
            }
        }
        // The windows grow: over 200 draws, some wait after attempt k is longer than the whole
        // window of attempt k-1 (the chance that none is: 2^-200 for each k).
        let draws: Vec<Vec<Duration>> = (0..200)
            .map(|_| policy.delays().take(6).collect())
            .collect();
        for k in 1..6 {
            let previous_cap = Duration::from_secs(1 << (k - 1));
            assert!(
                draws.iter().any(|d| d[k] > previous_cap),
                "the wait after attempt {} never exceeded {previous_cap:?}",
                k + 1
            );
        }
    }

    #[tokio::test]
    async fn each_kind_of_failure_gets_its_own_number_of_attempts() {
        for (error, expected) in [
            (LlmError::Connect("refused".into()), 3),
            (LlmError::Timeout(Duration::from_secs(300)), 2),
            (LlmError::stream_interrupted("cut", true), 6),
            (LlmError::Network("reset".into()), 6),
        ] {
            let calls = AtomicU32::new(0);
            let result: Result<(), _> = fast()
                .run(None, |_| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    let error = error.clone();
                    async move { Err(error) }
                })
                .await;
            assert_eq!(result, Err(error.clone()));
            assert_eq!(calls.load(Ordering::SeqCst), expected, "{error}");
        }
    }

    #[tokio::test]
    async fn a_cut_stream_is_retried_and_the_event_says_the_partial_reply_was_discarded() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let result = fast()
            .run(Some(&bus), |n| async move {
                if n == 1 {
                    Err(LlmError::stream_interrupted("connection reset", true))
                } else {
                    Ok(n)
                }
            })
            .await;
        assert_eq!(result, Ok(2));
        let reasons: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .filter_map(|e| match e {
                AgentEvent::Retry { reason, .. } => Some(reason),
                _ => None,
            })
            .collect();
        assert_eq!(reasons.len(), 1);
        assert!(
            reasons[0].contains("after the first token")
                && reasons[0].contains("partial reply is discarded"),
            "{reasons:?}"
        );
    }

    #[tokio::test]
    async fn the_call_limit_ends_a_hanging_attempt_and_the_retries() {
        let policy = RetryPolicy {
            call_timeout: Some(Duration::from_secs(2)),
            ..fast()
        };
        let calls = AtomicU32::new(0);
        let started = std::time::Instant::now();
        let result: Result<(), _> = policy
            .run(None, |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                std::future::pending()
            })
            .await;
        assert_eq!(result, Err(LlmError::Timeout(Duration::from_secs(2))));
        assert_eq!(calls.load(Ordering::SeqCst), 1, "no time was left to retry");
        assert!(started.elapsed() >= Duration::from_secs(2));
    }

    #[tokio::test]
    async fn transient_errors_are_retried_until_success_with_events() {
        let calls = AtomicU32::new(0);
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let result = fast()
            .run(Some(&bus), |n| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n < 3 {
                        Err(LlmError::server(503, "busy"))
                    } else {
                        Ok(n)
                    }
                }
            })
            .await;
        assert_eq!(result, Ok(3));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let attempts: Vec<u32> = std::iter::from_fn(|| rx.try_recv().ok())
            .filter_map(|e| match e {
                AgentEvent::Retry { attempt, .. } => Some(attempt),
                _ => None,
            })
            .collect();
        assert_eq!(attempts, [1, 2]);
    }

    #[tokio::test]
    async fn permanent_errors_fail_at_once_and_attempts_are_bounded() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = fast()
            .run(None, |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err(LlmError::Authentication("bad key".into())) }
            })
            .await;
        assert_eq!(result, Err(LlmError::Authentication("bad key".into())));
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        calls.store(0, Ordering::SeqCst);
        let result: Result<(), _> = fast()
            .run(None, |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err(LlmError::Network("refused".into())) }
            })
            .await;
        assert_eq!(result, Err(LlmError::Network("refused".into())));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            6,
            "six attempts in all, like OpenManus"
        );
    }

    #[tokio::test]
    async fn retry_after_sets_the_delay_and_an_excessive_one_is_not_waited_for() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let policy = fast();
        let result = policy
            .run(Some(&bus), |n| async move {
                if n == 1 {
                    Err(LlmError::RateLimited {
                        retry_after: Some(Duration::from_millis(50)),
                    })
                } else {
                    Ok(())
                }
            })
            .await;
        assert_eq!(result, Ok(()));
        let delays: Vec<u64> = std::iter::from_fn(|| rx.try_recv().ok())
            .filter_map(|e| match e {
                AgentEvent::Retry { delay_ms, .. } => Some(delay_ms),
                _ => None,
            })
            .collect();
        assert_eq!(delays, [50], "the provider's Retry-After is the wait");

        let calls = AtomicU32::new(0);
        let long = LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(3600)),
        };
        let result: Result<(), _> = policy
            .run(None, |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                let e = long.clone();
                async move { Err(e) }
            })
            .await;
        assert_eq!(result, Err(long));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
