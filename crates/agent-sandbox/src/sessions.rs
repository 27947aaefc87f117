//! The named shell sessions of a sandbox, one registry for every backend: a session is started
//! under a name no other session holds, found by name, removed, and all of them are taken when
//! the sandbox is cleaned up, after which the registry is closed.

use std::collections::BTreeMap;
use std::future::Future;

use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};

use crate::SandboxError;

/// A backend's sessions of type `S` by name; closed once [`ShellSessions::close`] ran.
#[derive(Debug)]
pub(crate) struct ShellSessions<S> {
    inner: Mutex<Option<BTreeMap<String, S>>>,
}

impl<S> ShellSessions<S> {
    /// An open, empty registry.
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(Some(BTreeMap::new())),
        }
    }

    /// [`SandboxError::Closed`] once the sandbox was cleaned up.
    pub(crate) async fn check_open(&self) -> Result<(), SandboxError> {
        if self.inner.lock().await.is_none() {
            return Err(SandboxError::Closed);
        }
        Ok(())
    }

    /// Whether the registry is closed, without waiting (for `Drop`); `false` while it is busy.
    #[cfg_attr(not(feature = "docker"), allow(dead_code))] // Only the Docker backend asks.
    pub(crate) fn is_closed_now(&self) -> bool {
        self.inner.try_lock().is_ok_and(|s| s.is_none())
    }

    /// Starts a session called `name` with `start`, unless one by that name exists. The registry
    /// stays locked while it starts, so two starts of one name cannot both succeed.
    pub(crate) async fn start<F, Fut>(&self, name: &str, start: F) -> Result<(), SandboxError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<S, SandboxError>>,
    {
        let mut sessions = self.inner.lock().await;
        let sessions = sessions.as_mut().ok_or(SandboxError::Closed)?;
        if sessions.contains_key(name) {
            return Err(SandboxError::SessionExists(name.to_owned()));
        }
        let session = start().await?;
        sessions.insert(name.to_owned(), session);
        Ok(())
    }

    /// The session called `name`, locked for the caller (other sessions wait until it is
    /// dropped).
    pub(crate) async fn get(&self, name: &str) -> Result<MappedMutexGuard<'_, S>, SandboxError> {
        let sessions = self.inner.lock().await;
        if sessions.is_none() {
            return Err(SandboxError::Closed);
        }
        MutexGuard::try_map(sessions, |s| s.as_mut().and_then(|s| s.get_mut(name)))
            .map_err(|_| SandboxError::NoSuchSession(name.to_owned()))
    }

    /// `look` at the session called `name`, if the registry is open and holds one.
    pub(crate) async fn peek<R>(&self, name: &str, look: impl FnOnce(&S) -> R) -> Option<R> {
        self.inner
            .lock()
            .await
            .as_ref()
            .and_then(|s| s.get(name))
            .map(look)
    }

    /// Takes the session called `name` out of the registry.
    pub(crate) async fn remove(&self, name: &str) -> Result<S, SandboxError> {
        self.inner
            .lock()
            .await
            .as_mut()
            .ok_or(SandboxError::Closed)?
            .remove(name)
            .ok_or_else(|| SandboxError::NoSuchSession(name.to_owned()))
    }

    /// The names of the sessions, sorted (none once closed).
    pub(crate) async fn names(&self) -> Vec<String> {
        self.inner
            .lock()
            .await
            .as_ref()
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Closes the registry and hands back every session, for the backend to stop them.
    pub(crate) async fn close(&self) -> Vec<S> {
        self.inner
            .lock()
            .await
            .take()
            .map(|s| s.into_values().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn names_are_unique_lookups_name_the_session_and_close_ends_everything() {
        let sessions = ShellSessions::<u32>::new();
        sessions.start("a", || async { Ok(1) }).await.unwrap();
        assert!(matches!(
            sessions.start("a", || async { Ok(2) }).await,
            Err(SandboxError::SessionExists(name)) if name == "a"
        ));
        *sessions.get("a").await.unwrap() += 10;
        assert_eq!(sessions.peek("a", |s| *s).await, Some(11));
        assert!(matches!(
            sessions.get("b").await,
            Err(SandboxError::NoSuchSession(name)) if name == "b"
        ));
        // A failed start leaves no session behind.
        let failed = sessions
            .start("c", || async { Err(SandboxError::Closed) })
            .await;
        assert!(failed.is_err());
        assert_eq!(sessions.names().await, ["a"]);
        sessions.start("d", || async { Ok(4) }).await.unwrap();
        assert_eq!(sessions.remove("d").await.unwrap(), 4);
        assert!(!sessions.is_closed_now());
        assert_eq!(sessions.close().await, [11]);
        assert!(sessions.is_closed_now());
        assert!(matches!(
            sessions.check_open().await,
            Err(SandboxError::Closed)
        ));
        assert!(matches!(sessions.get("a").await, Err(SandboxError::Closed)));
        assert!(sessions.names().await.is_empty());
    }
}
