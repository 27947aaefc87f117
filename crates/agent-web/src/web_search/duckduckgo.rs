//! DuckDuckGo: the JavaScript-free HTML endpoint, `{base}/html/`.

use async_trait::async_trait;
use scraper::Html;
use url::Url;

use super::engine::{
    EngineError, EngineHttp, SearchEngine, SearchItem, SearchQuery, absolute, dedup, first_text,
    query_param, selector, text_of,
};

/// DuckDuckGo's HTML endpoint, `{base}/html/?q=…&kl={country}-{lang}`.
///
/// Results are the `div.result` blocks that are not ads (`.result--ad`): title and link from
/// `a.result__a`, snippet from `.result__snippet`. DuckDuckGo's `/l/?uddg=` redirect links are
/// unwrapped. Untitled results are called `DuckDuckGo Result {i}`.
#[derive(Debug, Clone)]
pub struct DuckDuckGo {
    http: EngineHttp,
}

impl DuckDuckGo {
    /// The engine's name.
    pub const NAME: &'static str = "duckduckgo";

    pub(crate) fn new(http: EngineHttp) -> Self {
        Self { http }
    }
}

#[async_trait]
impl SearchEngine for DuckDuckGo {
    fn name(&self) -> &str {
        Self::NAME
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, EngineError> {
        let mut url = self.http.url("html/")?;
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("q", &query.query);
            let (country, lang) = (query.country.trim(), query.lang.trim());
            if !country.is_empty() && !lang.is_empty() {
                pairs.append_pair(
                    "kl",
                    &format!(
                        "{}-{}",
                        country.to_ascii_lowercase(),
                        lang.to_ascii_lowercase()
                    ),
                );
            }
        }
        let page = self.http.send(self.http.get(url, query)).await?;
        parse(&page.text, &page.url, query.num_results)
    }
}

/// Reads a DuckDuckGo HTML result page.
pub(crate) fn parse(
    html: &str,
    page_url: &Url,
    limit: usize,
) -> Result<Vec<SearchItem>, EngineError> {
    let document = Html::parse_document(html);
    let block = selector("div.result")?;
    let link = selector("a.result__a[href]")?;
    let snippet = selector(".result__snippet")?;

    let mut items = Vec::new();
    for result in document.select(&block) {
        if result.value().classes().any(|c| c == "result--ad") {
            continue;
        }
        let Some(anchor) = result.select(&link).next() else {
            continue;
        };
        let Some(url) = anchor
            .value()
            .attr("href")
            .and_then(|href| target(page_url, href))
        else {
            continue;
        };
        let mut title = text_of(anchor);
        if title.is_empty() {
            title = format!("DuckDuckGo Result {}", items.len() + 1);
        }
        let description = first_text(result, &[&snippet]);
        items.push(SearchItem::new(title, url, description));
    }
    Ok(dedup(items, limit))
}

/// The destination of a result link: `//duckduckgo.com/l/?uddg=<encoded>` is unwrapped.
fn target(page_url: &Url, href: &str) -> Option<String> {
    let url = absolute(page_url, href)?;
    if url.path() == "/l/"
        && let Some(inner) = query_param(&url, "uddg").and_then(|u| absolute(page_url, &u))
    {
        return Some(inner.into());
    }
    Some(url.into())
}
