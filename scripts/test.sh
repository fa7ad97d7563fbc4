#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up libtorch (once per machine), build, and run
# every unit and integration test.
#   scripts/test.sh [more cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch.sh
exec cargo test --release "$@"
