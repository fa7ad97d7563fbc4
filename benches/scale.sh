#!/usr/bin/env bash
# The engine at scale, as whole commands a user waits for (wall time and peak resident memory
# from /usr/bin/time), on a project generated in a temporary folder:
#
#   plan       `plan` of a sweep of N (default 100,000) instances of a trivial stage
#              (test-echo), nothing cached; a chain of N instances (a sweep of N/2 and a
#              second stage downstream of each instance); then every instance of the sweep cached:
#              `plan` and a no-op `run` (goal: `plan` under 1 s and 250 MiB on 2 cores), and
#              `plan` of the chain, whose first stage is then cached and second to run
#              (each said why, and estimated from the sweep's results)
#   index      `status` and `cache gc --dry-run` on a cache whose index holds M (default
#              1,000,000) results (goals: 1 s and 5 s); prints the index's size on disk
#   remote     `remote status` against a folder remote holding M records and M blobs
#   dashboard  the dashboard's pipeline page of the N-instance sweep: time to first byte and
#              to the last byte over HTTP (`serve` on a free port, curl), on the first view
#              after `serve` starts (its page's instances planned alone), then the status API,
#              which waits for the whole state computed meanwhile, then two more views, then
#              sorted, filtered, and both
#
# Rows go into the index straight through SQLite (benches/scale_gen.py says exactly what it
# writes): running a million stages is not what is measured. Needs python3 and curl. Each
# section can run alone; the folder it works in is removed at the end (KEEP=1 keeps it).
#
#   cargo build --release --features test-kinds && benches/scale.sh [plan|index|remote|dashboard|all] [N] [M]
# ASYMFLOW_EXE names another binary built that way (default: $CARGO_TARGET_DIR/release/asymflow).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-all}"
n="${2:-100000}"
m="${3:-1000000}"
exe="${ASYMFLOW_EXE:-${CARGO_TARGET_DIR:-$root/target}/release/asymflow}"
. "$root/benches/require-test-kinds.sh"
require_test_kinds "$exe"
gen="$root/benches/scale_gen.py"
export ASYMFLOW_TEST_KINDS=1
work="$(mktemp -d "${TMPDIR:-/tmp}/asymflow-scale.XXXXXX")"
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$work"' EXIT

# `timed LABEL CMD...`: runs CMD (output to $work/out), prints wall seconds and peak RSS.
timed() {
    local label="$1"
    shift
    /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$work/out" 2>"$work/err" \
        || { echo "$label failed:" >&2; tail -5 "$work/err" >&2; return 1; }
    read -r secs kib <"$work/time"
    printf '%-52s %7.2f s  %7.1f MiB\n' "$label" "$secs" "$(echo "$kib / 1024" | bc -l)"
}

# `best3 LABEL CMD...`: `timed` three times, each printed (the VM's speed drifts).
best3() {
    for _ in 1 2 3; do timed "$@"; done
}

sweep() {
    local dir="$1" count="$2" name="$3"
    mkdir -p "$dir/pipelines"
    {
        printf '[pipeline]\nname = "sweep"\n[sweep]\ni = ['
        seq -s, 0 $((count - 1)) | tr -d '\n'
        printf ']\n[stages.s]\nkind = "test-echo"\nparams = { value = "${sweep.i}" }\n'
    } >"$dir/pipelines/$name.toml"
}

# A project with the N-instance sweep, one instance run for real, and (cached=1) every other
# instance recorded as run with that run's outputs.
project() {
    local dir="$work/sweep"
    [[ -d "$dir" ]] && return 0
    sweep "$dir" "$n" sweep
    sweep "$dir" $((n / 2)) chain
    printf '[stages.t]\nkind = "test-echo"\ninputs = { input = "s" }\nparams = { value = "t" }\n' \
        >>"$dir/pipelines/chain.toml"
    sweep "$dir" 1 one
    (cd "$dir" && "$exe" run pipelines/one.toml >/dev/null 2>&1)
}

bench_plan() {
    project
    local dir="$work/sweep"
    cd "$dir"
    best3 "plan, $n instances, none cached" "$exe" plan pipelines/sweep.toml
    best3 "plan, $n instances in a chain of 2 stages, none cached" "$exe" plan pipelines/chain.toml
    "$exe" plan --json pipelines/sweep.toml >"$work/plan.json" || true
    python3 "$gen" cached "$dir" "$work/plan.json" >/dev/null
    best3 "plan, $n instances, all cached" "$exe" plan pipelines/sweep.toml
    grep -q "$n cached" "$work/out" || { echo "not all cached: $(tail -1 "$work/out")" >&2; exit 1; }
    best3 "no-op run, $n instances" "$exe" run pipelines/sweep.toml
    # The chain's first stage is the sweep's first half, now cached: its second stage is to run,
    # each instance said why and estimated from the cache's results of its kind.
    best3 "plan, $n in a chain of 2 stages, the first cached" "$exe" plan pipelines/chain.toml
    grep -q "$((n / 2)) to run" "$work/out" || { echo "not half to run: $(tail -2 "$work/out")" >&2; exit 1; }
    cd - >/dev/null
}

bench_index() {
    local cache="$work/big-cache"
    # The index is created, with every migration, by asymflow itself.
    sweep "$work/big" 1 one
    (cd "$work/big" && "$exe" run --cache "$cache" pipelines/one.toml >/dev/null 2>&1)
    local clock=$SECONDS
    python3 "$gen" index "$cache" "$m"
    echo "  (generated in $((SECONDS - clock)) s; index.sqlite $(du -h "$cache/index.sqlite" | cut -f1)," \
        "objects/ $(du -sh "$cache/objects" | cut -f1))"
    best3 "status, $m results" "$exe" status --cache "$cache"
    best3 "cache gc --dry-run, $m results" "$exe" cache gc --dry-run --cache "$cache"
    tail -1 "$work/out"
}

bench_remote() {
    local remote="$work/remote"
    mkdir -p "$remote"
    local clock=$SECONDS
    python3 "$gen" remote "$remote" "$m"
    echo "  (generated in $((SECONDS - clock)) s)"
    mkdir -p "$work/rproj/pipelines"
    printf 'remote = "file://%s"\n' "$remote" >"$work/rproj/asymflow.toml"
    cd "$work/rproj"
    best3 "remote status, $m records" "$exe" remote status
    if "$exe" remote status --help | grep -q -- '--count'; then
        timed "remote status --count, $m records" "$exe" remote status --count
    fi
    cd - >/dev/null
}

bench_dashboard() {
    project
    local dir="$work/sweep"
    [[ -s "$work/plan.json" ]] || {
        (cd "$dir" && "$exe" plan --json pipelines/sweep.toml >"$work/plan.json") || true
        python3 "$gen" cached "$dir" "$work/plan.json" >/dev/null
    }
    (cd "$dir" && exec "$exe" serve --port 0 >"$work/serve.out" 2>&1) &
    local server=$!
    local url=""
    for _ in $(seq 1 100); do
        url="$(grep -o 'http://[^/]*/' "$work/serve.out" || true)"
        [[ -n "$url" ]] && break
        sleep 0.1
    done
    [[ -n "$url" ]] || { echo "serve did not start" >&2; cat "$work/serve.out" >&2; exit 1; }
    # The first view plans its page's instances and starts computing the whole state; the status
    # API waits for it (counted from the request, not from `serve`'s start); later views find it
    # kept (serve/compute.rs, serve/memo.rs).
    for view in "first view" "status API (the whole state):/api/p/sweep/status?ids=0" \
        "second view" "third view" \
        "sorted by i, descending:?sort=i&dir=desc" "filtered to i > n/2:?f.i=%3E$((n / 2))" \
        "filtered and sorted:?f.i=%3E$((n / 2))&sort=i&dir=desc"; do
        local query=""
        [[ "$view" == *:* ]] && query="${view#*:}"
        local path="p/sweep$query"
        [[ "$query" == /* ]] && path="${query#/}"
        curl -s -o "$work/page.html" -w '%{time_starttransfer} %{time_total} %{size_download}\n' \
            "${url}$path" >"$work/curl"
        read -r first total bytes <"$work/curl"
        printf '%-52s %7.2f s to first byte, %.2f s to last (%s bytes)\n' \
            "dashboard pipeline page, $n instances, ${view%%:*}" "$first" "$total" "$bytes"
    done
    kill "$server"
    wait "$server" 2>/dev/null || true
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
case "$what" in
plan) bench_plan ;;
index) bench_index ;;
remote) bench_remote ;;
dashboard) bench_dashboard ;;
all)
    bench_plan
    bench_dashboard
    bench_index
    bench_remote
    ;;
*) echo "usage: benches/scale.sh [plan|index|remote|dashboard|all] [N] [M]" >&2; exit 2 ;;
esac
