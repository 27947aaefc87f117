//! The process's HTTP clients (`agent_llm::http`): LLM clients for the same endpoint share one
//! reqwest client, and talking to an `http://` endpoint never reads the system's root
//! certificates. One test in this file, so that it owns the process's counters.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::Message;
use agent_llm::{ChatModel, ChatRequest, LlmClient, LlmSettings, http};
use agent_testkit::{Completion, MockOpenAi};

#[tokio::test]
async fn clients_for_one_endpoint_share_one_http_client_and_http_reads_no_roots() {
    let server = MockOpenAi::start().await.unwrap();
    let built = http::clients_built();
    let a = LlmClient::new(LlmSettings::new("gpt-4o", server.base_url())).unwrap();
    let b = LlmClient::new(LlmSettings::new("gpt-4o-mini", server.base_url())).unwrap();
    let shared = http::shared_client().unwrap();
    assert!(
        http::clients_built() <= built + 2,
        "one client for the LLM's connect timeout, one for the default: {} built",
        http::clients_built() - built
    );
    let after_first = http::clients_built();
    let c = LlmClient::new(LlmSettings::new("gpt-4o", server.base_url())).unwrap();
    let _again = http::shared_client().unwrap();
    assert_eq!(http::clients_built(), after_first, "nothing new is built");

    for (model, client) in [("a", &a), ("b", &b), ("c", &c)] {
        server.push(Completion::text(format!("hello from {model}")));
        let reply = client
            .complete(ChatRequest::new(vec![Message::user_message("hi")]))
            .await
            .unwrap();
        assert_eq!(
            reply.content.as_deref(),
            Some(format!("hello from {model}").as_str())
        );
    }
    assert!(http::client_builder().build().is_ok());
    let _ = shared;
    assert!(
        !http::roots_loaded(),
        "no https request was made, so no root certificate was read"
    );
    assert!(http::tls_config().is_ok());
    server.verify().unwrap();
}
