#!/usr/bin/env python3
# The SQLite catalog's stats() before schema version 4 (it counted every object) against reading
# the kept `totals` row (version 4), on an objects table of N rows built in bulk with the
# version-3 objects table and its indexes. Raw SQLite through Python's sqlite3: the queries'
# own cost, without sqlx. Usage: python3 scripts/catalog-stats-bench.py N (keeps
# /tmp/stats-N.sqlite for the next run). Prints each query's milliseconds, twice.
import sqlite3, time, os, sys
n = int(sys.argv[1])
path = f'/tmp/stats-{n}.sqlite'
if not os.path.exists(path):
    db = sqlite3.connect(path)
    db.executescript("""
    CREATE TABLE objects (key TEXT PRIMARY KEY NOT NULL, size_bytes INTEGER NOT NULL, content_hash BLOB NOT NULL,
      created_unix_ms INTEGER NOT NULL, staged_segment INTEGER, blob INTEGER, byte_offset INTEGER NOT NULL,
      tier TEXT NOT NULL DEFAULT 'cold') STRICT, WITHOUT ROWID;
    CREATE INDEX objects_staged ON objects (staged_segment, byte_offset) WHERE staged_segment IS NOT NULL;
    CREATE INDEX objects_warm ON objects (created_unix_ms, key) WHERE tier = 'warm';
    CREATE INDEX objects_by_blob ON objects (blob) WHERE blob IS NOT NULL;
    CREATE TABLE blobs (id INTEGER PRIMARY KEY, size_bytes INTEGER NOT NULL, live_bytes INTEGER NOT NULL, state TEXT NOT NULL) STRICT;
    CREATE TABLE rebuild_tasks (blob INTEGER, column_index INTEGER, PRIMARY KEY (blob, column_index)) STRICT, WITHOUT ROWID;
    CREATE TABLE totals (singleton INTEGER PRIMARY KEY, objects INTEGER, bytes INTEGER, staged_objects INTEGER, staged_bytes INTEGER, warm_objects INTEGER, warm_bytes INTEGER, blobs INTEGER, dead_bytes INTEGER) STRICT;
    """)
    rows = ((f'archive/2026/{i:09d}.tar', 3_000_000 + i, b'h' * 32, i, None, 1 + i // 1000, (i % 1000) * 4_000_000, 'cold') for i in range(n))
    db.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?)", rows)
    db.executemany("INSERT INTO blobs VALUES (?,?,?,?)", ((b, 4_000_000_000, 3_500_000_000, 'committed') for b in range(1, n // 1000 + 2)))
    db.execute("INSERT INTO totals SELECT 1, (SELECT COUNT(*) FROM objects), (SELECT SUM(size_bytes) FROM objects), 0, 0, 0, 0, (SELECT COUNT(*) FROM blobs), 0")
    db.commit(); db.close()
db = sqlite3.connect(path)
old = """SELECT (SELECT COUNT(*) FROM objects), (SELECT COALESCE(SUM(size_bytes), 0) FROM objects),
 (SELECT COUNT(*) FROM objects WHERE staged_segment IS NOT NULL), (SELECT COALESCE(SUM(size_bytes), 0) FROM objects WHERE staged_segment IS NOT NULL),
 (SELECT COUNT(*) FROM objects WHERE tier = 'warm'), (SELECT COALESCE(SUM(size_bytes), 0) FROM objects WHERE tier = 'warm'),
 (SELECT COUNT(*) FROM blobs), (SELECT COUNT(*) FROM rebuild_tasks),
 (SELECT COALESCE(SUM(size_bytes - live_bytes), 0) FROM blobs WHERE state = 'committed')"""
new = "SELECT objects, bytes, staged_objects, staged_bytes, warm_objects, warm_bytes, blobs, dead_bytes, (SELECT COUNT(*) FROM rebuild_tasks) FROM totals"
for name, q in (('counted', old), ('kept', new)) * 2:
    t = time.perf_counter(); db.execute(q).fetchall(); ms = (time.perf_counter() - t) * 1e3
    print(f'{n} objects, {name}: {ms:.3f} ms')
