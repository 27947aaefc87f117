//! An image entering memory is announced on the event bus (front ends show what the model
//! sees); a message without one is not.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::{AgentEvent, BaseAgent, Message};

#[test]
fn a_message_with_an_image_emits_an_image_event() {
    let mut base = BaseAgent::new("images");
    let mut events = base.events().subscribe();
    base.update_memory(Message::user_message("no picture"));
    base.update_memory(
        Message::user_message("Image returned by browser_use:").with_image("iVBORw0KGgo="),
    );
    let event = events.try_recv().unwrap();
    assert_eq!(
        event,
        AgentEvent::Image {
            step: 0,
            caption: "Image returned by browser_use:".into(),
            image: "iVBORw0KGgo=".into(),
        }
    );
    assert!(events.try_recv().is_err(), "one event, for the one image");
    assert_eq!(base.memory.len(), 2);
}
