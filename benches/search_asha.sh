#!/usr/bin/env bash
# ASHA against the full grid of the same space (issue 30's last measurement): 27 trials, a
# 9 x 3 grid of `lr` and `weight_decay` for a width-8 train-classifier on the synthetic
# validation split (24 classes, 10 images each, 32 px), scored by `eval.map` on `val-test`.
# The grid trains every point for `max` = 24 epochs; ASHA (the same 27 points, sampler
# "grid") trains them with `prune = { kind = "asha", resource = "epochs", min = 2, max = 24,
# eta = 3 }`. Each search runs in a fresh project (nothing shared, nothing cached).
# Prints, per search, the total stage seconds (the sum of every instance's recorded duration,
# `seconds` in `run --json`), the wall time, the epochs trained, and the objective and values
# of the winner. Then the spread the goal "within one standard deviation of the grid's best"
# needs: each winner's point trained straight through for 24 epochs with seeds 0-4 (the
# searches ran seed 0 only), mean and sample std of `eval.map` over those five draws.
#
#   cargo build --release --workspace && benches/search_asha.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
exe="${CARGO_TARGET_DIR:-$root/target}/release/asymflow"
[[ -x "$exe" ]] || { echo "build first: cargo build --release --workspace ($exe)" >&2; exit 2; }

pipeline() {
    local prune="$1" epochs="$2"
    cat <<TOML
[pipeline]
name = "asha-bench"

[stages.split]
kind = "split"
params = { dataset = "synthetic", classes = 24, per_class = 10, image_size = 32, validation = true }

[stages.net]
kind = "train-classifier"
inputs = { split = "split" }
params = { partition = "val-train", width = 8, stem = "small", embed_dim = 16, resolution = 32, epochs = $epochs, batch_size = 32, lr = 1e-3, flip = false, seed = 0 }

[stages.emb]
kind = "embed"
inputs = { split = "split", model = "net" }
params = { partition = "val-test", resolution = 32 }

[stages.eval]
kind = "evaluate"
inputs = { query = "emb", database = "emb" }

[search.lr]
objective = { stage = "eval", metric = "map", goal = "max" }
sampler = "grid"
$prune

[search.lr.space]
lr = { param = "stages.net.params.lr", choice = [1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2] }
wd = { param = "stages.net.params.weight_decay", choice = [0.0, 1e-4, 1e-3] }
TOML
}

measure() {
    local name="$1" prune="$2" epochs="$3" winner="$4" dir
    dir="$(mktemp -d)"
    mkdir -p "$dir/pipelines"
    pipeline "$prune" "$epochs" > "$dir/pipelines/s.toml"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && env -u ASYMFLOW_CACHE "$exe" run pipelines/s.toml --json > run.json)
    end=$(date +%s.%N)
    python3 - "$name" "$dir/run.json" "$start" "$end" "$winner" <<'PY'
import json, sys
name, path, start, end, winner = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
doc = json.load(open(path))
insts = doc["instances"]
total = sum(i.get("seconds") or 0.0 for i in insts)
nets = [i for i in insts if i["stage"] == "net"]
s = doc["searches"][0]
# A promoted trial continues from its lower rung, so a trial trains its highest rung's epochs.
epochs = sum(t.get("resource") or 24 for t in s["trials"])
best = s["trials"][s["best"]]
objs = [t["objective"] for t in s["trials"] if t["objective"] is not None]
extra = ""
if "prune" in s:
    extra = f", jobs per rung {s['prune']['counts']} at epochs {s['prune']['rungs']}"
print(f"{name}: {total:.1f} stage seconds ({end - start:.1f} s wall), {len(nets)} trainings, {epochs} epochs{extra}; "
      f"winner trial {best['number']} {best['values']} eval.map {best['objective']:.4f}")
json.dump(best["values"], open(winner, "w"))
PY
    rm -rf "$dir"
}

# The winner at `values` (a JSON file of lr and wd) trained straight through for 24 epochs
# with five seeds, in a fresh project.
spread() {
    local name="$1" values="$2" dir lr wd
    dir="$(mktemp -d)"
    mkdir -p "$dir/pipelines"
    lr=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["lr"])' "$values")
    wd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wd"])' "$values")
    pipeline "" 24 | sed -e '/^\[search/,$d' \
        -e "s/lr = 1e-3/lr = $lr, weight_decay = $wd/" -e 's/seed = 0 }/seed = "${sweep.seed}" }/' \
        > "$dir/pipelines/s.toml"
    printf '\n[sweep]\nseed = [0, 1, 2, 3, 4]\n' >> "$dir/pipelines/s.toml"
    (cd "$dir" && env -u ASYMFLOW_CACHE "$exe" run pipelines/s.toml --json > run.json)
    (cd "$dir" && env -u ASYMFLOW_CACHE "$exe" metrics pipelines/s.toml --json > metrics.json)
    python3 - "$name" "$dir/metrics.json" <<'PY'
import json, statistics, sys
name, path = sys.argv[1], sys.argv[2]
doc = json.load(open(path))
maps = [i["metrics"]["map"] for i in doc["instances"] if i["stage"] == "eval"]
assert len(maps) == 5, maps
print(f"{name}: eval.map over seeds 0-4, 24 epochs straight through: "
      f"{statistics.mean(maps):.4f} +- {statistics.stdev(maps):.4f} ({', '.join(f'{m:.4f}' for m in maps)})")
PY
    rm -rf "$dir"
}

work="$(mktemp -d)"
measure "grid (27 x 24 epochs)" "" 24 "$work/grid.json"
measure "asha (27 trials, 2/6/18/24 epochs, eta 3)" 'prune = { kind = "asha", resource = "epochs", min = 2, max = 24, eta = 3 }' 24 "$work/asha.json"
spread "grid's winner" "$work/grid.json"
spread "asha's winner" "$work/asha.json"
rm -rf "$work"
