#!/usr/bin/env bash
# The whole test suite: lint (ruff), types (mypy), then pytest with the real engines provisioned.
# Engines live in cached venvs (scripts/provision-engine.sh); the first run installs them (~6 min each).
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
python -m pytest -q "$@"
