#!/usr/bin/env python3
"""Fills a cache index, an object store and a folder remote with the contents of a cache that
grew for years, in seconds, for `benches/scale.sh`. Nothing here runs a stage: rows go straight
into the index that `asymflow` created (so its schema and migrations are the real ones) through
SQLite, in one transaction.

  scale_gen.py cached PROJECT_DIR PLAN_JSON   every instance of `plan --json` recorded as run
  scale_gen.py index CACHE_DIR N              N results of a synthetic pipeline `big`
  scale_gen.py remote FOLDER N                N records and N blobs in a folder remote

`cached`: each instance gets a result under the key `plan --json` printed for it, with the
outputs of one real run of the stage already in the store (`log.txt`, `metrics.json`,
`value.json`): the log is that run's, shared, and `metrics.json` and `value.json` are objects
of the instance's own, empty files in the store, as a real sweep's instances write different
values (the outputs' content is not what is measured: `plan` and a no-op `run` check that each
object exists, they do not read it), and one metric `value`.

`index`: N results of one stage `s` of a pipeline `big` (binding `{"i": i}`, a key JSON of
the size a trivial stage has), each with three outputs: a `log.txt` all share and a
`metrics.json` and `value.json` of its own, so 2N + 1 distinct objects, each an empty file in
the store (gc walks and stats them; empty files cost an inode and no block), one `history`
row, one metric, and one `objects` row per object. Keys and digests are sha256 of the
counter, formatted as the index stores blake3 digests (64 hex characters).

`remote`: N records `ac/KEY.json` and N blobs `cas/DIGEST`, empty files: `remote status`
without a pipeline must not list them, and a listing is what they cost.
"""

import hashlib
import json
import os
import sqlite3
import sys
import time


def hexof(tag, i):
    return hashlib.sha256(f"{tag}{i}".encode()).hexdigest()


def cached(project, plan_json):
    cache = os.path.join(project, "cache")
    db = sqlite3.connect(os.path.join(cache, "index.sqlite"))
    (outputs,) = db.execute("SELECT count(*) FROM outputs").fetchone()
    template = db.execute("SELECT name, digest, is_dir FROM outputs LIMIT 3").fetchall()
    assert outputs == 3 and len(template) == 3, "the cache must hold one real run of the stage"
    with open(plan_json) as f:
        plan = json.load(f)
    now = time.time()
    runs, outs, hist, metrics = [], [], [], []
    log = next(t for t in template if t[0] == "log.txt")
    for n, inst in enumerate(plan["instances"]):
        key = inst["key"]
        binding = json.dumps(inst["binding"], separators=(",", ":"), sort_keys=True)
        key_json = json.dumps(
            {"fingerprint": None, "format": 2, "impl_version": 1, "inputs": {},
             "kind": inst["kind"], "params": inst["params"]},
            separators=(",", ":"), sort_keys=True)
        runs.append((key, inst["stage"], inst["kind"], plan["pipeline"], binding, key_json,
                     now, now, 0.01))
        own = [(name, touch(os.path.join(cache, "objects"), hexof(name, n)), 0)
               for name in ("metrics.json", "value.json")]
        outs.extend((key, name, digest, is_dir) for name, digest, is_dir in [log] + own)
        hist.append((plan["pipeline"], inst["stage"], binding, key, now))
        metrics.append((key, float(n)))
    with db:
        db.executemany(
            "INSERT OR REPLACE INTO runs (key, stage, kind, pipeline, binding, key_json, status,"
            " started, finished, duration, device) VALUES (?,?,?,?,?,?,'ok',?,?,?,'cpu')", runs)
        db.executemany("INSERT OR REPLACE INTO outputs VALUES (?,?,?,?)", outs)
        db.executemany("INSERT OR REPLACE INTO history VALUES (?,?,?,?,?)", hist)
        db.executemany("INSERT OR REPLACE INTO metrics VALUES (?, 'value', ?)", metrics)
    print(f"recorded {len(runs)} cached instances")


MADE_SHARDS = set()


def touch(objects, digest):
    """An empty file in the store under `digest`; returns `digest`."""
    shard = os.path.join(objects, digest[:2])
    if shard not in MADE_SHARDS:
        os.makedirs(shard, exist_ok=True)
        MADE_SHARDS.add(shard)
    os.close(os.open(os.path.join(shard, digest[2:]), os.O_CREAT | os.O_WRONLY, 0o644))
    return digest


def index(cache, n):
    db = sqlite3.connect(os.path.join(cache, "index.sqlite"))
    db.execute("PRAGMA synchronous = OFF")
    objects = os.path.join(cache, "objects")
    log = hexof("log", 0)
    now = time.time() - 86400 * 365
    batch = 100_000
    touch(objects, log)
    db.execute("INSERT OR REPLACE INTO objects VALUES (?, 15, ?)", (log, now))
    for start in range(0, n, batch):
        runs, outs, metrics, hist, objs = [], [], [], [], []
        for i in range(start, min(n, start + batch)):
            key = hexof("key", i)
            binding = f'{{"i":{i}}}'
            key_json = ('{"fingerprint":null,"format":2,"impl_version":1,"inputs":{},'
                        '"kind":"test-echo","params":{"device":false,"fail":false,"omit":false,'
                        f'"pad_bytes":0,"sleep_ms":0,"stray":"","value":{i}}}}}')
            at = now + i
            runs.append((key, binding, key_json, at - 1, at))
            metric, value = hexof("metrics", i), hexof("value", i)
            outs += [(key, "log.txt", log), (key, "metrics.json", metric),
                     (key, "value.json", value)]
            metrics.append((key, float(i)))
            hist.append((binding, key, at))
            objs += [(metric, 20, at), (value, 3, at)]
            touch(objects, metric)
            touch(objects, value)
        with db:
            db.executemany(
                "INSERT INTO runs (key, stage, kind, pipeline, binding, key_json, status,"
                " started, finished, duration, device) VALUES"
                " (?, 's', 'test-echo', 'big', ?, ?, 'ok', ?, ?, 1.0, 'cpu')", runs)
            db.executemany("INSERT INTO outputs VALUES (?, ?, ?, 0)", outs)
            db.executemany("INSERT INTO metrics VALUES (?, 'value', ?)", metrics)
            db.executemany("INSERT INTO history VALUES ('big', 's', ?, ?, ?)", hist)
            db.executemany("INSERT OR REPLACE INTO objects VALUES (?, ?, ?)", objs)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    print(f"recorded {n} results, {2 * n + 1} objects")


def remote(folder, n):
    for sub in ("ac", "cas"):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
    for i in range(n):
        os.close(os.open(os.path.join(folder, "ac", hexof("key", i) + ".json"),
                         os.O_CREAT | os.O_WRONLY, 0o644))
        os.close(os.open(os.path.join(folder, "cas", hexof("blob", i)),
                         os.O_CREAT | os.O_WRONLY, 0o644))
    print(f"wrote {n} records and {n} blobs")


if __name__ == "__main__":
    what, *args = sys.argv[1:]
    {"cached": lambda p, j: cached(p, j),
     "index": lambda c, n: index(c, int(n)),
     "remote": lambda f, n: remote(f, int(n))}[what](*args)
