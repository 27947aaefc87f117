//! Google: the HTML result page of `{base}/search`.

use async_trait::async_trait;
use scraper::Html;
use url::Url;

use super::engine::{
    EngineError, EngineHttp, SearchEngine, SearchItem, SearchQuery, absolute, dedup, first_text,
    query_param, selector, text_of,
};

/// Google's result page, `{base}/search?q=…&num=…&hl={lang}&gl={country}`.
///
/// Both layouts Google serves are read: the desktop one (`div.g` blocks with an `a` around an
/// `h3`) and the basic one served to simple clients (`div.ezO2md` blocks with `/url?q=` links).
/// A captcha ("unusual traffic") page is reported as [`EngineError::Blocked`].
#[derive(Debug, Clone)]
pub struct Google {
    http: EngineHttp,
}

impl Google {
    /// The engine's name.
    pub const NAME: &'static str = "google";

    pub(crate) fn new(http: EngineHttp) -> Self {
        Self { http }
    }
}

#[async_trait]
impl SearchEngine for Google {
    fn name(&self) -> &str {
        Self::NAME
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, EngineError> {
        let mut url = self.http.url("search")?;
        url.query_pairs_mut()
            .append_pair("q", &query.query)
            // A few more than wanted: some blocks are not web results.
            .append_pair("num", &(query.num_results + 2).to_string())
            .append_pair("hl", &query.lang)
            .append_pair("gl", &query.country)
            .append_pair("start", "0");
        let page = self.http.send(self.http.get(url, query)).await?;
        let home = self.http.url("")?;
        // Google redirects suspicious clients to `/sorry/index` (a captcha).
        let sorry = self.http.url("sorry/")?;
        if page.url.as_str().starts_with(sorry.as_str()) {
            return Err(EngineError::Blocked("Google asked for a captcha".into()));
        }
        parse(&page.text, &page.url, &home, query.num_results)
    }
}

/// Reads a Google result page.
pub(crate) fn parse(
    html: &str,
    page_url: &Url,
    home: &Url,
    limit: usize,
) -> Result<Vec<SearchItem>, EngineError> {
    let document = Html::parse_document(html);
    let captcha = selector("#captcha-form, form[action*='/sorry/']")?;
    if document.select(&captcha).next().is_some() {
        return Err(EngineError::Blocked("Google asked for a captcha".into()));
    }
    let desktop_block = selector("div.g")?;
    let basic_block = selector("div.ezO2md")?;
    let link = selector("a[href]")?;
    let heading = selector("h3")?;
    let basic_title = selector("span.CVA68e")?;
    let snippet = selector("div.VwiC3b")?;
    let snippet_alt = selector("[data-sncf], div[style*='line-clamp'], span.st")?;
    let basic_snippet = selector("span.FrIlee")?;

    let mut items = Vec::new();
    for block in document.select(&desktop_block) {
        // Nested `div.g` (grouped results) are visited on their own.
        let Some(anchor) = block
            .select(&link)
            .find(|a| a.select(&heading).next().is_some())
        else {
            continue;
        };
        let Some(url) = anchor
            .value()
            .attr("href")
            .and_then(|href| target(page_url, home, href))
        else {
            continue;
        };
        let title = anchor
            .select(&heading)
            .next()
            .map(text_of)
            .unwrap_or_default();
        let description = first_text(block, &[&snippet, &snippet_alt]);
        items.push(SearchItem::new(title, url, description));
    }
    for block in document.select(&basic_block) {
        let Some(anchor) = block.select(&link).next() else {
            continue;
        };
        let Some(url) = anchor
            .value()
            .attr("href")
            .and_then(|href| target(page_url, home, href))
        else {
            continue;
        };
        let title = first_text(anchor, &[&basic_title]);
        let description = first_text(block, &[&basic_snippet]);
        items.push(SearchItem::new(title, url, description));
    }
    Ok(dedup(items, limit))
}

/// The destination of a result link: direct links as they are, Google's `/url?q=` redirects
/// unwrapped, other links back into Google (`home`: more searches, images) dropped.
fn target(page_url: &Url, home: &Url, href: &str) -> Option<String> {
    let url = absolute(page_url, href)?;
    if !url.as_str().starts_with(home.as_str()) {
        return Some(url.into());
    }
    let redirect = home.join("url").ok()?;
    if url.path() == redirect.path() {
        let inner = query_param(&url, "q").or_else(|| query_param(&url, "url"))?;
        return absolute(page_url, &inner).map(String::from);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_basic_layout_is_read_too() {
        let html = r#"<html><body><div id="main">
            <div class="ezO2md"><a href="/url?q=https://www.rust-lang.org/&amp;sa=U&amp;ved=2ah"><span class="CVA68e">Rust Programming Language</span></a>
              <span class="FrIlee">A language empowering everyone.</span></div>
            <div class="ezO2md"><a href="/search?q=rust+images"><span class="CVA68e">Images</span></a></div>
        </div></body></html>"#;
        let base = Url::parse("https://www.google.com/search?q=rust").unwrap();
        let home = Url::parse("https://www.google.com/").unwrap();
        assert_eq!(
            parse(html, &base, &home, 5).unwrap(),
            [SearchItem::new(
                "Rust Programming Language",
                "https://www.rust-lang.org/",
                "A language empowering everyone."
            )]
        );
    }

    #[test]
    fn a_captcha_page_is_blocked() {
        let html = r#"<html><body><form id="captcha-form" action="index"></form></body></html>"#;
        let base = Url::parse("https://www.google.com/search?q=rust").unwrap();
        let home = Url::parse("https://www.google.com/").unwrap();
        assert!(matches!(
            parse(html, &base, &home, 5),
            Err(EngineError::Blocked(_))
        ));
    }
}
