//! Transport helpers: a transport wrapper that reports when the connection ends, and the
//! configured HTTP headers.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::{IntoTransport, Transport};
use tokio_util::sync::CancellationToken;

use crate::error::McpError;

/// A transport that fires `closed` when it ends (the peer closed it, or the service dropped it).
pub(super) struct Watched<T> {
    inner: T,
    closed: CancellationToken,
}

pub(super) fn watched<T, E, A>(
    transport: T,
    closed: CancellationToken,
) -> Watched<impl Transport<RoleClient>>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    Watched {
        inner: transport.into_transport(),
        closed,
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        let closed = &self.closed;
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if message.is_none() {
                closed.cancel();
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl<T> Drop for Watched<T> {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Parses configured HTTP headers.
pub(super) fn header_map(
    id: &str,
    headers: &BTreeMap<String, String>,
) -> Result<reqwest::header::HeaderMap, McpError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let header = |m: String| McpError::Config {
            server: id.to_owned(),
            message: m,
        };
        let n = reqwest::header::HeaderName::try_from(name.as_str())
            .map_err(|e| header(format!("bad header name `{name}` in `headers`: {e}")))?;
        let v = reqwest::header::HeaderValue::try_from(value.as_str())
            .map_err(|e| header(format!("bad value of header `{name}` in `headers`: {e}")))?;
        map.insert(n, v);
    }
    Ok(map)
}
