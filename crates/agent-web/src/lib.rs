//! # agent-web — the web tools
//!
//! [`WebSearch`] (`web_search`: search engines with fallback, result pages read; module
//! [`web_search`]) and [`Crawl4ai`] (`crawl4ai`: pages as clean markdown; module [`crawl4ai`]).
//! They live apart from `agent-tools` so that a crate needing only the `Tool` trait does not
//! build an HTML parser, an HTML-to-markdown converter and an HTTP client.
//!
//! `[search]` of `config.toml` becomes the tool's settings here, in one direction:
//! [`WebSearchSettings::from_settings`] (and [`WebSearch::from_settings`], which also builds the
//! HTTP client). Every engine's address is a setting, so tests serve them from loopback.
//!
//! ```
//! use agent_config::Config;
//! use agent_web::{WEB_SEARCH, WebSearch, WebSearchSettings};
//!
//! let config = Config::from_toml_str(
//!     "[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n\
//!      [search]\nengine = \"Bing\"\n[search.base_urls]\nbing = \"http://127.0.0.1:9\"\n",
//! )?;
//! let settings = WebSearchSettings::from_settings(&config.search);
//! assert_eq!(settings.engine, "Bing");
//! assert_eq!(settings.base_urls.bing, "http://127.0.0.1:9");
//! assert_eq!(settings.base_urls.google, WebSearchSettings::default().base_urls.google);
//!
//! let search = WebSearch::from_settings(&config.search)?;
//! assert_eq!(agent_tools::Tool::name(&search), WEB_SEARCH);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod crawl4ai;
pub mod web_search;

pub use crawl4ai::{CRAWL4AI, Crawl4ai, Crawl4aiArgs, CrawlSettings};
pub use web_search::{WEB_SEARCH, WebSearch, WebSearchArgs, WebSearchSettings};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
