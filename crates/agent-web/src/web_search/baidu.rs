//! Baidu: the HTML result page of `{base}/s`.

use async_trait::async_trait;
use scraper::Html;
use url::Url;

use super::engine::{
    EngineError, EngineHttp, SearchEngine, SearchItem, SearchQuery, absolute, dedup, first_text,
    selector, text_of,
};

/// Baidu's result page, `{base}/s?wd=…&rn=…&ie=utf-8`.
///
/// Results are the `div.c-container` blocks of `#content_left`: the title and link from `h3 a`,
/// the snippet from the abstract. Baidu links go through its own redirector; when the block
/// names the real address (its `mu` attribute) that address is used instead. Untitled results
/// are called `Baidu Result {i}`. Baidu has no language or country parameter: `lang` and
/// `country` only reach it as `Accept-Language`.
#[derive(Debug, Clone)]
pub struct Baidu {
    http: EngineHttp,
}

impl Baidu {
    /// The engine's name.
    pub const NAME: &'static str = "baidu";

    pub(crate) fn new(http: EngineHttp) -> Self {
        Self { http }
    }
}

#[async_trait]
impl SearchEngine for Baidu {
    fn name(&self) -> &str {
        Self::NAME
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, EngineError> {
        let mut url = self.http.url("s")?;
        url.query_pairs_mut()
            .append_pair("wd", &query.query)
            .append_pair("rn", &query.num_results.to_string())
            .append_pair("ie", "utf-8");
        let page = self.http.send(self.http.get(url, query)).await?;
        parse(&page.text, &page.url, query.num_results)
    }
}

/// Reads a Baidu result page.
pub(crate) fn parse(
    html: &str,
    page_url: &Url,
    limit: usize,
) -> Result<Vec<SearchItem>, EngineError> {
    let document = Html::parse_document(html);
    let block = selector("#content_left div.c-container")?;
    let link = selector("h3 a[href]")?;
    let abstract_ = selector(".c-abstract, [class*='content-right'], .c-span-last")?;

    let mut items = Vec::new();
    for result in document.select(&block) {
        let Some(anchor) = result.select(&link).next() else {
            continue;
        };
        let real = result
            .value()
            .attr("mu")
            .and_then(|mu| absolute(page_url, mu));
        let Some(url) = real.or_else(|| {
            anchor
                .value()
                .attr("href")
                .and_then(|href| absolute(page_url, href))
        }) else {
            continue;
        };
        let mut title = text_of(anchor);
        if title.is_empty() {
            title = format!("Baidu Result {}", items.len() + 1);
        }
        let description = first_text(result, &[&abstract_]);
        items.push(SearchItem::new(title, url, description));
    }
    Ok(dedup(items, limit))
}
