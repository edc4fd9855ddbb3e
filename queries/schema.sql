-- warprace findings database, schema version 3.
-- Written by `warprace analyze` (analyzer/store_sqlite.c), read by `raceq`.
-- A run row is inserted with status 'running' inside the same transaction
-- that writes its races and is committed with status 'complete': an
-- interrupted analysis leaves either nothing or a row marked 'running'/'failed',
-- never a half-written run that looks complete.
-- Versioning: PRAGMA user_version holds the schema version; meta holds the
-- application id.  A reader refuses another version with a message naming both.
-- Versions: 1 (the first); 2 (2026-11-27) adds launches.site; 3 (2026-11-27)
-- adds launches.analysed.  `warprace analyze` upgrades an older database in
-- place when it writes to it (analyzer/store_sqlite.c, upgrade_sql: ALTER
-- TABLE launches ADD COLUMN ...), and raceq reads one as it is (its launches
-- have no site and were all analysed).
PRAGMA user_version = 3;

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT OR IGNORE INTO meta(key, value) VALUES ('application', 'warprace'),
                                             ('schema_version', '3');

CREATE TABLE IF NOT EXISTS runs (
    id               INTEGER PRIMARY KEY,
    name             TEXT NOT NULL,            -- --name, default: trace file name
    status           TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
    started_at       TEXT NOT NULL,            -- ISO-8601 UTC
    finished_at      TEXT,
    analyzer_version TEXT NOT NULL,
    trace_path       TEXT NOT NULL,
    trace_hash       TEXT NOT NULL,            -- hex digest of the trace file bytes
    trace_bytes      INTEGER NOT NULL,
    device           TEXT NOT NULL DEFAULT '',
    sm_arch          INTEGER NOT NULL DEFAULT 0,
    producer         TEXT NOT NULL DEFAULT '',
    recorded_command TEXT NOT NULL DEFAULT '',
    engines          TEXT NOT NULL,            -- comma-separated, in table order
    threads          INTEGER NOT NULL,
    options          TEXT NOT NULL DEFAULT '', -- the analyze command line options
    events           INTEGER NOT NULL DEFAULT 0,
    accesses         INTEGER NOT NULL DEFAULT 0,  -- warp-level access records
    thread_accesses  INTEGER NOT NULL DEFAULT 0,  -- sum of active lanes
    launches         INTEGER NOT NULL DEFAULT 0,
    lost_events      INTEGER NOT NULL DEFAULT 0,
    truncated        INTEGER NOT NULL DEFAULT 0,  -- trace ended without footer / mid-chunk
    decode_seconds   REAL,
    wall_seconds     REAL,
    peak_rss_bytes   INTEGER
);

CREATE TABLE IF NOT EXISTS engine_runs (
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    engine       TEXT NOT NULL,
    seconds      REAL NOT NULL,      -- CPU time of this engine's pass (all shards); vc and
                                     -- scoped share one pass and show its time
    shadow_words INTEGER NOT NULL,   -- distinct words tracked
    races        INTEGER NOT NULL,   -- distinct race identities
    occurrences  INTEGER NOT NULL,   -- sum of counts
    PRIMARY KEY (run_id, engine)
);

CREATE TABLE IF NOT EXISTS launches (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    launch        INTEGER NOT NULL,
    kernel        TEXT NOT NULL,
    grid          TEXT NOT NULL,     -- "x,y,z"
    block         TEXT NOT NULL,
    shared_bytes  INTEGER NOT NULL,
    stream        INTEGER NOT NULL,  -- the recorder's id: 0 legacy default, >= 2^31 non-blocking (FORMAT.md)
    site          TEXT NOT NULL DEFAULT '',  -- where the host launched it (file:line:function); '' unknown (v2)
    analysed      INTEGER NOT NULL DEFAULT 1, -- 0: left out by --kernels, its races not looked for (v3)
    PRIMARY KEY (run_id, launch)
);

CREATE TABLE IF NOT EXISTS allocations (
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    alloc_id INTEGER NOT NULL,
    name     TEXT NOT NULL,
    space    TEXT NOT NULL,          -- global, shared, local
    base     INTEGER NOT NULL,
    size     INTEGER NOT NULL,
    PRIMARY KEY (run_id, alloc_id)
);

-- One row per race identity per engine per run.
CREATE TABLE IF NOT EXISTS races (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    engine        TEXT NOT NULL,     -- vc, scoped, lockset, fsm
    -- engine-independent stable identity (no addresses):
    -- kernel_a|kernel_b|key_a|key_b|kind_a|kind_b|race_class joined by '|',
    -- a site's key being "file base name:line" (else its site_ text), so that
    -- both recording paths (device API, Compute Sanitizer) name a race alike
    identity      TEXT NOT NULL,
    kernel_a      TEXT NOT NULL,     -- kernel name, or 'host' for a host copy
    kernel_b      TEXT NOT NULL,
    site_a        TEXT NOT NULL,     -- "file:line:function", or "pc:0x..." or "?"
    site_b        TEXT NOT NULL,
    kind_a        TEXT NOT NULL CHECK (kind_a IN ('read', 'write', 'atomic')),
    kind_b        TEXT NOT NULL CHECK (kind_b IN ('read', 'write', 'atomic')),
    race_class    TEXT NOT NULL CHECK (race_class IN
                    ('intra-warp', 'inter-warp', 'inter-block', 'inter-kernel')),
    scope_verdict TEXT NOT NULL DEFAULT '',  -- scoped engine: missing-sync,
                                             -- scope-fence, scope-atomic,
                                             -- scope-lock, weak-access
    potential     INTEGER NOT NULL DEFAULT 0, -- lockset: not exposed by this
                                              -- run's order, but unprotected
    count         INTEGER NOT NULL,           -- occurrences (word-level pairs)
    -- first example (lowest trace position)
    ex_space      TEXT NOT NULL,             -- global, shared, or dsmem: a
                                             -- shared word of another block
    ex_address    INTEGER NOT NULL,          -- dsmem: owner block << 32 | offset
    ex_alloc      TEXT NOT NULL DEFAULT '',  -- allocation name, '' if unknown
    ex_offset     INTEGER,                   -- offset in that allocation
    ex_a_launch   INTEGER NOT NULL, ex_a_block INTEGER, ex_a_warp INTEGER,
    ex_a_lane     INTEGER, ex_a_seq INTEGER NOT NULL,
    ex_b_launch   INTEGER NOT NULL, ex_b_block INTEGER, ex_b_warp INTEGER,
    ex_b_lane     INTEGER, ex_b_seq INTEGER NOT NULL,
    UNIQUE (run_id, engine, identity, scope_verdict)
);
CREATE INDEX IF NOT EXISTS races_by_identity ON races(identity);
CREATE INDEX IF NOT EXISTS races_by_run ON races(run_id, engine);

-- Only complete runs are what reports look at.
CREATE VIEW IF NOT EXISTS complete_runs AS
    SELECT * FROM runs WHERE status = 'complete';
