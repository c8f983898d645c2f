"""Schema and ordered migrations.

The file records its version in ``schema_version``. Opening an older file applies the missing migrations in
one ``BEGIN IMMEDIATE`` transaction (so concurrent first opens create the schema exactly once); a file newer
than this code is refused with :class:`~agentbase.errors.SchemaVersionError`.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE entries (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    context_type TEXT NOT NULL DEFAULT 'memory',
    category TEXT NOT NULL DEFAULT 'fact',
    l0_abstract TEXT NOT NULL DEFAULT '',
    l1_overview TEXT NOT NULL DEFAULT '',
    l2_full TEXT NOT NULL,
    fts_text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    metadata TEXT NOT NULL DEFAULT '{}',
    scope TEXT NOT NULL DEFAULT 'global',
    user_id TEXT, agent_id TEXT, project_id TEXT, session_id TEXT,
    confidence REAL NOT NULL DEFAULT 1.0,
    importance REAL NOT NULL DEFAULT 0.5,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    event_time TEXT,
    content_hash TEXT NOT NULL,
    fact_key TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    superseded_by TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    uri TEXT, mime_type TEXT, name TEXT, description TEXT
);
CREATE INDEX ix_entries_user ON entries(user_id);
CREATE INDEX ix_entries_agent ON entries(agent_id);
CREATE INDEX ix_entries_session ON entries(session_id);
CREATE INDEX ix_entries_hash ON entries(content_hash);
CREATE INDEX ix_entries_type ON entries(context_type, category);
CREATE INDEX ix_entries_time ON entries(COALESCE(event_time, created_at));
CREATE INDEX ix_entries_fact_key ON entries(fact_key) WHERE fact_key IS NOT NULL;

CREATE TABLE entry_tags (
    rid INTEGER NOT NULL REFERENCES entries(rid) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (tag, rid)
) WITHOUT ROWID;
CREATE INDEX ix_entry_tags_rid ON entry_tags(rid);

CREATE VIRTUAL TABLE entries_fts USING fts5(
    fts_text, content='entries', content_rowid='rid', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER entries_fts_ai AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts(rowid, fts_text) VALUES (new.rid, new.fts_text);
END;
CREATE TRIGGER entries_fts_ad AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, fts_text) VALUES ('delete', old.rid, old.fts_text);
END;
CREATE TRIGGER entries_fts_au AFTER UPDATE OF fts_text ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, fts_text) VALUES ('delete', old.rid, old.fts_text);
    INSERT INTO entries_fts(rowid, fts_text) VALUES (new.rid, new.fts_text);
END;

CREATE TABLE entry_history (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    entry_id TEXT NOT NULL,
    event TEXT NOT NULL CHECK (event IN ('ADD', 'UPDATE', 'DELETE')),
    old_value TEXT,
    new_value TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
CREATE INDEX ix_history_entry ON entry_history(entry_id);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT, agent_id TEXT, project_id TEXT,
    status TEXT NOT NULL DEFAULT 'open',
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    committed_seq INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX ix_sessions_user ON sessions(user_id);

CREATE TABLE messages (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    name TEXT,
    tool_calls TEXT,
    tool_call_id TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE TABLE session_memory_links (
    session_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    message_seq INTEGER,
    PRIMARY KEY (session_id, entry_id)
) WITHOUT ROWID;
CREATE INDEX ix_links_entry ON session_memory_links(entry_id);

CREATE TABLE embeddings (
    rid INTEGER PRIMARY KEY REFERENCES entries(rid) ON DELETE CASCADE,
    model_id TEXT NOT NULL,
    dims INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE embedding_cache (
    model_id TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    dims INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_hash)
) WITHOUT ROWID;

CREATE TABLE jobs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'done', 'failed', 'deferred')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_run_at TEXT NOT NULL,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (kind, target)
);
CREATE INDEX ix_jobs_due ON jobs(status, next_run_at);

CREATE TABLE retrieval_traces (
    id TEXT PRIMARY KEY,
    query TEXT NOT NULL,
    params TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    total_ms REAL NOT NULL,
    result_ids TEXT NOT NULL DEFAULT '[]',
    degrade_reason TEXT
);
CREATE TABLE trace_steps (
    trace_id TEXT NOT NULL REFERENCES retrieval_traces(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    name TEXT NOT NULL,
    latency_ms REAL NOT NULL,
    candidates_in INTEGER NOT NULL DEFAULT 0,
    candidates_out INTEGER NOT NULL DEFAULT 0,
    details TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (trace_id, idx)
) WITHOUT ROWID;
"""

# Version 2: the temporal entity graph (entities with aliases; relations with validity intervals).
_V2 = """
CREATE TABLE entities (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    norm_name TEXT NOT NULL UNIQUE,
    type TEXT,
    aliases TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL
);
CREATE TABLE relations (
    id TEXT PRIMARY KEY,
    subject_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    predicate TEXT NOT NULL,
    object_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    valid_from TEXT,
    valid_to TEXT,
    source_entry_id TEXT,
    confidence REAL NOT NULL DEFAULT 1.0,
    created_at TEXT NOT NULL
);
CREATE INDEX ix_relations_subject ON relations(subject_id, predicate);
CREATE INDEX ix_relations_object ON relations(object_id);
"""

# Version 3: entity alias index (case- and alias-insensitive merging), skill folder files, agent heartbeats.
_V3 = """
CREATE TABLE entity_aliases (
    norm_alias TEXT PRIMARY KEY,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX ix_entity_aliases_entity ON entity_aliases(entity_id);
INSERT OR IGNORE INTO entity_aliases(norm_alias, entity_id) SELECT norm_name, id FROM entities;
CREATE INDEX ix_relations_source ON relations(source_entry_id);
CREATE INDEX ix_relations_object_pred ON relations(object_id, predicate);
CREATE TABLE skill_files (
    skill_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    content TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (skill_id, path)
) WITHOUT ROWID;
CREATE INDEX ix_entries_skill_name ON entries(name) WHERE context_type = 'skill';
CREATE TABLE agent_heartbeats (
    session_id TEXT PRIMARY KEY,
    agent_id TEXT,
    project_id TEXT,
    task TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    started_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL
);
CREATE INDEX ix_heartbeats_project ON agent_heartbeats(project_id, last_seen_at);
"""

# Version 4: a log of changed embedding rows, so in-process vector matrices (index/matrix.py) in any process can
# catch up with writes made through other connections by re-reading only the changed rows.
_V4 = """
CREATE TABLE vector_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    rid INTEGER NOT NULL
);
CREATE TRIGGER embeddings_log_ai AFTER INSERT ON embeddings BEGIN
    INSERT INTO vector_log(rid) VALUES (new.rid);
END;
CREATE TRIGGER embeddings_log_au AFTER UPDATE ON embeddings BEGIN
    INSERT INTO vector_log(rid) VALUES (new.rid);
END;
CREATE TRIGGER embeddings_log_ad AFTER DELETE ON embeddings BEGIN
    INSERT INTO vector_log(rid) VALUES (old.rid);
END;
"""

# Version 5: keyword text is NFKC-folded (index/fts.py ``fold``): recompute ``fts_text`` where folding changes it
# (fullwidth Latin, halfwidth katakana, ligatures, ...); the update trigger re-indexes those rows. The function is
# registered on the writer connection by storage/sqlite/connection.py.
_V5 = """
UPDATE entries SET fts_text = agentbase_fts_source(name, description, l2_full, tags)
WHERE fts_text IS NOT agentbase_fts_source(name, description, l2_full, tags);
"""

# Version 6: stored values whose rules changed without a migration (found by opening files of older versions):
# - a named speaker's profile fact is keyed "<name casefolded>|<key>" (Ann's city no longer replaces Bob's); old
#   keys get the speaker of the message that stated the fact (from the message, or from the turn entry written
#   from it when the message was cleared), and a fact that an old key collision marked superseded by a fact of
#   another key is active again;
# - content hashes follow the current normalisation (a trailing symbol or combining mark is content), so the
#   duplicate check finds old entries again;
# - profile facts carry the description of what they answer (a keyword key; their vectors follow on reindex);
# - entity tags are re-normalised (typographic apostrophes written as ').
# Keyword text is then recomputed where a description or tag changed it. The functions are in storage/sqlite/sqlfuncs.py.
_V6 = """
CREATE TEMP TABLE v6_speaker (message_id TEXT PRIMARY KEY, name TEXT NOT NULL);
INSERT OR IGNORE INTO v6_speaker(message_id, name)
SELECT id, name FROM messages WHERE name IS NOT NULL AND name != '';
INSERT OR IGNORE INTO v6_speaker(message_id, name)
SELECT json_extract(metadata, '$.message_id'), json_extract(metadata, '$.speaker') FROM entries
WHERE category = 'turn' AND json_type(metadata, '$.message_id') = 'text' AND json_type(metadata, '$.speaker') = 'text'
AND json_extract(metadata, '$.speaker') != '';
UPDATE entries SET fact_key = agentbase_casefold(s.name) || '|' || entries.fact_key FROM v6_speaker s
WHERE entries.fact_key IS NOT NULL AND instr(entries.fact_key, '|') = 0
AND s.message_id = json_extract(entries.metadata, '$.message_id');
DROP TABLE v6_speaker;
UPDATE entries SET superseded_by = NULL
WHERE superseded_by IS NOT NULL AND fact_key IS NOT NULL
AND fact_key IS NOT (SELECT n.fact_key FROM entries n WHERE n.id = entries.superseded_by)
AND (SELECT n.fact_key FROM entries n WHERE n.id = entries.superseded_by) IS NOT NULL;
UPDATE entries SET content_hash = agentbase_content_hash(l2_full)
WHERE agentbase_content_hash(l2_full) IS NOT NULL AND content_hash IS NOT agentbase_content_hash(l2_full);
UPDATE entries SET description = agentbase_key_description(fact_key)
WHERE description IS NULL AND agentbase_key_description(fact_key) IS NOT NULL;
CREATE TEMP TABLE v6_retag (rid INTEGER PRIMARY KEY);
INSERT INTO v6_retag(rid) SELECT rid FROM entries
WHERE agentbase_ner_tags(tags) IS NOT NULL AND tags IS NOT agentbase_ner_tags(tags);
UPDATE entries SET tags = agentbase_ner_tags(tags) WHERE rid IN (SELECT rid FROM v6_retag);
DELETE FROM entry_tags WHERE rid IN (SELECT rid FROM v6_retag);
INSERT OR IGNORE INTO entry_tags(rid, tag)
SELECT e.rid, j.value FROM entries e, json_each(e.tags) j WHERE e.rid IN (SELECT rid FROM v6_retag);
DROP TABLE v6_retag;
UPDATE entries SET fts_text = agentbase_fts_source(name, description, l2_full, tags)
WHERE fts_text IS NOT agentbase_fts_source(name, description, l2_full, tags);
"""

# v7: sessions.enriched_seq, the last message whose facts, entity tags, relations and summary are written
# (``commit_session(wait=False)`` queues that part as an ``enrich`` job); every earlier commit did it inline.
# The partial index holds only sessions with queued work, so the checks that run before every waiting commit and
# entry edit read a few rows, not the whole sessions table.
_V7 = """
ALTER TABLE sessions ADD COLUMN enriched_seq INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET enriched_seq = committed_seq;
CREATE INDEX ix_sessions_pending ON sessions(user_id, agent_id, project_id) WHERE enriched_seq < committed_seq;
"""

# v8: a session's turn links in message order. find()'s neighbours step (retrieval/pipeline.py) reads the next
# turns after each of its best turns; with only the (session_id, entry_id) key every lookup scanned all the
# session's links: 9 ms per find() in a session of 10,000 turns, 36 ms at 40,000 (a helper's measurement).
_V8 = """
CREATE INDEX ix_links_turn_seq ON session_memory_links(session_id, message_seq) WHERE kind = 'turn';
"""

# v9: messages.committed, set when a commit has read the message. A replace (``replace_messages``: LlamaIndex
# ``set_messages`` or an insert at a position) renumbers the messages it keeps past the commit watermark; the
# flag goes with a kept message (unless its text changed), so the next commit skips it instead of storing its
# turn and facts again, or bringing back memories the user deleted since.
_V9 = """
ALTER TABLE messages ADD COLUMN committed INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET committed = 1
WHERE seq <= (SELECT s.committed_seq FROM sessions s WHERE s.id = messages.session_id);
"""

# v10: LangGraph-style checkpoints (storage/sqlite/checkpoints.py, the LangGraph checkpointer adapter): graph-state
# snapshots, one row per channel value version, and pending writes. Separate tables, not entries, so checkpoints
# never reach find(), the keyword index or the vector index. run_id is copied out of the metadata for
# delete_checkpoint_runs; channel_versions (a JSON object of version strings) lets a delete find the channel values
# no remaining checkpoint points at.
_V10 = """
CREATE TABLE checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT NOT NULL,
    checkpoint BLOB NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    channel_versions TEXT NOT NULL DEFAULT '{}',
    run_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;
CREATE INDEX ix_checkpoints_run ON checkpoints(run_id) WHERE run_id IS NOT NULL;
CREATE INDEX ix_checkpoints_id ON checkpoints(checkpoint_id);
CREATE TABLE checkpoint_blobs (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
) WITHOUT ROWID;
CREATE TABLE checkpoint_writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT NOT NULL,
    value BLOB NOT NULL,
    task_path TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
"""

# v11: a partial index of the superseded keyed facts, for the read of every superseded fact of an owner that find()
# made on each query (74 ms of one user's 100k entries without it, 1.9 ms with it; with it still 107 ms at 1M).
# find() now reads only the candidates' sessions' fact links (retrieval.superseded_fact_links), so no statement
# needs the index any more (both engines' planners even preferred it to a better plan, which those statements now
# pin), so version 12 drops it. The PostgreSQL engine's v11 adds the same index and its keyword_terms table
# (storage/postgres/schema.py).
_V11 = """
CREATE INDEX ix_entries_superseded_facts ON entries(user_id) WHERE fact_key IS NOT NULL AND superseded_by IS NOT NULL;
"""

# v12: the superseded-facts index of v11 goes (no statement reads it). The PostgreSQL engine's v12 also keeps each
# entry's tsvector in its heap row (storage/postgres/schema.py).
_V12 = """
DROP INDEX IF EXISTS ix_entries_superseded_facts;
"""

MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10, _V11, _V12]
SCHEMA_VERSION = len(MIGRATIONS)
