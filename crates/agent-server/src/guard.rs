//! Who may talk to the server: the bearer token, and the Host and Origin checks that stop a
//! web page on another site from reaching a server on this machine (DNS rebinding, cross-site
//! requests).
//!
//! * **Token.** When the server has one (always when it listens beyond loopback), every API
//!   request must carry it, as `Authorization: Bearer <token>` or as the `openmanus_token`
//!   cookie that `POST /api/login` sets for the page (an `EventSource` cannot send headers).
//!   The static page and `GET /api/health` need no token.
//! * **Host.** On a loopback bind the `Host` header must name a loopback host (`localhost`,
//!   `127.0.0.1`, `[::1]`, any port): a rebinding attacker's page sends its own host name. On a
//!   wider bind, the names in `allowed_hosts` (when given) are the only ones accepted.
//! * **Origin.** A request with an `Origin` header is accepted only from the server's own
//!   origin (the scheme and the `Host` it was reached by) or an origin in `allowed_origins`.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use crate::error::ApiError;

/// The cookie that carries the token for the page.
pub const TOKEN_COOKIE: &str = "openmanus_token";

/// The access rules of a running server.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The token every API request must carry (`None`: no token, loopback only).
    pub token: Option<String>,
    /// Whether the server listens on loopback only.
    pub loopback: bool,
    /// Host names (without port) accepted in `Host` besides the loopback names; empty on a wider
    /// bind means any host.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) accepted besides the server's own.
    pub allowed_origins: Vec<String>,
}

impl Access {
    /// Checks `Host` and `Origin`.
    fn check_site(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let name = host_name(host);
        let host_ok = if self.loopback {
            is_loopback_name(name)
                || self
                    .allowed_hosts
                    .iter()
                    .any(|h| h.eq_ignore_ascii_case(name))
        } else {
            self.allowed_hosts.is_empty()
                || self
                    .allowed_hosts
                    .iter()
                    .any(|h| h.eq_ignore_ascii_case(name))
                || is_loopback_name(name)
        };
        if !host_ok {
            return Err(ApiError::Forbidden(format!(
                "the host {host:?} is not served here"
            )));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or_default();
            let own = [format!("http://{host}"), format!("https://{host}")];
            let allowed = own.iter().any(|o| o.eq_ignore_ascii_case(origin))
                || self
                    .allowed_origins
                    .iter()
                    .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin));
            if !allowed {
                return Err(ApiError::Forbidden(format!(
                    "requests from the origin {origin:?} are refused"
                )));
            }
        }
        Ok(())
    }

    /// Checks the token, when the server has one.
    pub(crate) fn check_token(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(expected) = &self.token else {
            return Ok(());
        };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == TOKEN_COOKIE)
            .map(|(_, value)| value);
        match bearer.or(cookie) {
            Some(given) if same_secret(given, expected) => Ok(()),
            Some(_) => Err(ApiError::Unauthorized("the token is wrong".into())),
            None => Err(ApiError::Unauthorized(
                "this server needs a token: send `Authorization: Bearer <token>`".into(),
            )),
        }
    }

    /// Whether `given` is the server's token (for the login endpoint).
    #[must_use]
    pub fn accepts(&self, given: &str) -> bool {
        self.token
            .as_deref()
            .is_none_or(|expected| same_secret(given, expected))
    }
}

/// Middleware for every route: the Host and Origin checks.
pub async fn site(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    match access.check_site(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

/// Middleware for the API routes that need the token.
pub async fn token(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    match access.check_token(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => {
            let mut response = error.into_response();
            if response.status() == StatusCode::UNAUTHORIZED {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            response
        }
    }
}

/// The host name of a `Host` header value, without the port (`[::1]:8080` → `[::1]`).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host
            .split_once(']')
            .map_or(host, |(name, _)| &host[..=name.len()]);
    }
    host.split_once(':').map_or(host, |(name, _)| name)
}

/// `localhost`, `127.x.y.z` or `[::1]`.
fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name == "[::1]"
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Compares two secrets in time that depends only on their lengths.
fn same_secret(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn host_names_lose_their_port() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "[::1]");
        assert_eq!(host_name("[::1]"), "[::1]");
        assert_eq!(host_name("example.com"), "example.com");
    }

    #[test]
    fn loopback_servers_refuse_foreign_hosts_and_origins() {
        let access = Access {
            loopback: true,
            ..Access::default()
        };
        assert!(
            access
                .check_site(&headers(&[(header::HOST, "127.0.0.1:3000")]))
                .is_ok()
        );
        assert!(
            access
                .check_site(&headers(&[(header::HOST, "localhost:3000")]))
                .is_ok()
        );
        assert!(
            access
                .check_site(&headers(&[(header::HOST, "evil.example:3000")]))
                .is_err()
        );
        assert!(
            access
                .check_site(&headers(&[
                    (header::HOST, "127.0.0.1:3000"),
                    (header::ORIGIN, "http://127.0.0.1:3000")
                ]))
                .is_ok()
        );
        assert!(
            access
                .check_site(&headers(&[
                    (header::HOST, "127.0.0.1:3000"),
                    (header::ORIGIN, "https://evil.example")
                ]))
                .is_err()
        );
    }

    #[test]
    fn tokens_come_from_the_header_or_the_cookie() {
        let access = Access {
            token: Some("s3cret".into()),
            ..Access::default()
        };
        assert!(access.check_token(&HeaderMap::new()).is_err());
        assert!(
            access
                .check_token(&headers(&[(header::AUTHORIZATION, "Bearer s3cret")]))
                .is_ok()
        );
        assert!(
            access
                .check_token(&headers(&[(header::AUTHORIZATION, "Bearer wrong!")]))
                .is_err()
        );
        assert!(
            access
                .check_token(&headers(&[(header::COOKIE, "a=b; openmanus_token=s3cret")]))
                .is_ok()
        );
        assert!(access.accepts("s3cret") && !access.accepts("s3cre"));
    }
}
