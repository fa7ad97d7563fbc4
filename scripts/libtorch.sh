#!/usr/bin/env bash
# Makes libtorch 2.11.0 (the one tch 0.24 binds) available and exports what the build needs.
#
# libtorch comes from the `torch==2.11.0` wheel on PyPI (with its CUDA dependencies, so the
# same copy drives a GPU where one exists and runs on CPU everywhere). It is installed once per
# machine and user into a cache folder outside the repository, shared by every clone and by CI:
#   ${ASYMFLOW_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/asymflow}/torch-2.11.0
# The install goes to a temporary folder first and is renamed into place when complete, so an
# interrupted download never leaves a half-installed libtorch behind.
#
# Source this file (`. scripts/libtorch.sh`); it exports LIBTORCH (read by torch-sys and by our
# build.rs, which bakes an rpath into the binary so it later runs without any variable set).
set -euo pipefail

torch_version="2.11.0"
asymflow_home="${ASYMFLOW_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/asymflow}"
site="$asymflow_home/torch-$torch_version"

if [ ! -f "$site/torch/lib/libtorch_cpu.so" ]; then
  python="$(command -v python3 || command -v python || true)"
  if [ -z "$python" ]; then
    echo "asymflow set-up: python3 is needed once to fetch libtorch from PyPI (torch==$torch_version)" >&2
    exit 1
  fi
  mkdir -p "$asymflow_home"
  partial="$(mktemp -d "$asymflow_home/torch-$torch_version.partial.XXXXXX")"
  echo "asymflow set-up: installing libtorch (torch==$torch_version from PyPI, several GB, once per machine) into $site" >&2
  "$python" -m pip install --quiet --no-compile --disable-pip-version-check \
    --target "$partial" "torch==$torch_version" >&2
  rm -rf "$site"
  mv "$partial" "$site"
fi

export LIBTORCH="$site/torch"
export LIBTORCH_CXX11_ABI=1
