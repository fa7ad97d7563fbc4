"""Brute-force numpy reference for benches/evaluate_large.rs.

Reads the files the bench writes (query/db embeddings as raw little-endian f32, labels as
raw i64), computes the full similarity rows of the first `queries` queries, sorts every row
completely (ties broken by database index, the query itself removed when `self` is given) and
prints one JSON line: trapezoidal mAP, standard mAP, R@1, queries without positives, seconds,
peak RSS in MiB.

Usage: python3 evaluate_reference.py DIR N_QUERY N_DB DIM QUERIES SELF(0|1)
"""
import json
import sys
import time

import numpy as np


def peak_rss_mib():
    # VmHWM belongs to this process image; getrusage's maxrss would carry the parent's peak
    # across exec.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    folder, nq, nd, dim, queries, self_match = sys.argv[1:7]
    nq, nd, dim, queries, self_match = int(nq), int(nd), int(dim), int(queries), self_match == "1"
    q = np.fromfile(f"{folder}/query.f32", dtype="<f4").reshape(nq, dim)
    d = np.fromfile(f"{folder}/db.f32", dtype="<f4").reshape(nd, dim)
    ql = np.fromfile(f"{folder}/query_labels.i64", dtype="<i8")
    dl = np.fromfile(f"{folder}/db_labels.i64", dtype="<i8")
    start = time.perf_counter()
    maps, maps_std, r1, none = [], [], [], 0
    block = 256
    for b in range(0, queries, block):
        s = q[b : min(b + block, queries)] @ d.T
        for r in range(s.shape[0]):
            i = b + r
            row = s[r]
            keep = np.arange(nd)
            if self_match:
                keep = keep[keep != i]
            # Stable sort of -score: equal scores keep ascending database index.
            order = keep[np.argsort(-row[keep], kind="stable")]
            pos = np.nonzero(dl[order] == ql[i])[0]
            if len(pos) == 0:
                none += 1
                continue
            j = np.arange(len(pos))
            before = np.where(pos == 0, 1.0, j / np.maximum(pos, 1))
            after = (j + 1) / (pos + 1)
            maps.append(float(np.sum(before + after) / (2 * len(pos))))
            maps_std.append(float(np.mean(after)))
            r1.append(1.0 if pos[0] == 0 else 0.0)
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "map": float(np.mean(maps)) if maps else 0.0,
                "map_std": float(np.mean(maps_std)) if maps else 0.0,
                "r1": float(np.mean(r1)) if r1 else 0.0,
                "no_positive": none,
                "seconds": seconds,
                "peak_rss_mib": peak_rss_mib(),
            }
        )
    )


if __name__ == "__main__":
    main()
