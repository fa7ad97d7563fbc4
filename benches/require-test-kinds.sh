# Sourced by the benchmarks that run the engine's test kinds (scale.sh, slurm_arrays.sh):
# `require_test_kinds EXE` exits 2 with how to build when EXE is missing or has no test kinds.
require_test_kinds() {
    local exe="$1" build="cargo build --release --features test-kinds"
    [[ -x "$exe" ]] || { echo "build first: $build ($exe is missing)" >&2; exit 2; }
    if ! ASYMFLOW_TEST_KINDS=1 "$exe" kinds 2>/dev/null | grep -q '^test-echo'; then
        echo "$exe has no test kinds (test-echo is missing from \`asymflow kinds\`): build it with \`$build\`" >&2
        exit 2
    fi
}
