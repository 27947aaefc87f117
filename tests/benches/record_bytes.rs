//! What the release `openmanus` binary writes to record a run (`cargo xtask bench`): the SWE
//! agent against the test kit's mock model on 127.0.0.1, viewing a 40-line file once per step,
//! in a 10-step and a 40-step run (the scenario of issue #31 and `docs/design/one-record.md`).
//!
//! Per added step, (40-step − 10-step) / 30:
//!
//! * with the session store (the default): the bytes of `sessions.db` and its `-wal` after the
//!   process exits, the JSONL journal's bytes if one is written, and what they are made of (the
//!   payload bytes of each table's columns, of each event type, of each journal line kind);
//! * with `--no-store`: the journal's bytes.
//!
//! `cargo xtask bench` builds the release binary and passes its path in `OPENMANUS_BIN`.
//! Figures only — nothing here passes or fails.

#![allow(clippy::print_stdout, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi};
use sqlx::{Connection, Row, SqliteConnection};

/// The two run lengths; per added step is their difference divided by the steps between.
const SHORT: usize = 10;
const LONG: usize = 40;

/// What one run left behind, in bytes.
#[derive(Default)]
struct Written {
    /// `sessions.db` + `sessions.db-wal` (+ `-shm` is not data and is left out).
    store: u64,
    /// `sessions.db-wal` alone (what is not checkpointed into the database yet).
    wal: u64,
    /// Every `.jsonl` under `.openmanus/runs`.
    journal: u64,
    /// Payload bytes by `table` and by `events:<type>`.
    payload: BTreeMap<String, u64>,
    /// Journal bytes by line kind (`kind`, or `event:<type>`).
    lines: BTreeMap<String, u64>,
}

struct Setup {
    server: MockOpenAi,
    dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Setup {
    /// Runs the binary for `steps` steps in a fresh workspace and measures what it wrote.
    async fn run(&self, steps: usize, store: bool) -> Option<Written> {
        let ws = self.dir.path().join(format!(
            "ws-{steps}-{}",
            if store { "store" } else { "nostore" }
        ));
        std::fs::create_dir_all(&ws).ok()?;
        let notes = ws.join("notes.txt");
        let text: String = (1..=40).map(|i| format!("item {i:02}\n")).collect();
        std::fs::write(&notes, text).ok()?;
        let view = serde_json::json!({"command": "view", "path": notes}).to_string();
        for step in 1..steps {
            self.server.push(
                Completion::tool_calls(
                    None,
                    [ToolCall::new(
                        format!("v{step}"),
                        "str_replace_editor",
                        view.clone(),
                    )],
                )
                .with_usage(1000 + 50 * step as u64, 20),
            );
        }
        self.server.push(Completion::tool_calls(
            None,
            [ToolCall::new(
                "done",
                "terminate",
                r#"{"status":"success"}"#,
            )],
        ));
        let requests = self.server.request_count();
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let mut command = Command::new(&self.bin);
        command
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .args(["--config", &path(&self.dir.path().join("config.toml"))])
            .args(["--workspace", &path(&ws), "--agent", "swe", "-q"])
            .args(["--prompt", "view notes.txt repeatedly"]);
        if !store {
            command.arg("--no-store");
        }
        let status = command.status().ok()?;
        if !status.success() || self.server.request_count() != requests + steps {
            return None;
        }
        written(&ws.join(".openmanus")).await
    }
}

/// What a run left in `dir` (its `.openmanus`).
async fn written(dir: &Path) -> Option<Written> {
    let mut written = Written::default();
    let size = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    written.wal = size(dir.join("sessions.db-wal"));
    written.store = size(dir.join("sessions.db")) + written.wal;
    if let Ok(entries) = std::fs::read_dir(dir.join("runs")) {
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).ok()?;
            written.journal += text.len() as u64;
            for line in text.lines() {
                let value: serde_json::Value = serde_json::from_str(line).ok()?;
                let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("?");
                let kind = match value.pointer("/event/type").and_then(|t| t.as_str()) {
                    Some(event) => format!("{kind}:{event}"),
                    None => kind.to_owned(),
                };
                *written.lines.entry(kind).or_default() += line.len() as u64 + 1;
            }
        }
    }
    if written.store > 0 {
        let url = format!("sqlite://{}?mode=ro", dir.join("sessions.db").display());
        let mut db = SqliteConnection::connect(&url).await.ok()?;
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%'",
        )
        .fetch_all(&mut db)
        .await
        .ok()?;
        for table in tables {
            let columns: Vec<String> =
                sqlx::query_scalar(&format!("SELECT name FROM pragma_table_info('{table}')"))
                    .fetch_all(&mut db)
                    .await
                    .ok()?;
            let sum = columns
                .iter()
                .map(|c| format!("COALESCE(length(\"{c}\"), 0)"))
                .collect::<Vec<_>>()
                .join(" + ");
            let bytes: i64 =
                sqlx::query_scalar(&format!("SELECT COALESCE(SUM({sum}), 0) FROM \"{table}\""))
                    .fetch_one(&mut db)
                    .await
                    .ok()?;
            written.payload.insert(table, bytes as u64);
        }
        let rows = sqlx::query(
            "SELECT kind || ':' || COALESCE(json_extract(data, '$.type'), '') AS k, \
             SUM(length(data)) AS n FROM events GROUP BY k",
        )
        .fetch_all(&mut db)
        .await
        .ok()?;
        for row in rows {
            let kind: String = row.try_get("k").ok()?;
            let bytes: i64 = row.try_get("n").ok()?;
            written
                .payload
                .insert(format!("events {kind}"), bytes as u64);
        }
    }
    Some(written)
}

/// Per added step, the difference of `long` and `short` over the steps between.
fn per_step(short: u64, long: u64) -> f64 {
    (long as f64 - short as f64) / (LONG - SHORT) as f64
}

fn print_map(title: &str, short: &BTreeMap<String, u64>, long: &BTreeMap<String, u64>) {
    if long.is_empty() {
        return;
    }
    println!("  {title}, bytes per added step:");
    for (key, bytes) in long {
        let before = short.get(key).copied().unwrap_or(0);
        println!("    {key:<40} {:>8.0}", per_step(before, *bytes));
    }
}

mod common;

fn main() {
    common::run("record_bytes", measure);
}

async fn measure(bin: PathBuf) -> Result<(), String> {
    let server = MockOpenAi::start()
        .await
        .map_err(|e| format!("the mock server: {e}"))?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n\n\
         [agent]\nmax_steps = 60\n",
        server.base_url()
    );
    std::fs::write(dir.path().join("config.toml"), config).map_err(|e| e.to_string())?;
    let setup = Setup { server, dir, bin };
    println!(
        "record_bytes: what the release binary writes per added step (SWE, a 40-line file \
         viewed each step, {SHORT} → {LONG} steps)"
    );
    for store in [true, false] {
        let (Some(short), Some(long)) =
            (setup.run(SHORT, store).await, setup.run(LONG, store).await)
        else {
            return Err("a run of the binary failed".into());
        };
        let mode = if store {
            "with the store"
        } else {
            "--no-store"
        };
        let store_step = per_step(short.store, long.store);
        let journal_step = per_step(short.journal, long.journal);
        println!(
            "{mode}: store {store_step:.0} B + journal {journal_step:.0} B = {:.0} B per \
             added step ({LONG}-step run: {} B in all, {:.0} B per step)",
            store_step + journal_step,
            long.store + long.journal,
            (long.store + long.journal) as f64 / LONG as f64,
        );
        if store {
            println!(
                "  of which the WAL: {:.0} B per added step ({} B after the {LONG}-step run)",
                per_step(short.wal, long.wal),
                long.wal
            );
        }
        print_map("store payload", &short.payload, &long.payload);
        print_map("journal lines", &short.lines, &long.lines);
    }
    if let Err(violations) = setup.server.verify() {
        println!("record_bytes: the binary's requests broke the OpenAI rules: {violations}");
    }
    Ok(())
}
