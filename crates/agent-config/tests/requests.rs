//! The profiles take effect on the wire: settings from `llm_for` / `vision_llm` drive a real
//! `LlmClient` over HTTP against the test kit's strict mock server, and the requests it receives
//! carry each profile's model, key and limits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_core::Message;
use agent_llm::{ChatModel, ImageInput, LlmClient};
use agent_testkit::MockOpenAi;

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[tokio::test]
async fn each_profile_sends_its_own_model_key_and_limits() {
    let server = MockOpenAi::start().await.unwrap();
    let config = common::loader_with(&[
        ("MOCK_URL", &server.base_url()),
        ("DEFAULT_KEY", "sk-default-key-1"),
        ("SWE_KEY", "sk-swe-key-2"),
    ])
    .parse_str(
        r#"
        [llm]
        model = "gpt-4o"
        base_url = "${MOCK_URL}"
        api_key = "${DEFAULT_KEY}"
        max_tokens = 1000
        temperature = 0.0
        stream = false

        [llm.swe]
        model = "deepseek-chat"
        api_key = "${SWE_KEY}"
        max_tokens = 2000

        [llm.vision]
        model = "acme-vl-7b"    # not in the model table: [llm.vision] marks it image-capable
        "#,
    )
    .unwrap();

    for _ in 0..3 {
        server.push_text("ok");
    }
    let ask = |settings: &agent_llm::LlmSettings| LlmClient::new(settings.clone()).unwrap();
    ask(config.llm_for("Manus"))
        .ask(vec![Message::user_message("manus task")], vec![])
        .await
        .unwrap();
    ask(config.llm_for("SWE"))
        .ask(vec![Message::user_message("swe task")], vec![])
        .await
        .unwrap();
    ask(config.vision_llm())
        .ask_with_images(
            vec![Message::user_message("what is in the picture?")],
            vec![ImageInput::Base64(PNG.into())],
            vec![],
        )
        .await
        .unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let summary: Vec<(String, String, u64)> = requests
        .iter()
        .map(|r| {
            (
                r.body["model"].as_str().unwrap().to_owned(),
                r.header("authorization").unwrap().to_owned(),
                r.body["max_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("gpt-4o".into(), "Bearer sk-default-key-1".into(), 1000),
            ("deepseek-chat".into(), "Bearer sk-swe-key-2".into(), 2000),
            ("acme-vl-7b".into(), "Bearer sk-default-key-1".into(), 1000),
        ]
    );
    // Inherited temperature and the non-streaming setting reach every request.
    for request in &requests {
        assert_eq!(request.body["temperature"].as_f64(), Some(0.0));
        assert!(!request.is_stream());
    }
    // The image went to the vision model as an image part.
    let last = requests[2].messages().last().unwrap();
    let parts = last["content"].as_array().unwrap();
    assert!(parts.iter().any(|p| p["type"] == "image_url"), "{last}");
    server.verify().unwrap();
}
