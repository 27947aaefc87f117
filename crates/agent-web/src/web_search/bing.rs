//! Bing: the HTML result page of `{base}/search`, following "Next page" links.

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use scraper::Html;
use url::Url;

use super::engine::{
    EngineError, EngineHttp, SearchEngine, SearchItem, SearchQuery, absolute, dedup, first_text,
    query_param, selector, text_of,
};
use super::page::truncate_chars;

/// How many result pages one search reads at most.
const MAX_PAGES: usize = 5;

/// How many characters of a snippet are kept (as OpenManus's Bing engine does).
const MAX_ABSTRACT_CHARS: usize = 300;

/// Bing's result page, `{base}/search?q=…&count=…&setlang={lang}&cc={country}`.
///
/// Results are the `ol#b_results > li.b_algo` items (ads are other items): the title from the
/// `h2`, the link from `h2 a[href]` (Bing's `/ck/a?…&u=a1…` click-tracking links are decoded to
/// their target), the snippet from the first paragraph, cut to 300 characters. While fewer
/// results than wanted were found, the page's `a[title="Next page"]` link is followed (up to 5
/// pages).
#[derive(Debug, Clone)]
pub struct Bing {
    http: EngineHttp,
}

impl Bing {
    /// The engine's name.
    pub const NAME: &'static str = "bing";

    pub(crate) fn new(http: EngineHttp) -> Self {
        Self { http }
    }
}

#[async_trait]
impl SearchEngine for Bing {
    fn name(&self) -> &str {
        Self::NAME
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, EngineError> {
        let mut url = self.http.url("search")?;
        url.query_pairs_mut()
            .append_pair("q", &query.query)
            .append_pair("count", &query.num_results.to_string())
            .append_pair("setlang", &query.lang)
            .append_pair("cc", &query.country);
        let mut items = Vec::new();
        let mut next = Some(url);
        let mut pages = 0;
        while let Some(url) = next.take() {
            pages += 1;
            let page = self.http.send(self.http.get(url, query)).await?;
            let (found, next_page) = parse(&page.text, &page.url)?;
            let found_any = !found.is_empty();
            items.extend(found);
            items = dedup(items, usize::MAX);
            if found_any && items.len() < query.num_results && pages < MAX_PAGES {
                next = next_page;
            }
        }
        Ok(dedup(items, query.num_results))
    }
}

/// Reads one Bing result page: its results and the "Next page" link.
pub(crate) fn parse(
    html: &str,
    page_url: &Url,
) -> Result<(Vec<SearchItem>, Option<Url>), EngineError> {
    let document = Html::parse_document(html);
    let result = selector("ol#b_results > li.b_algo")?;
    let heading = selector("h2")?;
    let link = selector("h2 a[href]")?;
    let caption = selector(".b_caption p, p")?;
    let next = selector("a[title=\"Next page\"][href]")?;

    let mut items = Vec::new();
    for block in document.select(&result) {
        let Some(url) = block
            .select(&link)
            .next()
            .and_then(|a| a.value().attr("href"))
            .and_then(|href| target(page_url, href))
        else {
            continue;
        };
        let title = block
            .select(&heading)
            .next()
            .map(text_of)
            .unwrap_or_default();
        let description = first_text(block, &[&caption]);
        let description = truncate_chars(&description, MAX_ABSTRACT_CHARS).to_owned();
        items.push(SearchItem::new(title, url, description));
    }
    let next_page = document
        .select(&next)
        .next()
        .and_then(|a| a.value().attr("href"))
        .and_then(|href| absolute(page_url, href));
    Ok((items, next_page))
}

/// The destination of a result link; Bing's click-tracking `ck/a` links carry it base64-encoded
/// in `u` (after an `a1` prefix).
fn target(page_url: &Url, href: &str) -> Option<String> {
    let url = absolute(page_url, href)?;
    if url.path().ends_with("/ck/a")
        && let Some(encoded) = query_param(&url, "u")
        && let Some(encoded) = encoded.strip_prefix("a1")
    {
        let decoded = URL_SAFE_NO_PAD
            .decode(encoded.trim_end_matches('='))
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok());
        if let Some(inner) = decoded.and_then(|inner| absolute(page_url, &inner)) {
            return Some(inner.into());
        }
    }
    Some(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn click_tracking_links_are_decoded() {
        let page = Url::parse("https://www.bing.com/search?q=x").unwrap();
        let encoded = URL_SAFE_NO_PAD.encode("https://example.org/a?b=1");
        let href = format!("https://www.bing.com/ck/a?!&&p=abc&u=a1{encoded}&ntb=1");
        assert_eq!(target(&page, &href).unwrap(), "https://example.org/a?b=1");
        assert_eq!(
            target(&page, "https://example.org/plain").unwrap(),
            "https://example.org/plain"
        );
    }
}
