//! The model's text as safe HTML: markdown rendered on the server with pulldown-cmark, then
//! cleaned by ammonia, so that nothing the model (or a web page it read) writes can run script
//! in the page.

use pulldown_cmark::{Options, Parser, html};

/// Renders `markdown` to sanitised HTML: no script, no event handlers, no `javascript:` links;
/// links get `rel="noopener noreferrer"`.
#[must_use]
pub fn to_safe_html(markdown: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    let mut unsafe_html = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut unsafe_html, Parser::new_ext(markdown, options));
    ammonia::Builder::default()
        .link_rel(Some("noopener noreferrer"))
        .clean(&unsafe_html)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_html() {
        let html = to_safe_html("# Title\n\n**bold** and `code`\n\n- one\n- two");
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>code</code>"), "{html}");
        assert!(html.contains("<li>two</li>"), "{html}");
    }

    #[test]
    fn script_and_handlers_are_removed() {
        let html = to_safe_html(
            "<script>alert(1)</script><img src=x onerror=alert(2)>\n\n[x](javascript:alert(3))",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("onerror"), "{html}");
        assert!(!html.contains("href=\"javascript:"), "{html}");
        assert!(
            html.contains("<a"),
            "the link stays, without its target: {html}"
        );
    }

    #[test]
    fn links_do_not_leak_the_opener() {
        let html = to_safe_html("[site](https://example.com)");
        assert!(html.contains(r#"rel="noopener noreferrer""#), "{html}");
    }
}
