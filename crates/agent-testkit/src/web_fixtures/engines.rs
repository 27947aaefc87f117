//! The imitation search engines.

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::{
    BRAVE_API_KEY, EngineBehaviour, FixtureEngine, FixtureRequest, Shared, html_response,
    not_found, redirect, response,
};

/// One generated result.
struct Item {
    title: String,
    url: String,
    /// The snippet as plain text.
    snippet: String,
}

/// Escapes text for HTML.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// What a search should get, after counting it against the engine's behaviour.
enum Answer {
    Results,
    Empty,
    Status(u16),
    Captcha,
}

async fn decide(shared: &Shared, engine: FixtureEngine) -> Answer {
    let behaviour = {
        let mut inner = shared.lock();
        let state = inner.engines.entry(engine).or_default();
        state.searches += 1;
        match &state.behaviour {
            EngineBehaviour::FailFirst { times, status } if state.searches <= *times => {
                EngineBehaviour::Status(*status)
            }
            EngineBehaviour::FailFirst { .. } => EngineBehaviour::Normal,
            other => other.clone(),
        }
    };
    match behaviour {
        EngineBehaviour::Normal | EngineBehaviour::FailFirst { .. } => Answer::Results,
        EngineBehaviour::Empty => Answer::Empty,
        EngineBehaviour::Status(status) => Answer::Status(status),
        EngineBehaviour::Captcha => Answer::Captcha,
        EngineBehaviour::Delay(delay) => {
            if shared.pause(delay).await {
                Answer::Results
            } else {
                Answer::Status(503)
            }
        }
    }
}

fn items(shared: &Shared, engine: FixtureEngine, query: &str, count: usize) -> Vec<Item> {
    let urls = shared.lock().result_urls.clone();
    (1..=count)
        .map_while(|i| {
            let url = match &urls {
                Some(list) => list.get(i - 1)?.clone(),
                None => format!("{}/pages/result/{}/{i}", shared.base_url, engine.name()),
            };
            Some(Item {
                title: format!("{} result {i}: {query}", engine.label()),
                url,
                snippet: format!("Snippet {i} from {} about {query} & more.", engine.label()),
            })
        })
        .collect()
}

/// The snippet with the query highlighted, as engines do.
fn highlighted(item: &Item, query: &str, tag: &str) -> String {
    let escaped = escape(&item.snippet);
    let q = escape(query);
    if q.is_empty() {
        return escaped;
    }
    escaped.replacen(&q, &format!("<{tag}>{q}</{tag}>"), 1)
}

fn count_param(request: &FixtureRequest, name: &str, default: usize, max: usize) -> usize {
    request
        .param(name)
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
        .min(max)
}

pub(super) async fn answer(
    shared: &Shared,
    engine: FixtureEngine,
    request: &FixtureRequest,
) -> Response {
    let prefix = format!("/{}", engine.name());
    let path = request.path.strip_prefix(&prefix).unwrap_or_default();
    let is_search = match engine {
        FixtureEngine::Google | FixtureEngine::Bing | FixtureEngine::Searxng => path == "/search",
        FixtureEngine::Baidu => path == "/s",
        FixtureEngine::DuckDuckGo => path == "/html/" || path == "/html",
        FixtureEngine::Brave => path == "/res/v1/web/search",
    };
    if engine == FixtureEngine::Baidu && path == "/link" {
        return match request.param("url") {
            Some(target) => redirect(target),
            None => not_found(),
        };
    }
    if !is_search {
        return not_found();
    }
    if engine == FixtureEngine::Brave
        && request.header("x-subscription-token") != Some(BRAVE_API_KEY)
    {
        return json_response(
            StatusCode::UNAUTHORIZED,
            &json!({"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID",
                "detail": "The provided subscription token is invalid.", "status": 401}}),
        );
    }
    if engine == FixtureEngine::Searxng && request.param("format") != Some("json") {
        return html_response(
            StatusCode::FORBIDDEN,
            "<html><body><h1>403 Forbidden</h1></body></html>",
        );
    }
    let query_key = if engine == FixtureEngine::Baidu {
        "wd"
    } else {
        "q"
    };
    let query = request.param(query_key).unwrap_or_default().to_owned();
    let base = shared.base_url.clone();
    match decide(shared, engine).await {
        Answer::Status(status) => error_page(engine, status),
        Answer::Captcha => html_response(StatusCode::OK, CAPTCHA_PAGE),
        Answer::Empty => empty_page(engine, &query),
        Answer::Results => match engine {
            FixtureEngine::Google => {
                let found = items(shared, engine, &query, count_param(request, "num", 10, 100));
                html_response(StatusCode::OK, google(&query, &found))
            }
            FixtureEngine::Baidu => {
                let found = items(shared, engine, &query, count_param(request, "rn", 10, 50));
                html_response(StatusCode::OK, baidu(&base, &query, &found))
            }
            FixtureEngine::DuckDuckGo => {
                let found = items(shared, engine, &query, 6);
                html_response(StatusCode::OK, duckduckgo(&query, &found))
            }
            FixtureEngine::Bing => {
                let first = count_param(request, "first", 1, 1000).max(1);
                let found = items(shared, engine, &query, BING_TOTAL);
                html_response(StatusCode::OK, bing(&query, &found, first))
            }
            FixtureEngine::Brave => {
                let found = items(
                    shared,
                    engine,
                    &query,
                    count_param(request, "count", 20, 20),
                );
                json_response(StatusCode::OK, &brave(&query, &found))
            }
            FixtureEngine::Searxng => {
                let found = items(shared, engine, &query, 5);
                json_response(StatusCode::OK, &searxng(&query, &found))
            }
        },
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    response(status, "application/json", body.to_string())
}

const CAPTCHA_PAGE: &str = "<!DOCTYPE html><html><head><title>Sorry...</title></head><body>\
<div id=\"recaptcha-wrapper\"><form id=\"captcha-form\" action=\"index\" method=\"post\">\
<div class=\"g-recaptcha\" data-sitekey=\"fixture\"></div><input type=\"hidden\" name=\"q\" value=\"x\">\
</form></div><p>Our systems have detected unusual traffic from your computer network. Please \
try your request again later.</p></body></html>";

fn error_page(engine: FixtureEngine, status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    match engine {
        FixtureEngine::Brave | FixtureEngine::Searxng => json_response(
            code,
            &json!({"error": {"status": status, "detail": "The fixture engine was told to fail."}}),
        ),
        _ => html_response(
            code,
            format!(
                "<!DOCTYPE html><html><head><title>Error {status}</title></head><body>\
                 <h1>{status}. That's an error.</h1><p>The server encountered an error and could \
                 not complete your request.</p></body></html>"
            ),
        ),
    }
}

fn empty_page(engine: FixtureEngine, query: &str) -> Response {
    let q = escape(query);
    match engine {
        FixtureEngine::Google => html_response(
            StatusCode::OK,
            format!(
                "<!DOCTYPE html><html><head><title>{q} - Google Search</title></head><body>\
                 <div id=\"main\"><div id=\"topstuff\"><div class=\"card-section\"><p>Your search - \
                 <b>{q}</b> - did not match any documents.</p><p>Suggestions:</p><ul><li>Make sure \
                 that all words are spelled correctly.</li></ul></div></div><div id=\"search\">\
                 <div id=\"rso\"></div></div></div></body></html>"
            ),
        ),
        FixtureEngine::Baidu => html_response(
            StatusCode::OK,
            format!(
                "<!DOCTYPE html><html><head><title>{q}_百度搜索</title></head><body>\
                 <div id=\"content_left\"></div><div class=\"nors\"><p>抱歉没有找到与“<em>{q}</em>”\
                 相关的网页。</p></div></body></html>"
            ),
        ),
        FixtureEngine::DuckDuckGo => html_response(
            StatusCode::OK,
            format!(
                "<!DOCTYPE html><html><head><title>{q} at DuckDuckGo</title></head><body>\
                 <div id=\"links\" class=\"results\"><div class=\"no-results\">No results.</div>\
                 </div></body></html>"
            ),
        ),
        FixtureEngine::Bing => html_response(
            StatusCode::OK,
            format!(
                "<!DOCTYPE html><html lang=\"en\"><head><title>{q} - Search</title></head><body>\
                 <div id=\"b_content\"><main><ol id=\"b_results\"><li class=\"b_no\"><h1>There are \
                 no results for <strong>{q}</strong></h1><ul><li>Check your spelling or try \
                 different keywords</li></ul></li></ol></main></div></body></html>"
            ),
        ),
        FixtureEngine::Brave => json_response(
            StatusCode::OK,
            &json!({"type": "search", "query": {"original": query}, "mixed": {"main": []}}),
        ),
        FixtureEngine::Searxng => json_response(
            StatusCode::OK,
            &json!({"query": query, "number_of_results": 0, "results": [], "answers": [],
                "suggestions": [], "unresponsive_engines": []}),
        ),
    }
}

fn google(query: &str, found: &[Item]) -> String {
    let q = escape(query);
    let mut results = String::new();
    for (i, item) in found.iter().enumerate() {
        let n = i + 1;
        // Most results link directly; the second goes through Google's `/url?q=` redirect.
        let href = if n == 2 {
            format!("/google/url?q={}&sa=U&ved=2ahUKEwi{n}", encode(&item.url))
        } else {
            item.url.clone()
        };
        results.push_str(&format!(
            "<div class=\"g\"><div class=\"tF2Cxc\"><div class=\"yuRUbf\"><div><span>\
             <a jsname=\"UWckNb\" href=\"{href}\" data-ved=\"2ahUKEwi{n}\"><br>\
             <h3 class=\"LC20lb MBeuO DKV0Md\">{title}</h3><div class=\"notranslate\"><cite \
             class=\"tjvcx\" role=\"text\">{cite}</cite></div></a></span></div></div>\
             <div class=\"VwiC3b yXK7lf\" style=\"-webkit-line-clamp:2\"><span>{snippet}</span>\
             </div></div></div>",
            href = escape(&href),
            title = escape(&item.title),
            cite = escape(&item.url),
            snippet = highlighted(item, query, "em"),
        ));
        if n == 1 {
            results.push_str(&format!(
                "<div class=\"related-question-pair\" data-q=\"What is {q}?\"><div \
                 role=\"heading\" aria-level=\"2\">People also ask</div><div \
                 class=\"wQiwMc\"><span>What is {q}?</span></div></div>"
            ));
        }
    }
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"UTF-8\"><title>{q} - Google \
         Search</title><style>.g{{margin:0 0 30px}}</style><script nonce=\"fx\">(function(){{\
         window.google={{kEI:'fixture'}};}})();</script></head><body jsmodel=\"TvHxbe\">\
         <div id=\"searchform\"><form action=\"/google/search\" role=\"search\"><textarea \
         name=\"q\">{q}</textarea></form></div><div id=\"main\"><div id=\"cnt\"><div \
         id=\"center_col\"><div id=\"tads\" aria-label=\"Ads\"><div class=\"uEierd\"><a \
         href=\"https://ads.example.com/landing?q={enc}\"><div role=\"heading\"><span>Sponsored\
         </span> Buy {q} today</div></a></div></div><div id=\"search\"><div id=\"rso\">\
         {results}<div class=\"g\"><a href=\"/google/search?q={enc}&amp;tbm=isch\"><h3>Images \
         for {q}</h3></a></div></div></div></div></div><div id=\"foot\"><a \
         href=\"/google/search?q={enc}&amp;start=10\" id=\"pnnext\">Next</a></div></div>\
         </body></html>",
        enc = encode(query),
    )
}

fn baidu(base: &str, query: &str, found: &[Item]) -> String {
    let q = escape(query);
    let mut results = String::new();
    for (i, item) in found.iter().enumerate() {
        let n = i + 1;
        let mu = if n % 2 == 1 {
            format!(" mu=\"{}\"", escape(&item.url))
        } else {
            String::new()
        };
        results.push_str(&format!(
            "<div class=\"result c-container xpath-log new-pmd\" srcid=\"1599\" id=\"{n}\" \
             tpl=\"se_com_default\"{mu}><h3 class=\"c-title t t tts-title\"><a href=\"{href}\" target=\"_blank\">{title}</a>\
             </h3><div class=\"c-row\"><span class=\"content-right_8Zs40\">{snippet}</span></div>\
             </div>",
            href = escape(&format!("{base}/baidu/link?url={}", encode(&item.url))),
            title = escape(&item.title),
            snippet = highlighted(item, query, "em"),
        ));
    }
    format!(
        "<!DOCTYPE html><html><head><meta http-equiv=\"content-type\" \
         content=\"text/html;charset=utf-8\"><title>{q}_百度搜索</title></head><body>\
         <div id=\"head\"><form name=\"f\" action=\"/baidu/s\"><input name=\"wd\" \
         value=\"{q}\"></form></div><div id=\"container\"><div id=\"content_left\">{results}\
         </div><div id=\"rs\"><div class=\"tt\">相关搜索</div><table><tr><th><a \
         href=\"/baidu/s?wd={enc}+教程\">{q} 教程</a></th></tr></table></div></div></body></html>",
        enc = encode(query),
    )
}

fn duckduckgo(query: &str, found: &[Item]) -> String {
    let q = escape(query);
    let mut results = format!(
        "<div class=\"result results_links results_links_deep result--ad\"><div \
         class=\"links_main links_deep result__body\"><h2 class=\"result__title\"><a \
         class=\"result__a\" href=\"https://duckduckgo.com/y.js?ad_domain=ads.example.com\">Buy \
         {q} today</a></h2><a class=\"result__snippet\" href=\"https://duckduckgo.com/y.js\">\
         Sponsored.</a></div></div>"
    );
    for (i, item) in found.iter().enumerate() {
        results.push_str(&format!(
            "<div class=\"result results_links results_links_deep web-result\"><div \
             class=\"links_main links_deep result__body\"><h2 class=\"result__title\"><a \
             rel=\"nofollow\" class=\"result__a\" href=\"{href}\">{title}</a></h2><div \
             class=\"result__extras\"><div class=\"result__extras__url\"><a class=\"result__url\" \
             href=\"{href}\">{display}</a></div></div><a class=\"result__snippet\" \
             href=\"{href}\">{snippet}</a><div class=\"clear\"></div></div></div>",
            href = escape(&format!(
                "//duckduckgo.com/l/?uddg={}&rut=fixture{}",
                encode(&item.url),
                i + 1
            )),
            title = escape(&item.title),
            display = escape(&item.url),
            snippet = highlighted(item, query, "b"),
        ));
    }
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"UTF-8\"><title>{q} at DuckDuckGo</title>\
         </head><body class=\"body--html\"><div class=\"header\"><form action=\"/html/\" \
         method=\"post\"><input name=\"q\" value=\"{q}\"></form></div><div class=\"serp__results\">\
         <div id=\"links\" class=\"results\">{results}<div class=\"nav-link\"><form \
         action=\"/html/\" method=\"post\"><input type=\"submit\" class=\"btn btn--alt\" \
         value=\"Next\"><input type=\"hidden\" name=\"q\" value=\"{q}\"><input type=\"hidden\" \
         name=\"s\" value=\"10\"></form></div></div></div></body></html>"
    )
}

/// How many results the Bing fixture has for any query, and how many it shows per page.
const BING_TOTAL: usize = 7;
const BING_PAGE: usize = 3;

fn bing(query: &str, found: &[Item], first: usize) -> String {
    let q = escape(query);
    let mut results = String::new();
    if first == 1 {
        results.push_str(&format!(
            "<li class=\"b_ad\"><ul><li><div class=\"sb_add sb_adTA\"><h2><a \
             href=\"https://www.bing.com/aclick?ld=fixture\">Buy {q} today</a></h2><p>Sponsored \
             result.</p></div></li></ul></li>"
        ));
    }
    for (i, item) in found.iter().enumerate().skip(first - 1).take(BING_PAGE) {
        let n = i + 1;
        let href = if n == 2 {
            format!(
                "https://www.bing.com/ck/a?!&&p=fixture{n}&ptn=3&ver=2&u=a1{}&ntb=1",
                URL_SAFE_NO_PAD.encode(item.url.as_bytes())
            )
        } else {
            item.url.clone()
        };
        results.push_str(&format!(
            "<li class=\"b_algo\" data-bm=\"{n}\"><div class=\"b_tpcn\"><a class=\"tilk\" \
             href=\"{href}\"><div class=\"tptt\">Fixture site</div></a></div><h2><a \
             href=\"{href}\" h=\"ID=SERP,5089.{n}\">{title}</a></h2><div class=\"b_caption\">\
             <p class=\"b_lineclamp2\">{snippet}</p></div></li>",
            href = escape(&href),
            title = escape(&item.title),
            snippet = highlighted(item, query, "strong"),
        ));
    }
    let next = first + BING_PAGE;
    if next <= found.len() {
        results.push_str(&format!(
            "<li class=\"b_pag\"><nav role=\"navigation\" aria-label=\"More results for {q}\">\
             <ul class=\"sb_pagF\"><li><a class=\"sb_pagN sb_pagN_bp b_widePag sb_bp\" \
             title=\"Next page\" href=\"/bing/search?q={enc}&amp;first={next}&amp;FORM=PERE\">\
             Next</a></li></ul></nav></li>",
            enc = encode(query),
        ));
    }
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{q} - Search\
         </title></head><body><header id=\"b_header\"><form action=\"/bing/search\"><input \
         name=\"q\" value=\"{q}\"></form></header><div id=\"b_content\"><main aria-label=\"Search \
         Results\"><ol id=\"b_results\">{results}</ol></main></div></body></html>"
    )
}

fn brave(query: &str, found: &[Item]) -> Value {
    let results: Vec<Value> = found
        .iter()
        .map(|item| {
            json!({
                "type": "search_result",
                "title": item.title,
                "url": item.url,
                "description": highlighted(item, query, "strong"),
                "language": "en",
                "profile": {"name": "Fixture", "url": item.url},
            })
        })
        .collect();
    json!({"type": "search", "query": {"original": query}, "web": {"type": "search", "results": results}})
}

fn searxng(query: &str, found: &[Item]) -> Value {
    let results: Vec<Value> = found
        .iter()
        .map(|item| {
            json!({
                "url": item.url,
                "title": item.title,
                "content": item.snippet,
                "engine": "duckduckgo",
                "engines": ["duckduckgo", "wikipedia"],
                "score": 1.0,
                "category": "general",
            })
        })
        .collect();
    json!({"query": query, "number_of_results": found.len(), "results": results, "answers": [],
        "suggestions": [], "unresponsive_engines": []})
}
