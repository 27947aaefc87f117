//! Token counting with tiktoken (spec §5.2), used for the input budget and context checks.

use serde_json::Value;
use tiktoken_rs::CoreBPE;

/// Counts tokens for one model. The tokenizer tables are loaded once per process, on first use.
#[derive(Clone, Copy)]
pub struct TokenCounter {
    bpe: &'static CoreBPE,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter")
    }
}

/// Tokens per message beyond its text (OpenAI's chat format overhead).
pub const BASE_MESSAGE_TOKENS: usize = 4;
/// Tokens per request for the reply's priming.
pub const FORMAT_TOKENS: usize = 2;
/// A low-detail image.
pub const LOW_DETAIL_IMAGE_TOKENS: usize = 85;
/// An image whose detail and size are unknown (OpenManus's default).
pub const DEFAULT_IMAGE_TOKENS: usize = 1024;

impl TokenCounter {
    /// The counter for `model`'s encoding: `o200k_base` for the models that use it (gpt-4o,
    /// gpt-4.1, gpt-5, the o-series), `cl100k_base` for every other model, known or not.
    ///
    /// The encodings of the completion-era models (`p50k`, `r50k`, GPT-2), which no chat model
    /// uses, are counted as `cl100k_base`: asking tiktoken-rs for them by name would link their
    /// tables (1.7 MB of the binary) for a count that only sizes budgets and context checks.
    #[must_use]
    pub fn for_model(model: &str) -> Self {
        use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};
        let name = model.rsplit('/').next().unwrap_or(model);
        let bpe = match get_tokenizer(name) {
            Some(Tokenizer::O200kBase | Tokenizer::O200kHarmony) => {
                tiktoken_rs::o200k_base_singleton()
            }
            _ => tiktoken_rs::cl100k_base_singleton(),
        };
        Self { bpe }
    }

    /// Tokens of `text`. Special-token strings such as `<|endoftext|>` are counted as ordinary
    /// text (OpenManus's tokenizer raised on them and aborted the run, spec §5.2).
    #[must_use]
    pub fn count_text(&self, text: &str) -> usize {
        if text.is_empty() {
            0
        } else {
            self.bpe.encode_ordinary(text).len()
        }
    }

    /// Tokens of one image content part, by its `detail` (`low`: 85; `high`, or `medium` with
    /// `dimensions`: the 512-px tile formula; `high` without dimensions: 765; otherwise 1024).
    #[must_use]
    pub fn count_image(&self, part: &Value) -> usize {
        let detail = part
            .get("detail")
            .or_else(|| part.get("image_url").and_then(|u| u.get("detail")))
            .and_then(Value::as_str)
            .unwrap_or("medium");
        let dimensions = part.get("dimensions").and_then(|d| {
            let d = d.as_array()?;
            Some((d.first()?.as_f64()?, d.get(1)?.as_f64()?))
        });
        match (detail, dimensions) {
            ("low", _) => LOW_DETAIL_IMAGE_TOKENS,
            ("high" | "medium", Some((w, h))) => high_detail_tokens(w, h),
            ("high", None) => high_detail_tokens(1024.0, 1024.0),
            _ => DEFAULT_IMAGE_TOKENS,
        }
    }

    /// Tokens of a message's `content` (a string or a list of parts).
    #[must_use]
    pub fn count_content(&self, content: &Value) -> usize {
        match content {
            Value::String(text) => self.count_text(text),
            Value::Array(parts) => parts
                .iter()
                .map(|part| match part.get("type").and_then(Value::as_str) {
                    Some("image_url") => self.count_image(part),
                    _ => part
                        .get("text")
                        .and_then(Value::as_str)
                        .map_or(0, |t| self.count_text(t)),
                })
                .sum(),
            _ => 0,
        }
    }

    /// Tokens of formatted messages: 2 for the request, then per message 4 plus its role,
    /// content, tool-call names and arguments, `name` and `tool_call_id`.
    #[must_use]
    pub fn count_messages(&self, messages: &[Value]) -> usize {
        let text = |m: &Value, key: &str| {
            m.get(key)
                .and_then(Value::as_str)
                .map_or(0, |t| self.count_text(t))
        };
        FORMAT_TOKENS
            + messages
                .iter()
                .map(|m| {
                    let calls: usize =
                        m.get("tool_calls")
                            .and_then(Value::as_array)
                            .map_or(0, |calls| {
                                calls
                                    .iter()
                                    .filter_map(|c| c.get("function"))
                                    .map(|f| text(f, "name") + text(f, "arguments"))
                                    .sum()
                            });
                    BASE_MESSAGE_TOKENS
                        + text(m, "role")
                        + m.get("content").map_or(0, |c| self.count_content(c))
                        + calls
                        + text(m, "name")
                        + text(m, "tool_call_id")
                })
                .sum::<usize>()
    }

    /// Tokens of the tool definitions (their JSON text).
    #[must_use]
    pub fn count_tools(&self, tools: &[Value]) -> usize {
        tools.iter().map(|t| self.count_text(&t.to_string())).sum()
    }
}

fn high_detail_tokens(width: f64, height: f64) -> usize {
    let (mut w, mut h) = (width.max(1.0), height.max(1.0));
    if w > 2048.0 || h > 2048.0 {
        let scale = 2048.0 / w.max(h);
        w *= scale;
        h *= scale;
    }
    let scale = 768.0 / w.min(h);
    w *= scale;
    h *= scale;
    let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
    // `tiles` is a small positive whole number.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let tiles = tiles as usize;
    tiles * 170 + LOW_DETAIL_IMAGE_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_special_token_strings() {
        let counter = TokenCounter::for_model("gpt-4");
        assert_eq!(counter.count_text(""), 0);
        assert_eq!(counter.count_text("hello world"), 2);
        assert!(
            counter.count_text("a <|endoftext|> b") > 3,
            "special tokens count as text, no error"
        );
        // Unknown models fall back to cl100k.
        assert_eq!(
            TokenCounter::for_model("my-local-model").count_text("hello world"),
            2
        );
    }

    #[test]
    fn each_model_family_counts_with_its_encoding() {
        // cl100k and o200k split this text differently: the counts tell the encodings apart.
        let text = "antidisestablishmentarianism 日本語のテキスト";
        let cl100k = tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .len();
        let o200k = tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len();
        assert_ne!(
            cl100k, o200k,
            "the sample must tell the two encodings apart"
        );
        for model in [
            "gpt-4o",
            "openai/gpt-4o-mini",
            "o3-mini",
            "gpt-4.1",
            "gpt-5",
        ] {
            assert_eq!(
                TokenCounter::for_model(model).count_text(text),
                o200k,
                "{model}"
            );
        }
        for model in [
            "gpt-4",
            "gpt-3.5-turbo",
            "text-davinci-003",
            "davinci",
            "claude-3-5-sonnet",
        ] {
            assert_eq!(
                TokenCounter::for_model(model).count_text(text),
                cl100k,
                "{model}"
            );
        }
    }

    #[test]
    fn images_follow_the_detail_rules() {
        let counter = TokenCounter::for_model("gpt-4o");
        assert_eq!(
            counter.count_image(&json!({"type": "image_url", "detail": "low"})),
            85
        );
        assert_eq!(
            counter.count_image(
                &json!({"type": "image_url", "image_url": {"url": "x", "detail": "high"}})
            ),
            765
        );
        assert_eq!(
            counter.count_image(
                &json!({"type": "image_url", "detail": "high", "dimensions": [2048, 4096]})
            ),
            6 * 170 + 85
        );
        assert_eq!(
            counter.count_image(&json!({"type": "image_url", "image_url": {"url": "x"}})),
            1024
        );
    }

    #[test]
    fn messages_count_overhead_role_content_calls_and_ids() {
        let counter = TokenCounter::for_model("gpt-4");
        let hello = counter.count_text("hello world");
        let role = counter.count_text("user");
        assert_eq!(
            counter.count_messages(&[json!({"role": "user", "content": "hello world"})]),
            2 + 4 + role + hello
        );
        let call = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{\"a\":1}"}}
        ]});
        let expected = 2
            + 4
            + counter.count_text("assistant")
            + counter.count_text("bash")
            + counter.count_text("{\"a\":1}");
        assert_eq!(counter.count_messages(&[call]), expected);
    }
}
