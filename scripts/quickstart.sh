#!/usr/bin/env bash
# The main job on a fresh machine: set up libtorch (once per machine), build asymflow, and run
# the quickstart pipeline on the built-in synthetic data set, on CPU.
#   scripts/quickstart.sh [more asymflow run arguments, e.g. --sweep seed=0]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libtorch.sh
cargo build --release --bins
exec "${CARGO_TARGET_DIR:-target}/release/asymflow" run pipelines/quickstart.toml "$@"
