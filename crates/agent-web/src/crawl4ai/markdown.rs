//! From an HTML page to clean markdown: pick the main content, drop what is not content, convert
//! with `htmd`, and filter short paragraphs.

use std::collections::HashSet;

use htmd::HtmlToMarkdown;
use htmd::options::{BulletListMarker, Options};
use scraper::node::Element;
use scraper::{ElementRef, Html, Node, Selector, StrTendril};
use url::Url;

/// Elements that never carry readable content: code, embedded documents, forms, page navigation
/// and side panels.
const DROPPED: [&str; 21] = [
    "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object", "embed",
    "svg", "canvas", "nav", "aside", "form", "button", "input", "select", "textarea", "dialog",
    "link", "meta",
];

/// Page furniture dropped when the content root is the whole `<body>` (inside `<main>` or
/// `<article>` a header holds the title and is kept).
const FURNITURE: [&str; 2] = ["header", "footer"];

/// Words in a class or id that mark an overlay: cookie banners, consent walls, modals, pop-ups.
const OVERLAY_WORDS: [&str; 8] = [
    "cookie",
    "cookies",
    "consent",
    "gdpr",
    "modal",
    "overlay",
    "popup",
    "newsletter",
];

/// What was read from a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The page title (`<title>`, else `og:title`, else the first `<h1>`).
    pub title: Option<String>,
    /// The content as markdown, before the word-count filter.
    pub markdown: String,
    /// Distinct http(s) links in the content.
    pub links: usize,
    /// Images in the content.
    pub images: usize,
}

fn selector(css: &str) -> Option<Selector> {
    Selector::parse(css).ok()
}

/// Reads an HTML page fetched from `page_url`.
#[must_use]
pub fn extract(html: &str, page_url: &Url) -> Extracted {
    let mut document = Html::parse_document(html);
    let title = title(&document);

    let (root, content_root) = content_root(&document);
    let root_id = root.id();

    let mut doomed = Vec::new();
    let mut rewrite = Vec::new();
    for element in root.descendent_elements().skip(1) {
        let value = element.value();
        let name = value.name();
        if DROPPED.contains(&name)
            || (!content_root && FURNITURE.contains(&name))
            || is_hidden_or_overlay(value)
        {
            doomed.push(element.id());
        } else if ["a", "img", "source"].contains(&name) {
            rewrite.push(element.id());
        }
    }
    for id in doomed {
        if let Some(mut node) = document.tree.get_mut(id) {
            node.detach();
        }
    }
    for id in rewrite {
        if let Some(mut node) = document.tree.get_mut(id)
            && let Node::Element(element) = node.value()
        {
            absolutize(element, page_url);
        }
    }

    let Some(root) = document.tree.get(root_id).and_then(ElementRef::wrap) else {
        return Extracted {
            title,
            markdown: String::new(),
            links: 0,
            images: 0,
        };
    };
    let (links, images) = count_links_and_images(root, page_url);
    let cleaned = root.html();
    let options = Options {
        bullet_list_marker: BulletListMarker::Dash,
        ul_bullet_spacing: 1,
        ol_number_spacing: 1,
        ..Options::default()
    };
    let converter = HtmlToMarkdown::builder()
        .options(options)
        .skip_tags(DROPPED.to_vec())
        .build();
    let markdown = match converter.convert(&cleaned) {
        Ok(markdown) => tidy(&markdown),
        Err(error) => {
            tracing::warn!(%error, "HTML to markdown conversion failed; keeping the plain text");
            root.text()
                .flat_map(str::split_whitespace)
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    Extracted {
        title,
        markdown,
        links,
        images,
    }
}

fn title(document: &Html) -> Option<String> {
    let collapse = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let from = |css: &str, attr: Option<&str>| {
        let selector = selector(css)?;
        document.select(&selector).find_map(|element| {
            let text = match attr {
                Some(attr) => collapse(element.value().attr(attr)?),
                None => collapse(&element.text().collect::<String>()),
            };
            (!text.is_empty()).then_some(text)
        })
    };
    from("head title, title", None)
        .or_else(|| from("meta[property='og:title'][content]", Some("content")))
        .or_else(|| from("h1", None))
}

/// The element holding the content and whether it is a content element (`main`, `article`)
/// rather than the whole body.
fn content_root(document: &Html) -> (ElementRef<'_>, bool) {
    if let Some(main) = selector("main, [role='main']").and_then(|s| document.select(&s).next()) {
        return (main, true);
    }
    if let Some(articles) = selector("article") {
        let mut found = document.select(&articles);
        if let (Some(article), None) = (found.next(), found.next()) {
            return (article, true);
        }
    }
    if let Some(body) = selector("body").and_then(|s| document.select(&s).next()) {
        return (body, false);
    }
    (document.root_element(), false)
}

fn is_hidden_or_overlay(element: &Element) -> bool {
    let attr = |name: &str| element.attr(name).map(str::to_ascii_lowercase);
    if element.attr("hidden").is_some()
        || attr("aria-hidden").as_deref() == Some("true")
        || attr("aria-modal").as_deref() == Some("true")
        || matches!(attr("role").as_deref(), Some("dialog" | "alertdialog"))
    {
        return true;
    }
    if let Some(style) = attr("style") {
        let style: String = style.chars().filter(|c| !c.is_whitespace()).collect();
        if style.contains("display:none")
            || style.contains("visibility:hidden")
            || style.contains("position:fixed")
        {
            return true;
        }
    }
    let words = element
        .classes()
        .chain(element.id())
        .flat_map(|token| token.split(['-', '_']))
        .map(str::to_ascii_lowercase);
    words
        .into_iter()
        .any(|word| OVERLAY_WORDS.contains(&word.as_str()))
}

/// Makes `href` / `src` absolute (a lazy image's `data-src` becomes its `src`).
fn absolutize(element: &mut Element, page_url: &Url) {
    let lazy = element.attr("data-src").map(str::to_owned);
    let src_missing = element
        .attr("src")
        .is_none_or(|src| src.trim().is_empty() || src.starts_with("data:"));
    for (name, value) in &mut element.attrs {
        let local: &str = &name.local;
        let replacement = match local {
            "src" if src_missing => lazy.clone(),
            "href" | "src" => Some(value.to_string()),
            _ => None,
        };
        if let Some(url) = replacement.and_then(|target| page_url.join(target.trim()).ok()) {
            *value = StrTendril::from(String::from(url));
        }
    }
}

fn count_links_and_images(root: ElementRef<'_>, page_url: &Url) -> (usize, usize) {
    let mut links = HashSet::new();
    let mut images = 0;
    for element in root.descendent_elements() {
        match element.value().name() {
            "a" => {
                if let Some(mut url) = element
                    .value()
                    .attr("href")
                    .and_then(|href| page_url.join(href.trim()).ok())
                    .filter(|url| matches!(url.scheme(), "http" | "https"))
                {
                    url.set_fragment(None);
                    let mut here = page_url.clone();
                    here.set_fragment(None);
                    if url != here {
                        links.insert(url);
                    }
                }
            }
            "img"
                if element
                    .value()
                    .attr("src")
                    .is_some_and(|s| !s.trim().is_empty()) =>
            {
                images += 1;
            }
            _ => {}
        }
    }
    (links.len(), images)
}

/// Trailing spaces removed, runs of blank lines collapsed to one.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

/// Keeps the blocks of `markdown` (separated by blank lines) that are headings, lists, tables,
/// code, images, or that have at least `threshold` words.
#[must_use]
pub fn filter_short_blocks(markdown: &str, threshold: usize) -> String {
    let mut kept: Vec<String> = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    let mut in_fence = false;
    let flush = |block: &mut Vec<&str>, kept: &mut Vec<String>| {
        if block.is_empty() {
            return;
        }
        let text = block.join("\n");
        if is_structural(&text) || count_words(&text) >= threshold {
            kept.push(text);
        }
        block.clear();
    };
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
        if in_fence {
            block.push(line);
            in_fence = !fence;
            continue;
        }
        if fence {
            block.push(line);
            in_fence = true;
            continue;
        }
        if line.trim().is_empty() {
            flush(&mut block, &mut kept);
        } else {
            block.push(line);
        }
    }
    flush(&mut block, &mut kept);
    kept.join("\n\n")
}

/// Words in `text`: whitespace-separated tokens, except that every CJK character counts as a
/// word of its own (those scripts do not separate words with spaces).
#[must_use]
pub fn count_words(text: &str) -> usize {
    text.split_whitespace()
        .map(|token| {
            let cjk = token.chars().filter(|c| is_cjk(*c)).count();
            let other = token.chars().any(|c| c.is_alphanumeric() && !is_cjk(c));
            if cjk == 0 {
                1
            } else {
                cjk + usize::from(other)
            }
        })
        .sum()
}

fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'      // Hiragana, Katakana
        | '\u{3400}'..='\u{4DBF}'    // CJK Extension A
        | '\u{4E00}'..='\u{9FFF}'    // CJK Unified Ideographs
        | '\u{AC00}'..='\u{D7AF}'    // Hangul syllables
        | '\u{F900}'..='\u{FAFF}'    // CJK Compatibility Ideographs
        | '\u{20000}'..='\u{2FA1F}') // CJK Extensions B and later
}

fn is_structural(block: &str) -> bool {
    let first = block.trim_start();
    let ordered = first.split_once(['.', ')']).is_some_and(|(n, rest)| {
        !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(' ')
    });
    first.starts_with('#')
        || first.starts_with("```")
        || first.starts_with("~~~")
        || first.starts_with('|')
        || first.starts_with("![")
        || first.starts_with("* ")
        || first.starts_with("- ")
        || first.starts_with("+ ")
        || ordered
}
