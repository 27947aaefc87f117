-- The session store: sessions, their runs, every event (the id is the SSE Last-Event-ID) and
-- every message of the agent's memory. Times are milliseconds since the Unix epoch.

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    agent       TEXT NOT NULL,               -- the agent kind (`manus`, `swe`, ...) or `flow`
    settings    TEXT NOT NULL DEFAULT '{}',  -- JSON: the overrides the session was created with
    workspace   TEXT NOT NULL,
    state       TEXT NOT NULL DEFAULT 'idle',
    title       TEXT NOT NULL DEFAULT '',    -- the first task, shortened
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id);

CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    task               TEXT NOT NULL,
    state              TEXT NOT NULL DEFAULT 'running',
    status             TEXT,               -- the outcome in words (`finished (special tool ...)`)
    answer             TEXT,               -- the final answer
    text               TEXT,               -- the result text (`Step 1: ...`)
    changes            TEXT,               -- JSON: files created, changed, deleted
    prompt_tokens      INTEGER NOT NULL DEFAULT 0,
    completion_tokens  INTEGER NOT NULL DEFAULT 0,
    owner              TEXT NOT NULL,      -- the process running it: `<pid>:<start time>`
    started_at         INTEGER NOT NULL,
    finished_at        INTEGER
);

CREATE INDEX runs_by_session ON runs (session_id, id);
CREATE INDEX runs_running ON runs (state) WHERE state = 'running';

CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id      INTEGER REFERENCES runs (id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    kind        TEXT NOT NULL,             -- `agent`, `flow`, `run_started`, `run_finished`
    data        TEXT NOT NULL              -- JSON
);

CREATE INDEX events_by_session ON events (session_id, id);
CREATE INDEX events_by_run ON events (run_id);

CREATE TABLE messages (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,          -- the order in memory
    message     TEXT NOT NULL,             -- JSON: an agent_core::Message
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
