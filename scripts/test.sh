#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up libtorch (once per machine), build, and run
# every unit and integration test.
#   scripts/test.sh [more cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch.sh
# libtorch threads wait passively, as the engine sets for its workers (src/exec/local.rs); the
# integration tests also run tensor kinds in-process.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# Both crates: the engine and the tensor crate with the worker binary the engine starts.
exec cargo test --release --workspace "$@"
