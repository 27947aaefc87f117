-- One record of a run (#31): long texts stored once per session, the model exchanges beside the
-- events, and a run's result text kept as parts. Rows written before this migration have
-- refs = 0 and are read as they are; the migration rewrites no row.
-- Tables with a rowid: their rows are long, and a WITHOUT ROWID table keeps less than a quarter
-- of a page of a row in the tree, putting the rest on overflow pages of their own.
CREATE TABLE texts (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    hash        BLOB NOT NULL,              -- the first 16 bytes of the SHA-256 of `text`
    text        TEXT NOT NULL,              -- a JSON string literal's content, escaped as written
    UNIQUE (session_id, hash)
);

CREATE TABLE exchanges (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,           -- the request's number in the session: 0, 1, ... across resumes
    part        INTEGER NOT NULL,           -- 0 the request, 1 its reply, 2 its error
    run_id      INTEGER,                    -- the run it belongs to (runs go with their session)
    stream      INTEGER NOT NULL,           -- the model that sent it: a request is a change from its stream's previous one
    at          INTEGER NOT NULL,
    data        TEXT NOT NULL,              -- JSON, long texts referenced
    UNIQUE (session_id, seq, part)
);

ALTER TABLE events ADD COLUMN refs INTEGER NOT NULL DEFAULT 0;    -- 1: `data` may hold text references
ALTER TABLE messages ADD COLUMN refs INTEGER NOT NULL DEFAULT 0;  -- 1: `message` may hold text references
ALTER TABLE runs ADD COLUMN text_parts TEXT;                      -- JSON array of strings whose concatenation is `text`, references allowed
