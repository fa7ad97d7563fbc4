#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up libtorch (once per machine), build, and run
# every unit and integration test.
#   scripts/test.sh [more cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch.sh
# libtorch threads wait passively, as the binary sets for itself (see src/main.rs).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
exec cargo test --release "$@"
