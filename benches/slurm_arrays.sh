#!/usr/bin/env bash
# Job arrays against one job per instance, as whole commands: `asymflow run --executor slurm`
# of a sweep of N (default 500) instances of a trivial stage (test-echo taking a device slot)
# against the fake Slurm of the test suite (tests/fixtures/slurm/bin), once with
# `arrays = true` and once with `arrays = false`. A stand-in slurmd runs every queued batch
# script as soon as it sees it (two at a time), so each element runs the real `asymflow exec`.
# Prints, per mode, the sbatch calls and the wall time of the run.
#
# test-echo is a test kind, compiled only with the `test-kinds` feature:
#   cargo build --release --features test-kinds && benches/slurm_arrays.sh [N]
# ASYMFLOW_EXE names another binary built that way, with its asymflow-worker beside it
# (default: $CARGO_TARGET_DIR/release/asymflow).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-500}"
exe="${ASYMFLOW_EXE:-${CARGO_TARGET_DIR:-$root/target}/release/asymflow}"
. "$root/benches/require-test-kinds.sh"
require_test_kinds "$exe"

# The stand-in slurmd: runs PENDING jobs' scripts (array elements with their SLURM_ARRAY_*).
slurmd() {
    local state="$1"
    run_one() {
        local job="$1" id
        id="$(basename "$job")"
        local env=(SLURM_JOB_ID="${id/_/0}")
        if [[ "$id" == *_* ]]; then
            env+=(SLURM_ARRAY_JOB_ID="${id%_*}" SLURM_ARRAY_TASK_ID="${id#*_}")
        fi
        if env "${env[@]}" bash "$job/script" >>"$(cat "$job/output")" 2>&1; then
            echo COMPLETED > "$job/state"
        else
            echo FAILED > "$job/state"
        fi
    }
    export -f run_one
    while [[ ! -e "$state/stop" ]]; do
        local ready=()
        for job in "$state"/jobs/*/; do
            [[ -f "$job/state" && "$(cat "$job/state")" == PENDING ]] || continue
            echo RUNNING > "$job/state"
            ready+=("${job%/}")
        done
        if ((${#ready[@]})); then
            printf '%s\n' "${ready[@]}" | xargs -P 2 -I{} bash -c 'run_one "$@"' _ {}
        else
            sleep 0.05
        fi
    done
}

measure() {
    local arrays="$1" dir
    dir="$(mktemp -d)"
    mkdir -p "$dir/project/pipelines" "$dir/state/jobs" "$dir/bin"
    cp "$root"/tests/fixtures/slurm/bin/* "$dir/bin/"
    local values
    values="$(seq -s, 0 $((n - 1)))"
    cat >"$dir/project/pipelines/sweep.toml" <<TOML
[pipeline]
name = "sweep"

[sweep]
seed = [$values]

[stages.train]
kind = "test-echo"
params = { value = "\${sweep.seed}", device = true }
TOML
    cat >"$dir/project/asymflow.toml" <<TOML
[executor.slurm]
partition = "gpu"
time = "01:00:00"
poll_interval = 0.2
arrays = $arrays
bin_dir = "$dir/bin"
setup = "export ASYMFLOW_TEST_KINDS=1"

[executor.slurm.device]
gres = "gpu:1"
TOML
    slurmd "$dir/state" &
    local daemon=$!
    local start end failed=""
    start="$(date +%s.%N)"
    (cd "$dir/project" && ASYMFLOW_TEST_KINDS=1 "$exe" run pipelines/sweep.toml \
        --executor slurm --max-jobs 64 >"$dir/run.out" 2>"$dir/run.err") \
        || { failed="  RUN FAILED: not a measurement"; echo "run failed (arrays = $arrays):" >&2; tail -20 "$dir/run.err" >&2; }
    end="$(date +%s.%N)"
    touch "$dir/state/stop"
    wait "$daemon" || true
    local calls ran
    calls="$(grep -c '^sbatch' "$dir/state/calls.log" || true)"
    ran="$(grep -o '[0-9]* ran' "$dir/run.err" | tail -1)"
    printf 'arrays = %-5s  %4d instances  %4d sbatch calls  %6.1f s wall  (%s)%s\n' \
        "$arrays" "$n" "$calls" "$(echo "$end - $start" | bc)" "$ran" "$failed"
    rm -rf "$dir"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
measure true
measure false
