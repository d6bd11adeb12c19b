-- The SQLite half of one index (one project x one embedding descriptor), in WAL mode.
-- The other half is three fixed-width vector files beside it, addressed by vector id (= row):
--   vectors.bits   uint8[rows, dims/8]  sign bits, MSB-first (numpy packbits order)
--   vectors.int8   int8[rows, dims]     rescoring rows
--   vectors.scale  float32[rows]        one symmetric scale per int8 row
--   center.f32     float32[dims]        present only for models that need mean-centred bits
-- Only the first meta('vector_rows') rows are committed; bytes past them are a crash's
-- leftovers, never read, and cut off by the next writer. A compaction (reclaiming vectors no
-- chunk uses) writes the live rows to vectors.<epoch>.{bits,int8,scale} and commits new ids
-- with meta('vector_epoch'); epoch 0 (the default) uses the plain names above.

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,   -- descriptor (JSON), project_id, root, schema_version, vector_rows,
                              -- vector_epoch, index_token (random, drawn when the index is
                              -- made: chunk ids carry it, see kenning.store.ids)
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS clusters (
    cluster TEXT PRIMARY KEY, -- a directory, relative to the root ('' for the root itself)
    digest  BLOB NOT NULL     -- BLAKE3 over its files' (path, digest) pairs
);

CREATE TABLE IF NOT EXISTS files (
    path     TEXT PRIMARY KEY, -- relative to the root, POSIX separators
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    digest   BLOB NOT NULL,    -- BLAKE3-128 of the bytes
    cluster  TEXT NOT NULL,
    language TEXT,
    kind     TEXT              -- what evidence says it is (indexing.kinds); NULL: its path says
);

-- A chunk row is never updated in place: a changed file's chunks are deleted and new rows
-- inserted. AUTOINCREMENT means an id is never reused within this database, and the index
-- token in a chunk id (kenning.store.ids) sets it apart from any other database's ids, so an
-- id can only ever name the chunk it was given for.
CREATE TABLE IF NOT EXISTS chunks (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    generation   INTEGER NOT NULL,  -- the snapshot generation that created the row
    path         TEXT NOT NULL,
    start_byte   INTEGER NOT NULL,
    end_byte     INTEGER NOT NULL,
    start_line   INTEGER NOT NULL,  -- 1-based, inclusive
    end_line     INTEGER NOT NULL,
    language     TEXT,
    kind         TEXT NOT NULL,
    symbol       TEXT,
    signature    TEXT,
    content_hash BLOB NOT NULL,     -- BLAKE3-128 of the chunk text (no path: see vectors)
    generated    INTEGER NOT NULL DEFAULT 0, -- 1: its file's first lines say a tool wrote it
    name         TEXT,              -- the last part of symbol ('send' of 'Client.send')
    file_kind    TEXT               -- its file's kind (files.kind), for filters inside retrieval
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_name ON chunks(name);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(content_hash);
CREATE INDEX IF NOT EXISTS chunks_symbol ON chunks(symbol COLLATE NOCASE);

-- The calls each chunk makes and the declarations inside it besides its own
-- (kenning.chunking.calls): a declaration's callers are the declarations around the calls of
-- its name, its callees the declarations of the names it calls.
CREATE TABLE IF NOT EXISTS calls (
    chunk INTEGER NOT NULL,  -- chunks.id
    name  TEXT NOT NULL,     -- the name called: 'send' of 'self.client.send(x)'
    line  INTEGER NOT NULL,  -- where, 1-based
    PRIMARY KEY (chunk, name, line)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS calls_name ON calls(name);
CREATE TABLE IF NOT EXISTS members (
    chunk      INTEGER NOT NULL,  -- chunks.id
    name       TEXT NOT NULL,     -- 'evict'
    symbol     TEXT NOT NULL,     -- 'LruCache.evict'
    kind       TEXT NOT NULL,
    start_line INTEGER NOT NULL,  -- 1-based, inclusive
    end_line   INTEGER NOT NULL,
    start_byte INTEGER NOT NULL,  -- half-open
    end_byte   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS members_chunk ON members(chunk);
CREATE INDEX IF NOT EXISTS members_name ON members(name);

-- One vector per distinct chunk text, embedded with the path of the first chunk that had it:
-- renames, reverts, branch switches and duplicates cost nothing.
CREATE TABLE IF NOT EXISTS vectors (
    content_hash BLOB PRIMARY KEY,
    vector_id    INTEGER NOT NULL UNIQUE
);

-- One row per committed block of vector rows (kenning.store.integrity): a BLAKE3 digest over
-- the content hashes of rows start..start+rows-1 (by vector_id) and those rows' bytes.
CREATE TABLE IF NOT EXISTS vector_blocks (
    start  INTEGER PRIMARY KEY,  -- the first vector id of the block
    rows   INTEGER NOT NULL,
    digest BLOB NOT NULL
);

CREATE TABLE IF NOT EXISTS snapshots (
    generation  INTEGER PRIMARY KEY,
    created_at  REAL NOT NULL,      -- unix time
    git_head    TEXT,
    git_branch  TEXT,
    files       INTEGER NOT NULL,
    chunks      INTEGER NOT NULL,
    vectors     INTEGER NOT NULL,   -- chunks that have a vector
    words_only  INTEGER NOT NULL DEFAULT 0, -- chunks without one, of kinds not embedded
                                    -- (index.embed_kinds): found by words and symbols
    status      TEXT NOT NULL,      -- 'partial' (vectors still arriving) or 'complete'
    timings     TEXT NOT NULL       -- JSON: seconds per stage
);

-- BM25 over code-aware tokens (kenning.tokens), rowid = chunks.id.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    body, symbol, path, tokenize = 'unicode61 remove_diacritics 0'
);
