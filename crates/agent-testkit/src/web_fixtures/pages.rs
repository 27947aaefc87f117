//! The content pages.

use std::io;
use std::sync::atomic::Ordering;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::engines::escape;
use super::{FixtureEngine, FixtureRequest, Shared, html_response, not_found, redirect, response};

/// The paths of the content pages.
pub mod paths {
    /// A news article (`<main><article>`) wrapped in page furniture: a cookie banner, a site
    /// header with navigation, a sidebar, a newsletter box, a fixed "subscribe" overlay, a
    /// footer, inline and external scripts and a stylesheet. Its content: the title
    /// `Understanding Async Rust | The Example Journal`, an `<h1>` `Understanding Async Rust`, two
    /// `<h2>` (`Futures are lazy`, `Choosing a runtime`), paragraphs with a relative link
    /// (`/docs/futures`) and an absolute one (`https://tokio.rs/`), an image
    /// (`/images/state-machine.png`), a list, a Rust code block, a table and a two-word
    /// paragraph (`Short note.`).
    pub const ARTICLE: &str = "/pages/article";
    /// A page of [`HUGE_PAGE_BYTES`](super::HUGE_PAGE_BYTES), generated while it is sent; it
    /// starts with `<h1>A very large page</h1>`.
    pub const HUGE: &str = "/pages/huge";
    /// A page in windows-1251, declared only in the `Content-Type` header; its paragraph is
    /// [`CYRILLIC_TEXT`](super::CYRILLIC_TEXT).
    pub const WINDOWS_1251: &str = "/pages/windows-1251";
    /// A page in GBK, declared only in a `<meta http-equiv>` tag (the header says `text/html`);
    /// its paragraph is [`CHINESE_TEXT`](super::CHINESE_TEXT).
    pub const GBK: &str = "/pages/gbk";
    /// A 302 to [`ARTICLE`].
    pub const REDIRECT: &str = "/pages/redirect";
    /// A redirect loop: 302 to `/pages/loop-back`, which redirects here.
    pub const REDIRECT_LOOP: &str = "/pages/loop";
    /// A page that answers after the delay set by
    /// [`WebFixtures::set_slow_delay`](crate::web_fixtures::WebFixtures::set_slow_delay).
    pub const SLOW: &str = "/pages/slow";
    /// A 404 with an HTML body.
    pub const MISSING: &str = "/pages/missing";
    /// A `text/plain` file.
    pub const TEXT: &str = "/pages/notes.txt";
    /// An `application/pdf` file.
    pub const PDF: &str = "/pages/report.pdf";
}

/// The paragraph of [`paths::WINDOWS_1251`].
pub const CYRILLIC_TEXT: &str = "Привет, мир! Эта страница закодирована в windows-1251, и её текст должен читаться без искажений.";

/// The paragraph of [`paths::GBK`].
pub const CHINESE_TEXT: &str = "这是一个使用国标扩展编码的页面，用来检查字符集是否被正确地解码。";

/// The size of [`paths::HUGE`]: 64 MiB.
pub const HUGE_PAGE_BYTES: usize = 64 * 1024 * 1024;

const ARTICLE_HTML: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Understanding Async Rust | The Example Journal</title>
<meta property="og:title" content="Understanding Async Rust">
<link rel="stylesheet" href="/static/site.css">
<style>body { font-family: Georgia, serif; } .promo { color: red; }</style>
<script>window.analytics = { track: function () { return "TRACKING-SCRIPT"; } };</script>
</head>
<body>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your experience on our site. <button>Accept all cookies</button></div>
<header class="site-header">
  <a href="/" class="logo">The Example Journal</a>
  <nav aria-label="Main"><ul><li><a href="/news">News</a></li><li><a href="/opinion">Opinion</a></li><li><a href="/subscribe">Subscribe</a></li></ul></nav>
</header>
<div class="layout">
<aside class="sidebar"><h3>Trending now</h3><ul><li><a href="/trending/1">Ten gadgets you need this winter</a></li></ul></aside>
<main id="content">
<article>
<header>
<h1>Understanding Async Rust</h1>
<p class="byline">By Ada Example, a writer who covers systems programming for the journal.</p>
</header>
<p>Asynchronous Rust lets one thread juggle thousands of tasks: a <a href="/docs/futures">future</a> does nothing until an executor polls it, and every <code>.await</code> is a point where the task may pause.</p>
<h2>Futures are lazy</h2>
<p>Creating a future only builds a state machine; nothing runs until it is awaited or spawned on a runtime such as <a href="https://tokio.rs/">Tokio</a>, which then drives it to completion.</p>
<img src="/images/state-machine.png" alt="A future as a state machine">
<h2>Choosing a runtime</h2>
<ul>
<li>Tokio for servers and network clients</li>
<li>smol for small binaries</li>
</ul>
<pre><code class="language-rust">async fn answer() -&gt; u32 {
    42
}</code></pre>
<p>Short note.</p>
<table>
<thead><tr><th>Runtime</th><th>Threads</th></tr></thead>
<tbody><tr><td>Tokio</td><td>many</td></tr></tbody>
</table>
<div class="newsletter-signup"><p>Sign up for our weekly newsletter and never miss another article again, it is completely free!</p><form action="/subscribe"><input type="email" name="email"><button>Sign up</button></form></div>
<div class="paywall" style="position: fixed; bottom: 0"><p>Subscribe now to keep reading unlimited articles for just one dollar a month, cancel anytime.</p></div>
</article>
</main>
</div>
<footer class="site-footer"><p>© 2025 The Example Journal. All rights reserved. Read our <a href="/privacy">privacy policy</a> before you go.</p></footer>
<script src="/static/app.js"></script>
<script>document.write("INJECTED-BY-SCRIPT");</script>
</body>
</html>
"#;

const TEXT_FILE: &str = "Plain text notes for the fixture server.\n\nThe second paragraph of the \
notes file is long enough to be kept by any reasonable word-count threshold.\n";

const PDF_FILE: &[u8] =
    b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <script>var tracker = 'RESULT-PAGE-SCRIPT';</script></head><body><nav><a \
         href=\"/\">Home</a> <a href=\"/about\">About</a></nav><main>{body}</main><footer>Fixture \
         footer text</footer></body></html>"
    )
}

fn encoded_page(
    encoding: &'static encoding_rs::Encoding,
    html: &str,
    content_type: &'static str,
) -> Response {
    let (bytes, _, _) = encoding.encode(html);
    response(StatusCode::OK, content_type, bytes.into_owned())
}

fn huge_page(shared: &Shared) -> Response {
    let head = "<!DOCTYPE html><html><head><title>A very large page</title></head><body><main>\
                <h1>A very large page</h1><p>This page is far larger than any tool should \
                download, and only its beginning matters to a reader.</p>";
    let filler: String = (0..64)
        .map(|i| {
            format!(
                "<p>Filler paragraph {i:02} repeats the same words over and over so that the page \
                 grows without end.</p>\n"
            )
        })
        .collect();
    let chunk = Bytes::from(filler);
    let shared_counter = shared.huge_bytes_sent.clone();
    let stream = futures::stream::unfold(0_usize, move |sent| {
        let chunk = chunk.clone();
        let counter = shared_counter.clone();
        async move {
            let next = if sent == 0 {
                Bytes::from(head)
            } else if sent >= HUGE_PAGE_BYTES {
                return None;
            } else {
                chunk
            };
            counter.fetch_add(next.len(), Ordering::Relaxed);
            let sent = sent + next.len();
            Some((Ok::<Bytes, io::Error>(next), sent))
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

pub(super) async fn answer(shared: &Shared, request: &FixtureRequest) -> Response {
    let path = request.path.as_str();
    match path {
        paths::ARTICLE => html_response(StatusCode::OK, ARTICLE_HTML),
        paths::HUGE => huge_page(shared),
        paths::WINDOWS_1251 => encoded_page(
            encoding_rs::WINDOWS_1251,
            &format!(
                "<!DOCTYPE html><html lang=\"ru\"><head><title>Новости дня</title></head><body>\
                 <main><h1>Новости дня</h1><p>{CYRILLIC_TEXT}</p></main></body></html>"
            ),
            "text/html; charset=windows-1251",
        ),
        paths::GBK => encoded_page(
            encoding_rs::GBK,
            &format!(
                "<!DOCTYPE html><html lang=\"zh\"><head><meta http-equiv=\"Content-Type\" \
                 content=\"text/html; charset=gbk\"><title>中文测试页面</title></head><body>\
                 <main><h1>中文测试页面</h1><p>{CHINESE_TEXT}</p></main></body></html>"
            ),
            "text/html",
        ),
        paths::REDIRECT => redirect(paths::ARTICLE),
        paths::REDIRECT_LOOP => redirect("/pages/loop-back"),
        "/pages/loop-back" => redirect(paths::REDIRECT_LOOP),
        paths::SLOW => {
            let delay = shared.lock().slow_delay;
            let now = shared.slow_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            shared.slow_in_flight_max.fetch_max(now, Ordering::SeqCst);
            let _done = InFlight(&shared.slow_in_flight);
            if shared.pause(delay).await {
                html_response(
                    StatusCode::OK,
                    page(
                        "A slow page",
                        "<h1>A slow page</h1><p>This page took its time to arrive, which is \
                         exactly what it was built to do.</p>",
                    ),
                )
            } else {
                html_response(StatusCode::SERVICE_UNAVAILABLE, "shutting down")
            }
        }
        paths::TEXT => response(StatusCode::OK, "text/plain; charset=utf-8", TEXT_FILE),
        paths::PDF => response(StatusCode::OK, "application/pdf", PDF_FILE),
        _ => match result_page(path) {
            Some(html) => html_response(StatusCode::OK, html),
            None => not_found(),
        },
    }
}

/// Counts a request out when its handler ends (or is dropped because the client went away).
struct InFlight<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `/pages/result/{engine}/{i}`.
fn result_page(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/pages/result/")?;
    let (engine, index) = rest.split_once('/')?;
    let engine = FixtureEngine::from_name(engine)?;
    let index: usize = index.parse().ok()?;
    let label = escape(engine.label());
    Some(page(
        &format!("{label} result page {index}"),
        &format!(
            "<h1>{label} result page {index}</h1><p>Result page {index} of {label}: the fixture \
             server made this page for a search result, with enough words to count as content.</p>"
        ),
    ))
}
