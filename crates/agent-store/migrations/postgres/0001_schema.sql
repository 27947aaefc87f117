-- The session store on PostgreSQL: the schema SQLite's migrations 0001 to 0004 arrive at, in
-- PostgreSQL's types (every integer a BIGINT, as the store reads it). Times are milliseconds
-- since the Unix epoch. JSON columns are TEXT, not jsonb: the store's text references work on
-- the JSON exactly as written, and jsonb would rewrite it. A later change to the schema is a new
-- file here and one in the SQLite set.

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    agent       TEXT NOT NULL,               -- the agent kind (`manus`, `swe`, ...) or `flow`
    settings    TEXT NOT NULL DEFAULT '{}',  -- JSON: the overrides the session was created with
    workspace   TEXT NOT NULL,
    state       TEXT NOT NULL DEFAULT 'idle',
    title       TEXT NOT NULL DEFAULT '',    -- the first task, shortened
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id);

CREATE TABLE runs (
    id                    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id            TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    task                  TEXT NOT NULL,
    state                 TEXT NOT NULL DEFAULT 'running',
    status                TEXT,               -- the outcome in words
    answer                TEXT,               -- the final answer
    text                  TEXT,               -- the result text (`Step 1: ...`)
    changes               TEXT,               -- JSON: files created, changed, deleted
    prompt_tokens         BIGINT NOT NULL DEFAULT 0,
    completion_tokens     BIGINT NOT NULL DEFAULT 0,
    owner                 TEXT NOT NULL,      -- the process running it
    started_at            BIGINT NOT NULL,
    finished_at           BIGINT,
    cached_prompt_tokens  BIGINT NOT NULL DEFAULT 0,
    cost_usd              DOUBLE PRECISION,
    text_parts            TEXT                -- JSON array of strings whose concatenation is `text`
);

CREATE INDEX runs_by_session ON runs (session_id, id);
CREATE INDEX runs_running ON runs (state) WHERE state = 'running';

CREATE TABLE events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id      BIGINT REFERENCES runs (id) ON DELETE CASCADE,
    at          BIGINT NOT NULL,
    kind        TEXT NOT NULL,             -- `agent`, `flow`, `run_started`, `run_finished`
    data        TEXT NOT NULL,             -- JSON
    refs        BIGINT NOT NULL DEFAULT 0  -- 1: `data` may hold text references
);

CREATE INDEX events_by_session ON events (session_id, id);
CREATE INDEX events_by_run ON events (run_id);

CREATE TABLE messages (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,           -- the order in memory
    message     TEXT NOT NULL,             -- JSON: an agent_core::Message
    refs        BIGINT NOT NULL DEFAULT 0, -- 1: `message` may hold text references
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE texts (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    hash        BYTEA NOT NULL,            -- the first 16 bytes of the SHA-256 of `text`
    text        TEXT NOT NULL,             -- a JSON string literal's content, escaped as written
    UNIQUE (session_id, hash)
);

CREATE TABLE exchanges (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,           -- the request's number in the session
    part        BIGINT NOT NULL,           -- 0 the request, 1 its reply, 2 its error
    run_id      BIGINT,                    -- the run it belongs to
    stream      BIGINT NOT NULL,           -- the model that sent it
    at          BIGINT NOT NULL,
    data        TEXT NOT NULL,             -- JSON, long texts referenced
    UNIQUE (session_id, seq, part)
);

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    protocol    TEXT NOT NULL,              -- 'a2a'
    state       TEXT NOT NULL,              -- the protocol's word for it
    body        TEXT NOT NULL,              -- JSON
    push        TEXT NOT NULL DEFAULT '[]', -- JSON array: where to notify of its changes
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX tasks_by_session ON tasks (session_id, created_at);
