//! The HTTP API over real HTTP: sessions, tasks and their events, cancellation, `ask_human`,
//! files and their confinement, the token and the Origin check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_testkit::Completion;
use common::{PATIENCE, TestServer, call};
use serde_json::json;

#[tokio::test]
async fn a_task_streams_its_events_and_ends_with_the_final_answer() {
    let server = TestServer::start().await;
    server
        .mock
        .push(
            Completion::tool_calls(
                Some("Writing **notes**.".into()),
                [call(
                    "c1",
                    "bash",
                    &json!({"command": "printf hello > notes.md"}),
                )],
            )
            .with_usage(40, 4),
        )
        .push(Completion::tool_calls(
            Some("Done: notes.md holds *hello*.".into()),
            [call("c2", "terminate", &json!({"status": "success"}))],
        ));
    let id = server.create("swe").await;
    let mut events = server.events(&id, None).await;
    let (status, body) = server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "Write notes.md"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let seen = events.until(|e| e.event == "run_finished").await;
    let names: Vec<String> = seen
        .iter()
        .filter(|e| e.id.is_some())
        .map(|e| e.name())
        .collect();
    assert_eq!(
        names.first().map(String::as_str),
        Some("run_started"),
        "{names:?}"
    );
    for expected in [
        "step_started",
        "thought",
        "tool_call_started",
        "tool_call_finished",
        "token_usage",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    // Ids grow, none twice.
    let ids: Vec<i64> = seen.iter().filter_map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // Thoughts come with their markdown rendered.
    let thought = seen.iter().find(|e| e.name() == "thought").unwrap();
    assert!(
        thought.data["html"]
            .as_str()
            .unwrap()
            .contains("<strong>notes</strong>")
    );
    let finished = seen.last().unwrap();
    assert_eq!(finished.data["data"]["state"], "finished", "{finished:?}");
    assert!(
        finished.data["data"]["answer"]
            .as_str()
            .unwrap()
            .contains("notes.md holds")
    );
    assert!(
        finished.data["html"]
            .as_str()
            .unwrap()
            .contains("<em>hello</em>")
    );

    // The session and its run as the API lists them.
    let (_, session) = server.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(session["title"], "Write notes.md");
    assert_eq!(session["run_list"].as_array().unwrap().len(), 1);
    let (_, list) = server.get("/api/sessions").await;
    assert_eq!(list["sessions"][0]["id"], id.as_str());
    server.mock.verify().unwrap();

    // The file is listed and downloads inline as text.
    let (_, files) = server.get(&format!("/api/sessions/{id}/files")).await;
    assert_eq!(files["files"][0]["path"], "notes.md", "{files}");
    let response = server
        .http
        .get(format!("{}/api/sessions/{id}/files/notes.md", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("inline")
    );
    assert_eq!(response.text().await.unwrap(), "hello");
    server.stop().await;
}

#[tokio::test]
async fn a_reconnecting_client_gets_what_it_missed_and_nothing_twice() {
    let server = TestServer::start().await;
    server.mock.push(Completion::tool_calls(
        Some("Done.".into()),
        [call("c1", "terminate", &json!({"status": "success"}))],
    ));
    let id = server.create("swe").await;
    let mut first = server.events(&id, None).await;
    server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "Finish"}),
        )
        .await;
    let all: Vec<i64> = first
        .until(|e| e.event == "run_finished")
        .await
        .iter()
        .filter_map(|e| e.id)
        .collect();
    assert!(all.len() > 4, "{all:?}");
    // A client that saw the third event gets exactly the rest.
    let mut again = server.events(&id, Some(all[2])).await;
    let rest: Vec<i64> = again
        .until(|e| e.event == "run_finished")
        .await
        .iter()
        .filter_map(|e| e.id)
        .collect();
    assert_eq!(rest, all[3..]);
    // A bad Last-Event-ID is refused.
    let response = server
        .http
        .get(format!("{}/api/sessions/{id}/events", server.url))
        .header("last-event-id", "soon")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    server.stop().await;
}

#[tokio::test]
async fn a_running_task_is_cancelled_through_the_api() {
    let server = TestServer::start().await;
    server.mock.push(Completion::tool_calls(
        None,
        [call("c1", "bash", &json!({"command": "sleep 300"}))],
    ));
    let id = server.create("swe").await;
    let mut events = server.events(&id, None).await;
    server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "Wait"}),
        )
        .await;
    events.until(|e| e.name() == "tool_call_started").await;
    // A second task while one runs is refused.
    let (status, _) = server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "More"}),
        )
        .await;
    assert_eq!(status, 409);
    let (status, body) = server
        .post(&format!("/api/sessions/{id}/cancel"), json!({}))
        .await;
    assert_eq!((status, body["cancelled"].as_bool()), (200, Some(true)));
    let finished = events
        .until(|e| e.event == "run_finished")
        .await
        .pop()
        .unwrap();
    assert_eq!(finished.data["data"]["state"], "cancelled", "{finished:?}");
    // Idle again: nothing to cancel.
    let idle = events
        .until(|e| e.event == "status" && e.data["busy"] == false)
        .await;
    assert!(!idle.is_empty());
    let (_, body) = server
        .post(&format!("/api/sessions/{id}/cancel"), json!({}))
        .await;
    assert_eq!(body["cancelled"], false);
    server.stop().await;
}

#[tokio::test]
async fn ask_human_is_answered_through_the_api() {
    let server = TestServer::start().await;
    server
        .mock
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "ask_human",
                &json!({"inquire": "Which colour?"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Blue it is.".into()),
            [call("c2", "terminate", &json!({"status": "success"}))],
        ));
    let id = server.create("manus").await;
    let mut events = server.events(&id, None).await;
    // Nothing is asked yet.
    let (status, _) = server
        .post(
            &format!("/api/sessions/{id}/answer"),
            json!({"answer": "x"}),
        )
        .await;
    assert_eq!(status, 409);
    server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "Pick a colour"}),
        )
        .await;
    let asked = events
        .until(|e| e.event == "status" && e.data["question"].is_string())
        .await
        .pop()
        .unwrap();
    assert_eq!(asked.data["question"], "Which colour?");
    let (status, _) = server
        .post(
            &format!("/api/sessions/{id}/answer"),
            json!({"answer": "blue"}),
        )
        .await;
    assert_eq!(status, 200);
    let finished = events.until(|e| e.event == "run_finished").await;
    let observation = finished
        .iter()
        .find(|e| e.name() == "tool_call_finished")
        .unwrap();
    assert!(
        observation.data["data"]["observation"]
            .as_str()
            .unwrap()
            .contains("blue")
    );
    // The model got the answer as the tool's result.
    let second = &server.mock.requests()[1];
    assert!(
        second
            .messages()
            .iter()
            .any(|m| m["role"] == "tool"
                && m["content"].as_str().unwrap_or_default().contains("blue")),
        "{:?}",
        second.messages()
    );
    server.mock.verify().unwrap();
    server.stop().await;
}

#[tokio::test]
async fn files_outside_the_workspace_are_never_served() {
    let server = TestServer::start().await;
    let id = server.create("swe").await;
    let (_, session) = server.get(&format!("/api/sessions/{id}")).await;
    let workspace = std::path::PathBuf::from(session["workspace"].as_str().unwrap());
    std::fs::create_dir_all(workspace.join("sub")).unwrap();
    std::fs::write(workspace.join("sub/chart.png"), [0x89, b'P', b'N', b'G']).unwrap();
    std::fs::write(server.dir.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(
        server.dir.path().join("secret.txt"),
        workspace.join("link.txt"),
    )
    .unwrap();

    let (_, files) = server.get(&format!("/api/sessions/{id}/files")).await;
    let paths: Vec<&str> = files["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["sub/chart.png"], "links are not listed: {files}");
    let get = |path: &str| {
        let url = format!("{}/api/sessions/{id}/files/{path}", server.url);
        let http = server.http.clone();
        async move {
            let response = http.get(url).send().await.unwrap();
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            (status, headers, response.bytes().await.unwrap())
        }
    };
    let (status, headers, body) = get("sub/chart.png").await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "image/png");
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("inline")
    );
    assert_eq!(&body[..], [0x89, b'P', b'N', b'G']);
    // An encoded slash is a slash: the same file.
    assert_eq!(get("sub%2Fchart.png").await.0, 200);
    for bad in [
        "..%2Fsecret.txt",
        "sub%2F..%2F..%2Fsecret.txt",
        "%2e%2e/secret.txt",
        "sub/%2e%2e/%2e%2e/secret.txt",
    ] {
        let (status, _, body) = get(bad).await;
        assert!(status == 400 || status == 404, "{bad}: {status}");
        assert_ne!(&body[..], b"secret", "{bad}");
    }
    let (status, _, body) = get("link.txt").await;
    assert_eq!(status, 403);
    assert_ne!(&body[..], b"secret");
    let (status, _, _) = get(".openmanus/sessions.db").await;
    assert!(status == 403 || status == 404, "{status}");
    assert_eq!(get("missing.txt").await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_foreign_origin_or_host_is_refused() {
    let server = TestServer::start().await;
    let refused = server
        .http
        .get(format!("{}/api/sessions", server.url))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let rebound = server
        .http
        .get(format!("{}/api/sessions", server.url))
        .header("host", format!("evil.example:{}", server.addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);
    let own = server
        .http
        .get(format!("{}/api/sessions", server.url))
        .header("origin", server.url.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 200);
    // The page and its assets are served with a strict policy.
    let page = server
        .http
        .get(format!("{}/", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("<title>openmanus</title>")
    );
    server.stop().await;
}

#[tokio::test]
async fn beyond_loopback_a_token_is_required() {
    // Without a token the server refuses to start.
    let dir = tempfile::tempdir().unwrap();
    let mut options = agent_server::ServerOptions::new(dir.path());
    options.bind = "0.0.0.0:0".parse().unwrap();
    assert!(matches!(
        options.validate(),
        Err(agent_server::ServerError::TokenRequired(_))
    ));

    let token = "a-long-test-token-0123456789";
    let server = TestServer::start_with(|options| {
        options.bind = "0.0.0.0:0".parse().unwrap();
        options.token = Some(token.into());
    })
    .await;
    let (status, _) = server.get("/api/sessions").await;
    assert_eq!(status, 401);
    let wrong = server
        .http
        .get(format!("{}/api/sessions", server.url))
        .bearer_auth("a-long-wrong-token-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = server
        .http
        .get(format!("{}/api/sessions", server.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    // The health check needs no token; the login sets the cookie the page uses.
    assert_eq!(server.get("/api/health").await.0, 200);
    let login = server
        .http
        .post(format!("{}/api/login", server.url))
        .json(&json!({"token": token}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 204);
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let with_cookie = server
        .http
        .get(format!("{}/api/sessions", server.url))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(with_cookie.status(), 200);
    let _ = PATIENCE;
    server.stop().await;
}

#[tokio::test]
async fn an_idle_session_is_closed_and_its_next_task_resumes_the_conversation() {
    // Sessions idle for a second are closed (the test waits for it to happen, however long).
    let server = TestServer::start_with(|options| {
        options.idle_timeout = Some(std::time::Duration::from_secs(1))
    })
    .await;
    server
        .mock
        .push(Completion::tool_calls(
            Some("Noted: the word is *quince*.".into()),
            [call("c1", "terminate", &json!({"status": "success"}))],
        ))
        .push(Completion::tool_calls(
            Some("The word was quince.".into()),
            [call("c2", "terminate", &json!({"status": "success"}))],
        ));
    let id = server.create("swe").await;
    let mut events = server.events(&id, None).await;
    server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "Remember the word quince"}),
        )
        .await;
    events.until(|e| e.event == "run_finished").await;
    let started = std::time::Instant::now();
    while server.hub.live_count() > 0 {
        assert!(
            started.elapsed() < PATIENCE,
            "the idle session was never closed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (_, health) = server.get("/api/health").await;
    assert_eq!(health["live_sessions"], 0, "{health}");
    // The next task brings it back with its memory.
    let (status, body) = server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "Which word?"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let seen = events.until(|e| e.event == "run_finished").await;
    assert_eq!(seen.last().unwrap().data["data"]["state"], "finished");
    let second = &server.mock.requests()[1];
    let texts: Vec<String> = second
        .messages()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("Remember the word quince")),
        "the resumed session kept the first task: {texts:?}"
    );
    server.mock.verify().unwrap();
    server.stop().await;
}
