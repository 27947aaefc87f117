//! [`TokenUsage`]: the tokens model calls used and what they cost. One type for one model
//! call (as a reply reports it), for a run's running tally (added up call by call) and for a
//! run's usage as the session store keeps it and the workers and the HTTP API send it.
//!
//! Each of those places had its JSON before they shared a type, and every one is a wire that
//! stays as it was, so the type has three JSON forms:
//!
//! * its own `Serialize`/`Deserialize`: a run's usage as stored and sent (run records,
//!   `run_finished`, the workers' task results) —
//!   `{"prompt_tokens", "cached_prompt_tokens", "completion_tokens", "cost_usd"}`, the cost
//!   `null` when it is not known;
//! * [`tally`] ([`TokenUsage::as_tally`]): a run's tally as the agent's `finished` event, the
//!   CLI's `--json` result and the journal's result line carry it — the same counts, the cost a
//!   number (`0.0` when none is known) and `unpriced_calls`;
//! * [`reply`] ([`TokenUsage::as_reply`]): one call's usage as a model reply carries it (the
//!   journal's `model_response` lines, the stored model exchanges) —
//!   `{"prompt_tokens", "completion_tokens", "total_tokens"}` and `cached_prompt_tokens` when
//!   some were cached; no cost.
//!
//! ```
//! use agent_protocol::TokenUsage;
//!
//! let mut run = TokenUsage::default();
//! let priced = TokenUsage { prompt_tokens: 1200, completion_tokens: 35, cost_usd: Some(0.000_175), ..TokenUsage::default() };
//! let unpriced = TokenUsage { prompt_tokens: 40, completion_tokens: 4, ..TokenUsage::default() };
//! run.add_call(&priced);
//! run.add_call(&unpriced);
//! assert_eq!(run.total_tokens(), 1279);
//! assert_eq!((run.cost_usd, run.unpriced_calls), (Some(0.000_175), 1));
//! assert_eq!(
//!     serde_json::to_string(&run).unwrap(),
//!     r#"{"prompt_tokens":1240,"cached_prompt_tokens":0,"completion_tokens":39,"cost_usd":0.000175}"#
//! );
//! assert_eq!(
//!     serde_json::to_string(&run.as_tally()).unwrap(),
//!     r#"{"prompt_tokens":1240,"cached_prompt_tokens":0,"completion_tokens":39,"cost_usd":0.000175,"unpriced_calls":1}"#
//! );
//! assert_eq!(
//!     serde_json::to_string(&unpriced.as_reply()).unwrap(),
//!     r#"{"prompt_tokens":40,"completion_tokens":4,"total_tokens":44}"#
//! );
//! ```

use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `usd` rounded to a billionth of a dollar, so that sums print as the decimals they are
/// (`0.000175 + 0.00021` is `0.000385`, not `0.00038500000000000003`) and survive a round trip
/// through JSON text and SQLite unchanged.
#[must_use]
pub fn round_usd(usd: f64) -> f64 {
    (usd * 1e9).round() / 1e9
}

/// Tokens used by model calls, and what they cost: one call's, or a run's added up with
/// [`TokenUsage::add_call`].
///
/// Its own JSON is a run's usage as stored and sent; [`TokenUsage::as_tally`] and
/// [`TokenUsage::as_reply`] (with the [`tally`] and [`reply`] serde modules) write the run tally's
/// and a model reply's (see the [module](self)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Of the input tokens, those read from the provider's prompt cache (OpenAI's
    /// `prompt_tokens_details.cached_tokens`, Anthropic's and Bedrock's cache reads); they are
    /// billed at the cached-input price.
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// The cost in US dollars at the models' prices; `None` when it is not known.
    ///
    /// For one call: its cost, `None` when its model has no price. For a run: the cost of its
    /// priced calls, known when they cost something or when every call was priced (a run whose
    /// only priced calls were free and whose others had no price has no known cost). This is the
    /// cost a run's usage is stored and sent with, so a tally needs no conversion to be stored;
    /// the tally's JSON writes `None` as `0.0`, which loses nothing: prices are never negative,
    /// so an unknown cost is a sum of nothing but zeros.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Calls whose model has no price (their cost is not in `cost_usd`), as counted by
    /// [`TokenUsage::add_call`].
    ///
    /// Only a run's tally counts them and only its JSON ([`tally`]) carries them: a run's usage
    /// as stored and sent reads back with `0` here and says with `cost_usd` alone whether its
    /// cost is known.
    #[serde(skip)]
    pub unpriced_calls: u32,
    /// The total the provider reported for one call, when it is not `prompt_tokens +
    /// completion_tokens` (some count tokens there that are in neither, such as a model's
    /// hidden reasoning).
    ///
    /// Kept so that a reply's usage is written back ([`reply`]) as the provider gave it and
    /// [`TokenUsage::total_tokens`] of one call says what the provider said; `None` for every
    /// sum ([`TokenUsage::add_call`] clears it: a run's total is its input plus its output, what
    /// a token budget limits).
    #[serde(skip)]
    pub reported_total_tokens: Option<u64>,
}

impl TokenUsage {
    /// Adds one model call to this tally: its tokens, and its cost when its model has a price
    /// (`call.cost_usd` is `Some`); a call without a price counts in `unpriced_calls`.
    ///
    /// The cost becomes known once a priced call costs something, or while every call was
    /// priced. A tally read back from a stored usage whose cost is not known (`cost_usd` `None`
    /// with tokens) stays unknown when free calls are added: some of its calls had no price.
    pub fn add_call(&mut self, call: &TokenUsage) {
        let known_so_far = self.cost_usd.is_some() || self.tokens() == 0;
        let every_call_priced = call.cost_usd.is_some() && self.unpriced_calls == 0 && known_so_far;
        let sum = self.cost_usd.unwrap_or(0.0);
        let sum = match call.cost_usd {
            Some(cost) => round_usd(sum + cost),
            None => {
                self.unpriced_calls = self.unpriced_calls.saturating_add(1);
                sum
            }
        };
        self.prompt_tokens = self.prompt_tokens.saturating_add(call.prompt_tokens);
        self.cached_prompt_tokens = self
            .cached_prompt_tokens
            .saturating_add(call.cached_prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(call.completion_tokens);
        self.reported_total_tokens = None;
        self.cost_usd = known_cost(sum, self.tokens(), every_call_priced);
    }

    /// Every token, in and out: `prompt_tokens + completion_tokens`, or for one call the total
    /// its provider reported when that differs ([`TokenUsage::reported_total_tokens`]).
    #[must_use]
    pub fn total_tokens(&self) -> u64 {
        self.reported_total_tokens.unwrap_or_else(|| self.tokens())
    }

    /// Whether the cost is known (`cost_usd` is `Some`): what decides between a cost and `null`
    /// where usage is stored and sent.
    #[must_use]
    pub fn is_priced(&self) -> bool {
        self.cost_usd.is_some()
    }

    /// This usage in the JSON of a run's tally: `{"prompt_tokens", "cached_prompt_tokens",
    /// "completion_tokens", "cost_usd", "unpriced_calls"}`, the cost `0.0` when not known (what
    /// the `finished` event, the CLI's `--json` result and the journal's result line carry).
    #[must_use]
    pub fn as_tally(&self) -> impl Serialize + '_ {
        Tally(self)
    }

    /// This usage in the JSON of a model reply: `{"prompt_tokens", "completion_tokens",
    /// "total_tokens"}`, then `cached_prompt_tokens` when not zero; no cost (what a
    /// `ChatResponse` carries).
    #[must_use]
    pub fn as_reply(&self) -> impl Serialize + '_ {
        Reply(self)
    }

    /// Input plus output tokens.
    fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// The cost of a tally whose priced calls cost `sum` and which used `tokens`: known when the
/// priced calls cost something, or when there were tokens and every call was priced.
fn known_cost(sum: f64, tokens: u64, every_call_priced: bool) -> Option<f64> {
    (sum > 0.0 || (tokens > 0 && every_call_priced)).then_some(sum)
}

/// A [`TokenUsage`] written as a run's tally.
struct Tally<'a>(&'a TokenUsage);

impl Serialize for Tally<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let usage = self.0;
        let mut out = serializer.serialize_struct("TokenUsage", 5)?;
        out.serialize_field("prompt_tokens", &usage.prompt_tokens)?;
        out.serialize_field("cached_prompt_tokens", &usage.cached_prompt_tokens)?;
        out.serialize_field("completion_tokens", &usage.completion_tokens)?;
        out.serialize_field("cost_usd", &usage.cost_usd.unwrap_or(0.0))?;
        out.serialize_field("unpriced_calls", &usage.unpriced_calls)?;
        out.end()
    }
}

/// A [`TokenUsage`] written as a model reply's.
struct Reply<'a>(&'a TokenUsage);

impl Serialize for Reply<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let usage = self.0;
        let cached = usage.cached_prompt_tokens > 0;
        let mut out = serializer.serialize_struct("TokenUsage", 3 + usize::from(cached))?;
        out.serialize_field("prompt_tokens", &usage.prompt_tokens)?;
        out.serialize_field("completion_tokens", &usage.completion_tokens)?;
        out.serialize_field("total_tokens", &usage.total_tokens())?;
        if cached {
            out.serialize_field("cached_prompt_tokens", &usage.cached_prompt_tokens)?;
        } else {
            out.skip_field("cached_prompt_tokens")?;
        }
        out.end()
    }
}

/// A run's tally in its JSON ([`TokenUsage::as_tally`]), for `#[serde(with =
/// "agent_protocol::usage::tally")]`. Reading takes every field, as the tally's JSON always has
/// them.
pub mod tally {
    use super::{Deserialize, Deserializer, Serialize, Serializer, TokenUsage, known_cost};

    /// The tally's fields as its JSON spells them.
    #[derive(Deserialize)]
    struct Fields {
        prompt_tokens: u64,
        cached_prompt_tokens: u64,
        completion_tokens: u64,
        cost_usd: f64,
        unpriced_calls: u32,
    }

    /// Writes `usage` as a run's tally.
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub fn serialize<S: Serializer>(usage: &TokenUsage, serializer: S) -> Result<S::Ok, S::Error> {
        usage.as_tally().serialize(serializer)
    }

    /// Reads a run's tally.
    ///
    /// # Errors
    ///
    /// A field is missing or of the wrong type.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<TokenUsage, D::Error> {
        let fields = Fields::deserialize(deserializer)?;
        let tokens = fields
            .prompt_tokens
            .saturating_add(fields.completion_tokens);
        Ok(TokenUsage {
            prompt_tokens: fields.prompt_tokens,
            cached_prompt_tokens: fields.cached_prompt_tokens,
            completion_tokens: fields.completion_tokens,
            cost_usd: known_cost(fields.cost_usd, tokens, fields.unpriced_calls == 0),
            unpriced_calls: fields.unpriced_calls,
            reported_total_tokens: None,
        })
    }
}

/// One call's usage in a model reply's JSON ([`TokenUsage::as_reply`]), for `#[serde(with =
/// "agent_protocol::usage::reply")]` ([`reply::option`] for an `Option<TokenUsage>`). Reading
/// needs `total_tokens`; `cached_prompt_tokens` may be left out.
pub mod reply {
    use super::{Deserialize, Deserializer, Serialize, Serializer, TokenUsage};

    /// The reply usage's fields as its JSON spells them.
    #[derive(Deserialize)]
    struct Fields {
        prompt_tokens: u64,
        completion_tokens: u64,
        total_tokens: u64,
        #[serde(default)]
        cached_prompt_tokens: u64,
    }

    /// The usage a reply's fields say: its total kept only when it is not input plus output.
    fn usage_of(fields: Fields) -> TokenUsage {
        let sum = fields
            .prompt_tokens
            .saturating_add(fields.completion_tokens);
        TokenUsage {
            prompt_tokens: fields.prompt_tokens,
            cached_prompt_tokens: fields.cached_prompt_tokens,
            completion_tokens: fields.completion_tokens,
            cost_usd: None,
            unpriced_calls: 0,
            reported_total_tokens: (fields.total_tokens != sum).then_some(fields.total_tokens),
        }
    }

    /// Writes `usage` as a model reply's.
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub fn serialize<S: Serializer>(usage: &TokenUsage, serializer: S) -> Result<S::Ok, S::Error> {
        usage.as_reply().serialize(serializer)
    }

    /// Reads a model reply's usage.
    ///
    /// # Errors
    ///
    /// A field is missing or of the wrong type.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<TokenUsage, D::Error> {
        Fields::deserialize(deserializer).map(usage_of)
    }

    /// [`reply`](super::reply) for an `Option<TokenUsage>` (`null` when `None`).
    pub mod option {
        use super::{
            Deserialize, Deserializer, Fields, Serialize, Serializer, TokenUsage, usage_of,
        };

        /// Writes `usage` as a model reply's, or `null`.
        ///
        /// # Errors
        ///
        /// The serializer's.
        pub fn serialize<S: Serializer>(
            usage: &Option<TokenUsage>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            usage
                .as_ref()
                .map(TokenUsage::as_reply)
                .serialize(serializer)
        }

        /// Reads a model reply's usage, or `null`.
        ///
        /// # Errors
        ///
        /// A field is missing or of the wrong type.
        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<TokenUsage>, D::Error> {
            Option::<Fields>::deserialize(deserializer).map(|fields| fields.map(usage_of))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(prompt: u64, completion: u64, cost: Option<f64>) -> TokenUsage {
        TokenUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cost_usd: cost,
            ..TokenUsage::default()
        }
    }

    #[test]
    fn a_tally_is_priced_when_a_call_cost_something_or_every_call_had_a_price() {
        let mut usage = TokenUsage::default();
        assert!(!usage.is_priced(), "nothing used, nothing priced");
        usage.add_call(&call(10, 2, None));
        assert!(!usage.is_priced(), "the one call had no price");
        usage.add_call(&call(10, 2, Some(0.001)));
        assert!(usage.is_priced(), "one call had a price");
        let mut free = TokenUsage::default();
        free.add_call(&call(10, 2, Some(0.0)));
        assert_eq!(free.cost_usd, Some(0.0), "a priced model that cost nothing");
        free.add_call(&call(10, 2, None));
        assert_eq!(free.cost_usd, None, "free calls and unpriced ones: unknown");
        assert_eq!(free.unpriced_calls, 1);
    }

    #[test]
    fn a_tally_adds_tokens_and_counts_unpriced_calls() {
        let mut usage = TokenUsage::default();
        usage.add_call(&call(100, 10, Some(0.5)));
        usage.add_call(&TokenUsage {
            cached_prompt_tokens: 50,
            reported_total_tokens: Some(999),
            ..call(200, 20, None)
        });
        assert_eq!(usage.total_tokens(), 330, "a sum's total is in plus out");
        assert_eq!(usage.cached_prompt_tokens, 50);
        assert_eq!(usage.cost_usd, Some(0.5));
        assert_eq!(usage.unpriced_calls, 1);
    }

    #[test]
    fn sums_of_costs_stay_short_decimals() {
        let mut usage = TokenUsage::default();
        usage.add_call(&call(1, 1, Some(0.000_175)));
        usage.add_call(&call(1, 1, Some(0.000_21)));
        assert_eq!(
            usage.cost_usd.map(|c| c.to_string()).as_deref(),
            Some("0.000385")
        );
    }

    #[test]
    fn a_stored_usage_without_a_cost_stays_without_one_when_free_calls_are_added() {
        let mut stored: TokenUsage =
            serde_json::from_str(r#"{"prompt_tokens":40,"completion_tokens":4}"#).unwrap();
        assert_eq!(stored.cost_usd, None);
        stored.add_call(&call(1, 1, Some(0.0)));
        assert_eq!(stored.cost_usd, None);
        stored.add_call(&call(1, 1, Some(0.25)));
        assert_eq!(stored.cost_usd, Some(0.25), "a cost of the priced calls");
    }

    #[test]
    fn a_tally_reads_back_as_it_was_written() {
        let mut partly = TokenUsage::default();
        partly.add_call(&call(100, 10, Some(0.5)));
        partly.add_call(&call(200, 20, None));
        let mut free_and_unpriced = TokenUsage::default();
        free_and_unpriced.add_call(&call(100, 10, Some(0.0)));
        free_and_unpriced.add_call(&call(200, 20, None));
        let mut free = TokenUsage::default();
        free.add_call(&call(100, 10, Some(0.0)));
        for usage in [TokenUsage::default(), partly, free_and_unpriced, free] {
            let json = serde_json::to_string(&usage.as_tally()).unwrap();
            let back = tally::deserialize(&mut serde_json::Deserializer::from_str(&json)).unwrap();
            assert_eq!(back, usage, "{json}");
        }
        let json = serde_json::to_string(&TokenUsage::default().as_tally()).unwrap();
        assert_eq!(
            json,
            r#"{"prompt_tokens":0,"cached_prompt_tokens":0,"completion_tokens":0,"cost_usd":0.0,"unpriced_calls":0}"#
        );
    }

    #[test]
    fn a_reply_keeps_the_total_its_provider_reported() {
        for json in [
            r#"{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"cached_prompt_tokens":4}"#,
            r#"{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}"#,
            r#"{"prompt_tokens":10,"completion_tokens":2,"total_tokens":30}"#,
        ] {
            let usage = reply::deserialize(&mut serde_json::Deserializer::from_str(json)).unwrap();
            assert_eq!(serde_json::to_string(&usage.as_reply()).unwrap(), json);
        }
        let usage = reply::deserialize(&mut serde_json::Deserializer::from_str(
            r#"{"prompt_tokens":10,"completion_tokens":2,"total_tokens":30}"#,
        ))
        .unwrap();
        assert_eq!(usage.total_tokens(), 30);
        assert_eq!(usage.reported_total_tokens, Some(30));
        assert!(
            reply::deserialize(&mut serde_json::Deserializer::from_str(
                r#"{"prompt_tokens":10,"completion_tokens":2}"#
            ))
            .is_err(),
            "a reply's usage has its total"
        );
    }

    #[test]
    fn the_stored_form_has_no_tally_fields() {
        let mut usage = TokenUsage::default();
        usage.add_call(&call(40, 4, None));
        assert_eq!(
            serde_json::to_string(&usage).unwrap(),
            r#"{"prompt_tokens":40,"cached_prompt_tokens":0,"completion_tokens":4,"cost_usd":null}"#
        );
    }
}
