#!/usr/bin/env bash
# The GPU path, checked on a real device in one call (under 8 minutes on one GPU):
#   1. builds asymflow, its worker and the timing benchmark;
#   2. runs the resolution-asymmetry quickstart, shrunk (one seed, one query resolution, fewer
#      epochs), on the GPU in fp32 and again with precision = "bf16", each into its own cache
#      under a temporary folder, and checks from `asymflow show --json` that every training and
#      embedding stage ran on CUDA (the device recorded with each result);
#   3. compares the two runs' retrieval accuracy (mAP of the teacher-student asymmetric setup
#      and of the teacher symmetric one);
#   4. times a ResNet-50 teacher step at 224 and 448 px and a distillation step (448 -> 224 px)
#      in fp32 and bf16 against PyTorch eager on the same GPU (`cargo bench --bench gpu_check`,
#      compiled code; PyTorch from the torch wheel the set-up installed), and prints the peak
#      device memory of each step as `plan` estimates it beside the peak PyTorch's CUDA
#      allocator measured for the same step;
#   5. prints one Markdown table.
# Without a GPU (no `nvidia-smi`, a driver that lists none, or a libtorch without CUDA) it says
# so in one line and exits 0. `NVIDIA_SMI` names the nvidia-smi to ask (tests point it away).
#
#   scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

nvidia_smi="${NVIDIA_SMI:-nvidia-smi}"
if ! command -v "$nvidia_smi" >/dev/null 2>&1; then
  echo "gpu-check: no GPU here (no nvidia-smi); nothing to check"
  exit 0
fi
gpus="$("$nvidia_smi" -L 2>/dev/null | grep -c '^GPU ' || true)"
if [ "${gpus:-0}" -lt 1 ]; then
  echo "gpu-check: no GPU here (nvidia-smi lists none); nothing to check"
  exit 0
fi
gpu_name="$("$nvidia_smi" --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"

. scripts/libtorch.sh
export OMP_WAIT_POLICY=PASSIVE
if ! PYTHONPATH="$(dirname "$LIBTORCH")" python3 -c \
  'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  echo "gpu-check: no GPU here (libtorch reports no CUDA device); nothing to check"
  exit 0
fi

started=$(date +%s)
echo "gpu-check: $gpu_name ($gpus GPU(s)); building" >&2
cargo build --release --workspace --quiet
cargo bench -p asymflow-tensor --bench gpu_check --no-run --quiet

work="$(mktemp -d "${TMPDIR:-/tmp}/asymflow-gpu-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
bin="${CARGO_TARGET_DIR:-target}/release/asymflow"
pipeline=pipelines/quickstart.toml
# Shrunk so that both runs fit the budget; the shape of the table is the quickstart's.
shrink=(--sweep seed=0 --sweep query_res=32
  --set stages.teacher.params.epochs=6 --set stages.teacher-q.params.epochs=6
  --set stages.student.params.epochs=3)
network_stages=(teacher teacher-q student emb-teacher-db emb-teacher-q emb-teacher-qq emb-student)

run_quickstart() { # precision
  local precision=$1 sets=()
  for stage in "${network_stages[@]}"; do
    sets+=(--set "stages.$stage.params.precision=$precision")
  done
  echo "gpu-check: quickstart ($precision)" >&2
  "$bin" run "$pipeline" --cache "$work/$precision" --quiet "${shrink[@]}" "${sets[@]}" >&2
  for stage in "${network_stages[@]}" eval-ts eval-tsym-db; do
    "$bin" show "$pipeline" "$stage" --json --cache "$work/$precision" \
      "${shrink[@]}" "${sets[@]}" >"$work/$precision-$stage.json"
  done
}
run_quickstart fp32
run_quickstart bf16

# Every network stage must have run on CUDA, in both runs.
devices="$(python3 - "$work" "${network_stages[@]}" <<'EOF'
import json, sys
work, stages = sys.argv[1], sys.argv[2:]
bad, seen = [], set()
for precision in ("fp32", "bf16"):
    for stage in stages:
        for rec in json.load(open(f"{work}/{precision}-{stage}.json")):
            seen.add(rec["device"])
            if not rec["device"].startswith("cuda"):
                bad.append(f"{precision} {rec['instance']} ran on {rec['device']}")
if bad:
    print("gpu-check: FAILED, stages did not run on the GPU: " + "; ".join(bad), file=sys.stderr)
    sys.exit(1)
print(", ".join(sorted(seen)))
EOF
)"

metric() { # precision stage
  python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))[0]["metrics"]["map"])' \
    "$work/$1-$2.json"
}

echo "gpu-check: timing" >&2
timing="$(ASYMFLOW_GPU_CHECK_STEPS="${ASYMFLOW_GPU_CHECK_STEPS:-10}" \
  cargo bench -p asymflow-tensor --bench gpu_check --quiet)"
elapsed=$(( $(date +%s) - started ))

echo
echo "GPU check on $gpu_name, $(date -u +%Y-%m-%d), ${elapsed} s"
echo
echo "| what | asymflow fp32 | asymflow bf16 | PyTorch fp32 | PyTorch bf16 |"
echo "|---|---|---|---|---|"
echo "| quickstart (shrunk): network stages ran on | $devices | $devices | | |"
echo "| quickstart mAP, teacher-student asymmetric (32 px queries, 64 px database) | $(metric fp32 eval-ts) | $(metric bf16 eval-ts) | | |"
echo "| quickstart mAP, teacher symmetric (64 px) | $(metric fp32 eval-tsym-db) | $(metric bf16 eval-tsym-db) | | |"
printf '%s\n' "$timing" | grep '^| ' | grep -v '^| what ' || true
printf '%s\n' "$timing" | grep -v '^|' | sed 's/^/  /' >&2 || true
