//! What a search returns, and its text layout (OpenManus's `SearchResponse`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::page::truncate_chars;

/// How many characters of a result's page text the rendered output shows.
pub const CONTENT_PREVIEW_CHARS: usize = 1000;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Its position in the results, from 1.
    pub position: usize,
    /// Its URL.
    pub url: String,
    /// Its title (`Result {position}` when the engine gave none).
    pub title: String,
    /// Its snippet (may be empty).
    pub description: String,
    /// The engine that found it.
    pub source: String,
    /// The text of the result page, when `fetch_content` fetched it.
    pub raw_content: Option<String>,
}

/// What a search was asked for and how much it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchMetadata {
    /// How many results are returned.
    pub total_results: usize,
    /// The language code used.
    pub language: String,
    /// The country code used.
    pub country: String,
}

/// A successful search.
///
/// `Display` is OpenManus's output layout:
///
/// ```text
/// Search results for '{query}':
///
/// 1. {title, or No title}
///    URL: {url}
///    Description: {description}            only when not empty
///    Content: {first 1000 characters}...   only with page text; `...` when cut
///
/// Metadata:
/// - Total results: {n}
/// - Language: {lang}
/// - Country: {country}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResponse {
    /// The query searched for.
    pub query: String,
    /// The results, best first.
    pub results: Vec<SearchResult>,
    /// The search's metadata.
    pub metadata: SearchMetadata,
}

impl fmt::Display for SearchResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Search results for '{}':", self.query)?;
        for (i, result) in self.results.iter().enumerate() {
            let title = match result.title.trim() {
                "" => "No title",
                title => title,
            };
            write!(f, "\n\n{}. {title}", i + 1)?;
            write!(f, "\n   URL: {}", result.url)?;
            if !result.description.trim().is_empty() {
                write!(f, "\n   Description: {}", result.description)?;
            }
            if let Some(content) = result.raw_content.as_deref().filter(|c| !c.is_empty()) {
                let preview = truncate_chars(content, CONTENT_PREVIEW_CHARS);
                let mut preview = preview.replace('\n', " ").trim().to_owned();
                if content.chars().nth(CONTENT_PREVIEW_CHARS).is_some() {
                    preview.push_str("...");
                }
                write!(f, "\n   Content: {preview}")?;
            }
        }
        write!(
            f,
            "\n\nMetadata:\n- Total results: {}\n- Language: {}\n- Country: {}",
            self.metadata.total_results, self.metadata.language, self.metadata.country
        )
    }
}
