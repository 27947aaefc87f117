//! Waiting for a page to load: navigating, polling a page condition, letting a page settle.

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::NavigateParams;
use chromiumoxide::error::CdpError;
use serde::de::DeserializeOwned;
use tracing::debug;

use crate::{BrowserError, page_script};

/// The page condition of a loaded document.
const LOADED: &str = "return document.readyState === 'complete';";

/// Polls the page condition `body` (a function body returning a boolean) every 50 ms until it
/// holds; the caller's timeout bounds it.
pub(crate) async fn wait_until(page: &Page, body: &str) -> Result<(), BrowserError> {
    poll(page, body, |holds: bool| holds.then_some(Ok(()))).await
}

/// Evaluates `body` (a function body) every 50 ms until `done` makes something of what it
/// returned; an evaluation that fails (the document is changing) is tried again. The caller's
/// timeout bounds it.
async fn poll<T: DeserializeOwned, R>(
    page: &Page,
    body: &str,
    mut done: impl FnMut(T) -> Option<R>,
) -> R {
    loop {
        if let Some(end) = page_script::<T>(page, body).await.ok().and_then(&mut done) {
            return end;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The property a document gets just before a navigation away from it: the document that
/// comes without it is the new one.
const LEAVING: &str = "__openmanusLeaving";

/// Navigates `page` to `url` and waits until the new document has loaded (the caller's
/// timeout bounds the wait).
///
/// chromiumoxide gives every command 30 s, whatever the handler's configured request timeout
/// (0.9.1: `CommandFuture`'s fixed delay), and Chromium answers `Page.navigate` only once the
/// server has answered. A slower answer (a loaded machine, a slow site) is not a failure the
/// caller's timeout allows: the navigation goes on in Chromium, and the wait is then for the
/// document without the mark the old one was given, or at `url` (a move within the page).
/// Asking again would start the navigation over each time and never finish one slower than
/// 30 s. Where the old document cannot be marked (a page that runs no script), it is asked
/// again.
pub(crate) async fn navigate(page: &Page, url: &str) -> Result<(), BrowserError> {
    // Bounded: a page busy in a script of its own answers nothing, and is navigated away from.
    let mark = format!("window.{LEAVING} = true; return true;");
    let marked = tokio::time::timeout(MARK_WITHIN, page_script::<bool>(page, &mark)).await;
    let marked = matches!(marked, Ok(Ok(true)));
    let response = match page.execute(NavigateParams::new(url)).await {
        Err(CdpError::Timeout) if marked => {
            debug!("no answer from Chromium in its 30 s; waiting for the new document");
            return arrival(page, url).await;
        }
        Err(CdpError::Timeout) => {
            again_on_cdp_timeout(|| page.execute(NavigateParams::new(url))).await?
        }
        other => other?,
    };
    if let Some(error) = response
        .result
        .error_text
        .as_deref()
        .filter(|e| !e.is_empty())
    {
        return Err(BrowserError::Script(format!(
            "navigation to {url} failed: {error}"
        )));
    }
    wait_until(page, LOADED).await
}

/// How long the document being left may take to be marked.
const MARK_WITHIN: Duration = Duration::from_secs(5);

/// Waits (polling every 50 ms; the caller's timeout bounds it) until the navigation to `url`
/// of a page whose document was marked [`LEAVING`] has ended: loaded, or shown Chromium's
/// error page (the server hung up, the name did not resolve, ...).
async fn arrival(page: &Page, url: &str) -> Result<(), BrowserError> {
    let target = serde_json::to_string(url).unwrap_or_default();
    let state = format!(
        "if (window.{LEAVING} && location.href !== new URL({target}).href) return 'leaving'; \
         if (location.protocol === 'chrome-error:') return 'failed'; \
         return document.readyState === 'complete' ? 'loaded' : 'loading';"
    );
    poll(page, &state, |state: String| match state.as_str() {
        "loaded" => Some(Ok(())),
        "failed" => Some(Err(BrowserError::Script(format!(
            "navigation to {url} failed: Chromium shows its error page"
        )))),
        _ => None,
    })
    .await
}

/// Runs `attempt` until it ends other than in chromiumoxide's own timeout (see [`navigate`]):
/// the bound is the caller's timeout, which every caller sets.
async fn again_on_cdp_timeout<T, F, Fut>(mut attempt: F) -> Result<T, CdpError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, CdpError>>,
{
    loop {
        match attempt().await {
            Err(CdpError::Timeout) => debug!("no answer from Chromium in its 30 s; asking again"),
            other => return other,
        }
    }
}

/// Gives a page up to five seconds to finish loading after an interaction; never fails.
pub(crate) async fn settle(page: &Page) {
    let done = tokio::time::timeout(Duration::from_secs(5), wait_until(page, LOADED)).await;
    if done.is_err() {
        debug!("the page is still loading");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::cell::Cell;

    use super::*;

    #[tokio::test]
    async fn a_command_chromiumoxide_timed_out_is_asked_again_until_it_answers() {
        let calls = Cell::new(0);
        let answer = again_on_cdp_timeout(|| {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move { if n < 3 { Err(CdpError::Timeout) } else { Ok(n) } }
        })
        .await
        .unwrap();
        assert_eq!(answer, 3);
        assert_eq!(calls.get(), 3);
    }

    #[tokio::test]
    async fn any_other_failure_ends_it_at_once() {
        let calls = Cell::new(0);
        let failure = again_on_cdp_timeout(|| {
            calls.set(calls.get() + 1);
            async { Err::<(), _>(CdpError::NotFound) }
        })
        .await
        .unwrap_err();
        assert!(matches!(failure, CdpError::NotFound), "{failure:?}");
        assert_eq!(calls.get(), 1);
    }
}
