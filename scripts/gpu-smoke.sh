#!/usr/bin/env bash
# The GPU experiment behind docs/smoke/: train a >= 100M-parameter Llama target and its EAGLE-3 drafter
# on one GPU, then measure them with `specprobe smoke --device cuda` at K = 1, 3 and 5.
#
#   scripts/gpu-smoke.sh [RESULTS_DIR]        (default: $OUT, else out/gpu-smoke)
#
# Environment: SPECPROBE_PLAN (gpu | tiny, default gpu), SPECPROBE_DEVICE (default cuda),
# SPECPROBE_MODELS (where the trained models go, default /tmp/specprobe-gpu-models),
# SPECPROBE_MAX_PROMPTS (default 24), SPECPROBE_MAX_NEW_TOKENS (default 128).
# Results: smoke-kK.json and smoke-kK.png per K, smoke-broken-k3.json (the shuffled-d2t drafter), train.log,
# and table.md: the docs/smoke/README.md table regenerated from the JSON files
# (`python -m specprobe.smoke.table gpu RESULTS_DIR`).
set -euo pipefail
cd "$(dirname "$0")/.."
results=${1:-${OUT:-out/gpu-smoke}}
plan=${SPECPROBE_PLAN:-gpu}
device=${SPECPROBE_DEVICE:-cuda}
models=${SPECPROBE_MODELS:-/tmp/specprobe-gpu-models}
prompts=${SPECPROBE_MAX_PROMPTS:-24}
new_tokens=${SPECPROBE_MAX_NEW_TOKENS:-128}
mkdir -p "$results"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python=${PYTHON:-python3}

"$python" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__,
  "cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
start=$SECONDS
"$python" -m specprobe.demo.train --out "$models" --plan "$plan" --device "$device" 2>&1 | tee "$results/train.log"
echo "train wall $((SECONDS - start)) s" | tee -a "$results/train.log"
log="$models/smoke.log"
: >"$log"
summarise() {
  "$python" - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
keys = ("num_speculative_tokens", "mean_acceptance_length", "acceptance_rate", "per_position", "lossless",
        "tokens_per_s", "target_only_tokens_per_s", "speedup", "seconds_per_1k_tokens", "target_parameters")
print({k: r.get(k) for k in keys})
PY
}
for k in 1 3 5 broken; do
  draft=draft plot=(--plot "$results/smoke-k$k.png") name="smoke-k$k"
  if [ "$k" = broken ]; then
    k=3 draft=draft-broken plot=(--force) name=smoke-broken-k3
  fi
  # Exit 1 only means error findings (reported in the JSON); any other code is a failure.
  rc=0
  "$python" -m specprobe smoke --target "$models/target" --draft "$models/$draft" --device "$device" \
    --num-speculative-tokens "$k" --max-prompts "$prompts" --max-new-tokens "$new_tokens" --no-progress \
    --timing-repeats "${SPECPROBE_TIMING_REPEATS:-3}" \
    --format json --output "$results/$name.json" "${plot[@]}" 2>>"$log" || rc=$?
  if [ "$rc" -gt 1 ]; then
    echo "specprobe smoke K=$k failed with exit $rc" >&2
    cat "$log" >&2
    exit "$rc"
  fi
  summarise "$results/$name.json"
done
"$python" -m specprobe.smoke.table gpu "$results" | tee "$results/table.md"
