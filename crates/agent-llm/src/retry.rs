//! Retrying transient failures: jittered exponential backoff (tokio-retry's strategy, shaped like
//! tenacity's `wait_random_exponential(min, max)`), `Retry-After` honoured, permanent errors
//! returned at once.

use std::future::Future;
use std::time::Duration;

use agent_core::{AgentEvent, EventBus};
use tokio_retry::strategy::{ExponentialBackoff, jitter};
use tracing::warn;

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
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
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

    /// Runs `attempt` until it succeeds, fails permanently, or the attempts run out. Each retry is
    /// logged and, when `events` is given, emitted as [`AgentEvent::Retry`].
    ///
    /// # Errors
    ///
    /// The last error.
    pub async fn run<T, F, Fut>(
        &self,
        events: Option<&EventBus>,
        mut attempt: F,
    ) -> Result<T, LlmError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        let mut delays = self.delays();
        let mut number = 1;
        loop {
            let error = match attempt(number).await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            if !error.is_retryable() || number >= self.max_attempts.max(1) {
                return Err(error);
            }
            let backoff = delays.next().unwrap_or(self.max_delay);
            let delay = match error.retry_after() {
                Some(asked) if asked > self.max_retry_after => return Err(error),
                Some(asked) => asked,
                None => backoff,
            };
            warn!(attempt = number, delay_ms = delay.as_millis(), %error, "model call failed; retrying");
            if let Some(events) = events {
                events.emit(AgentEvent::Retry {
                    attempt: number,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    reason: error.to_string(),
                });
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
