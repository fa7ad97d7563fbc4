#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up libtorch (once per machine), start the test
# servers (two S3-compatible servers, a single-node Slurm, headless Chromium), build, run every
# unit and integration test of both crates, and stop the servers again.
#   scripts/test.sh [more cargo test arguments]
# A server that cannot start says so in one line (`NAME: unavailable (why)`); its tests then
# skip with one line each and everything else still runs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch.sh
# libtorch threads wait passively, as the engine sets for its workers (src/exec/local.rs); the
# integration tests also run tensor kinds in-process.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"

services=(s3 s3rver slurm chromium)
stop_services() {
  for s in "${services[@]}"; do scripts/services/$s.sh down >/dev/null 2>&1 || true; done
}
trap stop_services EXIT
for s in "${services[@]}"; do
  echo "test servers: starting $s" >&2
  eval "$(scripts/services/$s.sh up)"
done

# Both crates (default members): the engine, and the tensor crate with the worker binary the
# engine starts.
cargo test --release --workspace "$@"
