//! Every non-LLM section: absent, empty, partly set and fully set.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use agent_config::{
    AgentSettings, AutoTextReply, BrowserSettings, CompactionStrategy, DaytonaSettings,
    McpSettings, NextStepPromptMode, ObservationTruncation, RequestTrimming, RunflowSettings,
    SandboxSettings, SearchSettings, TrimPolicy,
};
use common::{LLM, parse, with_llm};

#[test]
fn a_file_with_only_llm_has_every_default() {
    let config = with_llm("");
    assert_eq!(config.browser, BrowserSettings::default());
    assert_eq!(config.search, SearchSettings::default());
    assert_eq!(config.sandbox, SandboxSettings::default());
    assert_eq!(config.daytona, None);
    assert_eq!(config.mcp, McpSettings::default());
    assert_eq!(config.runflow, RunflowSettings::default());
    assert_eq!(config.agent, AgentSettings::default());
}

#[test]
fn empty_sections_are_the_defaults_too() {
    let config = with_llm("[browser]\n[search]\n[sandbox]\n[mcp]\n[runflow]\n[agent]\n");
    assert_eq!(config.browser, BrowserSettings::default());
    assert_eq!(config.search, SearchSettings::default());
    assert_eq!(config.sandbox, SandboxSettings::default());
    assert_eq!(config.mcp, McpSettings::default());
    assert_eq!(config.runflow, RunflowSettings::default());
    assert_eq!(config.agent, AgentSettings::default());
}

#[test]
fn browser_defaults_and_values() {
    let d = BrowserSettings::default();
    // Ours on purpose (spec §13 W27, W31): a window only where a display can show it, security
    // on.
    assert_eq!(d.headless, None);
    let no_display =
        std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none();
    assert_eq!(d.is_headless(), no_display);
    assert!(!d.disable_security);
    assert!(d.extra_chromium_args.is_empty());
    assert_eq!(
        (&d.chrome_instance_path, &d.wss_url, &d.cdp_url),
        (&None, &None, &None)
    );
    assert_eq!(d.proxy, None);
    assert_eq!(d.max_content_length, 2000);

    let config = with_llm(
        "[browser]\nheadless = false\ndisable_security = true\n\
         extra_chromium_args = [\"--a\", \"--b\"]\nchrome_instance_path = \"/usr/bin/chromium\"\n\
         wss_url = \"\"\ncdp_url = \"http://127.0.0.1:9222\"\nmax_content_length = 5000\n",
    );
    let b = &config.browser;
    assert_eq!(b.headless, Some(false));
    assert!(!b.is_headless());
    assert!(b.disable_security);
    assert_eq!(b.extra_chromium_args, ["--a", "--b"]);
    assert_eq!(
        b.chrome_instance_path,
        Some(PathBuf::from("/usr/bin/chromium"))
    );
    assert_eq!(b.wss_url, None, "an empty string means unset");
    assert_eq!(b.cdp_url.as_deref(), Some("http://127.0.0.1:9222"));
    assert_eq!(b.max_content_length, 5000);
}

#[test]
fn browser_proxy_is_used_only_with_a_server() {
    let config = with_llm(
        "[browser.proxy]\nserver = \"http://proxy:3128\"\nusername = \"u\"\npassword = \"hunter2\"\n",
    );
    let proxy = config.browser.proxy.as_ref().unwrap();
    assert_eq!(proxy.server, "http://proxy:3128");
    assert_eq!(proxy.username.as_deref(), Some("u"));
    assert_eq!(proxy.password.as_deref(), Some("hunter2"));
    let debug = format!("{config:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    // The other browser keys keep their defaults.
    assert_eq!(config.browser.headless, None);

    let no_server = with_llm("[browser.proxy]\nusername = \"u\"\n");
    assert_eq!(no_server.browser.proxy, None);
    let empty_server = with_llm("[browser.proxy]\nserver = \"\"\n");
    assert_eq!(empty_server.browser.proxy, None);
}

#[test]
fn search_defaults_survive_a_missing_section_or_key() {
    let d = SearchSettings::default();
    assert_eq!(d.engine, "Google");
    assert_eq!(d.fallback_engines, ["DuckDuckGo", "Baidu", "Bing"]);
    assert_eq!(d.retry_delay, 60);
    assert_eq!(d.max_retries, 3);
    assert_eq!(d.lang, "en");
    assert_eq!(d.country, "us");

    let partial = with_llm("[search]\nlang = \"zh\"\n");
    assert_eq!(
        partial.search,
        SearchSettings {
            lang: "zh".into(),
            ..SearchSettings::default()
        }
    );

    let full = with_llm(
        "[search]\nengine = \"bing\"\nfallback_engines = []\nretry_delay = 0\nmax_retries = 1\n\
         lang = \"fr\"\ncountry = \"fr\"\n",
    );
    assert_eq!(
        full.search,
        SearchSettings {
            engine: "bing".into(),
            fallback_engines: vec![],
            retry_delay: 0,
            max_retries: 1,
            lang: "fr".into(),
            country: "fr".into(),
            ..SearchSettings::default()
        }
    );
}

#[test]
fn sandbox_defaults_are_openmanus_s() {
    let d = SandboxSettings::default();
    assert!(!d.use_sandbox);
    assert_eq!(d.image, "python:3.12-slim");
    assert_eq!(d.work_dir, "/workspace");
    assert_eq!(d.memory_limit, "512m");
    assert!((d.cpu_limit - 1.0).abs() < f64::EPSILON);
    assert_eq!(d.timeout, 300);
    assert!(!d.network_enabled);

    // An integer CPU limit is accepted as a float.
    let config = with_llm("[sandbox]\nuse_sandbox = true\nmemory_limit = \"1g\"\ncpu_limit = 2\n");
    assert_eq!(
        config.sandbox,
        SandboxSettings {
            use_sandbox: true,
            memory_limit: "1g".into(),
            cpu_limit: 2.0,
            ..SandboxSettings::default()
        }
    );
}

#[test]
fn daytona_is_optional_and_defaults_its_keys() {
    assert!(with_llm("").daytona.is_none());

    let empty = with_llm("[daytona]\n");
    assert_eq!(empty.daytona, Some(DaytonaSettings::default()));

    let d = DaytonaSettings::default();
    assert!(d.daytona_api_key.is_empty());
    assert_eq!(d.daytona_server_url, "https://app.daytona.io/api");
    assert_eq!(d.daytona_target, "us");
    assert_eq!(d.sandbox_image_name, "whitezxj/sandbox:0.1.0");
    assert_eq!(
        d.sandbox_entrypoint,
        "/usr/bin/supervisord -n -c /etc/supervisor/conf.d/supervisord.conf"
    );
    assert_eq!(d.vnc_password, None);

    let set = with_llm(
        "[daytona]\ndaytona_api_key = \"dtn-1\"\nVNC_password = \"pw\"\ndaytona_target = \"eu\"\n",
    );
    let daytona = set.daytona.as_ref().unwrap();
    assert_eq!(daytona.daytona_api_key.expose(), "dtn-1");
    assert_eq!(daytona.vnc_password.as_deref(), Some("pw"));
    assert_eq!(daytona.daytona_target, "eu");
    assert!(!format!("{set:?}").contains("dtn-1"));
}

#[test]
fn mcp_and_runflow() {
    let d = with_llm("");
    assert_eq!(d.mcp.server_reference, "app.mcp.server");
    assert!(d.mcp.servers.is_empty());
    assert!(!d.runflow.use_data_analysis_agent);
    assert_eq!(d.runflow.max_step_retries, 1);
    assert_eq!(d.runflow.timeout_secs, 3600);

    let set = with_llm(
        "[mcp]\nserver_reference = \"my.server\"\n[runflow]\nuse_data_analysis_agent = true\n\
         max_step_retries = 0\ntimeout_secs = 60\n",
    );
    assert_eq!(set.mcp.server_reference, "my.server");
    assert_eq!(
        set.runflow,
        RunflowSettings {
            use_data_analysis_agent: true,
            max_step_retries: 0,
            timeout_secs: 60,
        }
    );
}

#[test]
fn agent_defaults_and_every_policy_value() {
    let d = AgentSettings::default();
    assert_eq!(d.max_steps, None);
    assert_eq!(d.max_observe, None);
    assert_eq!(d.next_step_prompt, NextStepPromptMode::Ephemeral);
    assert_eq!(d.observation_truncation, ObservationTruncation::HeadAndTail);
    assert_eq!(d.auto_text_reply, AutoTextReply::KeepLooping);
    assert_eq!(d.workspace_root, PathBuf::from("workspace"));
    assert_eq!(d.max_observation_bytes, 128 * 1024);
    assert_eq!(with_llm("").workspace_root(), PathBuf::from("workspace"));

    let openmanus = with_llm(
        "[agent]\nmax_steps = 50\nmax_observe = 0\nnext_step_prompt = \"append\"\n\
         observation_truncation = \"cut\"\nauto_text_reply = \"finish\"\n\
         workspace_root = \"/srv/ws\"\nmax_observation_bytes = 0\nmax_run_tokens = 50000\n\
         max_run_cost = 0.5\nmax_run_seconds = 600\ncompaction = \"off\"\n\
         compaction_threshold = 0.7\ncompaction_keep_turns = 6\nsummary_llm = \"cheap\"\n\
         request_trimming = \"openmanus\"\n",
    );
    assert_eq!(
        openmanus.agent,
        AgentSettings {
            max_steps: Some(50),
            max_observe: Some(0),
            next_step_prompt: NextStepPromptMode::AppendToMemory,
            observation_truncation: ObservationTruncation::Cut,
            auto_text_reply: AutoTextReply::Finish,
            max_observation_bytes: 0,
            workspace_root: PathBuf::from("/srv/ws"),
            tool_env_deny: Vec::new(),
            tool_env_allow: Vec::new(),
            max_run_tokens: Some(50_000),
            max_run_cost: Some(0.5),
            max_run_seconds: Some(600),
            compaction: CompactionStrategy::Off,
            compaction_threshold: 0.7,
            compaction_keep_turns: 6,
            summary_llm: Some("cheap".to_owned()),
            request_trimming: RequestTrimming::OPENMANUS,
        }
    );
    assert_eq!(d.compaction, CompactionStrategy::Summary);
    assert!((d.compaction_threshold - 0.8).abs() < f64::EPSILON);
    assert_eq!((d.max_run_tokens, d.max_run_seconds), (None, None));
    let ours = with_llm(
        "[agent]\nnext_step_prompt = \"ephemeral\"\nobservation_truncation = \"head_and_tail\"\n\
         auto_text_reply = \"keep_looping\"\n",
    );
    assert_eq!(ours.agent, AgentSettings::default());
}

#[test]
fn request_trimming_is_a_preset_or_a_list_of_named_policies() {
    assert_eq!(with_llm("").agent.request_trimming, RequestTrimming::LEAN);
    let lean = with_llm("[agent]\nrequest_trimming = \"lean\"\n")
        .agent
        .request_trimming;
    assert!(TrimPolicy::ALL.iter().all(|p| lean.contains(*p)));
    let off = with_llm("[agent]\nrequest_trimming = \"openmanus\"\n")
        .agent
        .request_trimming;
    assert!(off.is_off());
    let some = with_llm("[agent]\nrequest_trimming = [\"old_images\", \"repeated_outputs\"]\n")
        .agent
        .request_trimming;
    assert_eq!(
        some.policies().collect::<Vec<_>>(),
        [TrimPolicy::OldImages, TrimPolicy::RepeatedOutputs]
    );
    assert!(
        with_llm("[agent]\nrequest_trimming = []\n")
            .agent
            .request_trimming
            .is_off()
    );
    let error = parse(&format!("{LLM}[agent]\nrequest_trimming = \"tiny\"\n"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("agent.request_trimming"), "{error}");
    assert!(error.contains("\"lean\", \"openmanus\""), "{error}");
    let error = parse(&format!(
        "{LLM}[agent]\nrequest_trimming = [\"old_pictures\"]\n"
    ))
    .unwrap_err()
    .to_string();
    // Like every configuration error: the key and what it accepts, never the value given.
    assert!(error.contains("agent.request_trimming"), "{error}");
    assert!(error.contains("superseded_file_views"), "{error}");
    assert!(!error.contains("old_pictures"), "{error}");
}

#[test]
fn the_sections_may_come_in_any_order() {
    let config = parse(&format!(
        "[search]\nlang = \"de\"\n\n{LLM}\n[agent]\nmax_steps = 3\n"
    ))
    .unwrap();
    assert_eq!(config.search.lang, "de");
    assert_eq!(config.agent.max_steps, Some(3));
    assert_eq!(config.default_llm().model, "gpt-4o");
}

#[test]
fn env_references_work_in_every_section() {
    let config = common::loader_with(&[("PW", "s3cret"), ("WS", "/tmp/ws")])
        .parse_str(&format!(
            "{LLM}[browser.proxy]\nserver = \"http://p\"\npassword = \"${{PW}}\"\n\
             [agent]\nworkspace_root = \"${{WS}}\"\n"
        ))
        .unwrap();
    assert_eq!(
        config.browser.proxy.unwrap().password.as_deref(),
        Some("s3cret")
    );
    assert_eq!(config.agent.workspace_root, PathBuf::from("/tmp/ws"));
}
