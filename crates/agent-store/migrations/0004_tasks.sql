-- Tasks of the protocols a session is served over (A2A today), so that a task outlives the
-- process that ran it: `tasks/get` after a restart, the push notification settings of a task.
-- `body` is the task as the protocol writes it (JSON); the store reads only its columns.
CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    protocol    TEXT NOT NULL,              -- 'a2a'
    state       TEXT NOT NULL,              -- the protocol's word for it: 'working', 'completed', ...
    body        TEXT NOT NULL,              -- JSON
    push        TEXT NOT NULL DEFAULT '[]', -- JSON array: where to notify of its changes
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX tasks_by_session ON tasks (session_id, created_at);
