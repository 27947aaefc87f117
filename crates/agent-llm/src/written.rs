//! What a client wrote in its previous request body, for the next one: a run's requests repeat
//! the whole conversation and the same tools step after step, and formatting and escaping them
//! all again was most of what writing a body cost. The tools' JSON is reused while they are the
//! same definitions; each message is written once, and its JSON reused while the message at
//! its place in the next request is the same.

use std::sync::{Arc, Mutex, PoisonError};

use agent_core::{Message, ToolDefinition};
use serde_json::value::RawValue;

use crate::format::wire_messages;
use crate::request::WireTool;

/// Tool definitions and their JSON in a body.
type ToolsJson = (Arc<[ToolDefinition]>, Box<RawValue>);

/// The last tool definitions written, and their JSON in the body.
#[derive(Default)]
pub(crate) struct WrittenTools {
    last: Mutex<Option<ToolsJson>>,
}

impl WrittenTools {
    /// `tools` as the body's `tools` (`None` for none): written again only when they are not
    /// the definitions of the previous request (an agent shares one list step after step).
    pub(crate) fn write(&self, tools: &Arc<[ToolDefinition]>) -> Option<Box<RawValue>> {
        if tools.is_empty() {
            return None;
        }
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((sent, raw)) = last.as_ref()
            && Arc::ptr_eq(sent, tools)
        {
            return Some(raw.clone());
        }
        let wire: Vec<WireTool<'_>> = tools.iter().map(WireTool::from).collect();
        let raw = serde_json::value::to_raw_value(&wire).ok()?;
        *last = Some((Arc::clone(tools), raw.clone()));
        Some(raw)
    }
}

/// A message of the previous request and its JSON in that body (`None`: it was not sent, as
/// an empty assistant turn is not).
struct Written {
    message: Message,
    json: Option<Arc<RawValue>>,
}

/// The messages of the last body a client wrote. A message with an image is kept only from a
/// [`write_each`](Self::write_each) that holds images to the next write (a journal's look at
/// the body just before it is sent); otherwise it would double the image's memory between
/// steps for little gain, and it is written again every time.
#[derive(Default)]
pub(crate) struct WrittenMessages {
    last: Mutex<Vec<Option<Written>>>,
}

impl WrittenMessages {
    /// The JSON of each message of `messages` that goes into the body, in order: the same bytes
    /// as the messages formatted by [`wire_messages`] and serialised together.
    ///
    /// # Errors
    ///
    /// A message cannot be serialised.
    pub(crate) fn write<'a>(
        &self,
        messages: impl IntoIterator<Item = &'a Message>,
        supports_images: bool,
    ) -> Result<Vec<Arc<RawValue>>, serde_json::Error> {
        Ok(self
            .write_each(messages, supports_images, false)?
            .into_iter()
            .flatten()
            .collect())
    }

    /// The JSON of each message of `messages` in the body (`None`: it is not sent), kept as
    /// the last body's: a message written here is not written again by the next call while it
    /// is at the same place. A message the last body had at its place is given the same `Arc`.
    /// Messages with an image are kept for the next call only when `hold_images`.
    ///
    /// # Errors
    ///
    /// A message cannot be serialised.
    pub(crate) fn write_each<'a>(
        &self,
        messages: impl IntoIterator<Item = &'a Message>,
        supports_images: bool,
        hold_images: bool,
    ) -> Result<Vec<Option<Arc<RawValue>>>, serde_json::Error> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        // Taken out: on an error, nothing of this request is kept.
        let mut previous = std::mem::take(&mut *last).into_iter();
        let mut kept = Vec::with_capacity(previous.len() + 2);
        let mut out = Vec::with_capacity(previous.len() + 2);
        for message in messages {
            let written = match previous.next().flatten() {
                Some(written) if written.message == *message => written,
                _ => {
                    let json = write_one(message, supports_images)?.map(Arc::from);
                    if message.base64_image.is_some() && !hold_images {
                        // Not kept, and so not copied.
                        out.push(json);
                        kept.push(None);
                        continue;
                    }
                    Written {
                        json,
                        message: message.clone(),
                    }
                }
            };
            out.push(written.json.clone());
            let image = written.message.base64_image.is_some();
            kept.push((!image || hold_images).then_some(written));
        }
        *last = kept;
        Ok(out)
    }
}

/// The JSON of `message` in a body (`None`: it is not sent).
pub(crate) fn write_one(
    message: &Message,
    supports_images: bool,
) -> Result<Option<Box<RawValue>>, serde_json::Error> {
    wire_messages([message], supports_images)
        .first()
        .map(serde_json::value::to_raw_value)
        .transpose()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agent_core::ToolCall;

    use super::*;

    fn joined(written: &[Arc<RawValue>]) -> String {
        serde_json::to_string(written).unwrap()
    }

    fn typed(messages: &[Message]) -> String {
        serde_json::to_string(&wire_messages(messages, true)).unwrap()
    }

    #[test]
    fn every_body_is_what_formatting_all_of_it_gives() {
        let cache = WrittenMessages::default();
        let mut messages = vec![
            Message::user_message("the \"task\"\n"),
            Message::from_tool_calls(vec![ToolCall::new("c1", "bash", r#"{"a":1}"#)], ""),
            Message::tool_message("output", "bash", "c1"),
            // Not sent: an empty assistant turn.
            Message::assistant_message(""),
        ];
        assert_eq!(
            joined(&cache.write(&messages, true).unwrap()),
            typed(&messages)
        );
        // One more message: the rest is reused.
        messages.push(Message::user_message("next"));
        assert_eq!(
            joined(&cache.write(&messages, true).unwrap()),
            typed(&messages)
        );
        // A message changed in the middle (a trimmed output) is written again, the others
        // are not taken for it.
        messages[2] = Message::tool_message("[not resent]", "bash", "c1");
        let body = joined(&cache.write(&messages, true).unwrap());
        assert_eq!(body, typed(&messages));
        assert!(body.contains("[not resent]") && !body.contains("\"output\""));
        // Fewer messages (a compacted conversation), and an image, which is not kept.
        let shorter = vec![
            messages[0].clone(),
            Message::user_message("see").with_image("aGk="),
        ];
        assert_eq!(
            joined(&cache.write(&shorter, true).unwrap()),
            typed(&shorter)
        );
        assert!(cache.last.lock().unwrap()[1].is_none());
        assert_eq!(
            joined(&cache.write(&shorter, true).unwrap()),
            typed(&shorter)
        );
        assert_eq!(joined(&cache.write(&shorter, false).unwrap()), {
            serde_json::to_string(&wire_messages(&shorter, false)).unwrap()
        });
    }

    #[test]
    fn an_image_is_held_from_a_look_at_the_body_to_its_sending_only() {
        let cache = WrittenMessages::default();
        let messages = vec![
            Message::user_message("see").with_image("aGk="),
            Message::assistant_message(""),
        ];
        // A journal's look: one JSON per message (the empty turn is not sent), the image kept.
        let each = cache.write_each(&messages, true, true).unwrap();
        assert!(each[0].is_some() && each[1].is_none());
        assert!(cache.last.lock().unwrap()[0].is_some());
        // The sending reuses it (the same JSON, not written again) and lets it go.
        let sent = cache.write(&messages, true).unwrap();
        assert!(Arc::ptr_eq(&sent[0], each[0].as_ref().unwrap()));
        assert_eq!(joined(&sent), typed(&messages));
        assert!(cache.last.lock().unwrap()[0].is_none());
    }
}
