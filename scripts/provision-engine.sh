#!/usr/bin/env bash
# Provision one engine release in its own cached virtual environment.
# vLLM and SGLang pin different torch/transformers, so each (engine, version) gets a venv of its own:
#   ${SPECPROBE_ENGINES_DIR:-~/.cache/specprobe/engines}/<engine>-<version>/
# Idempotent: a finished venv carries a .specprobe-ok marker and is reused as is.
# Usage: scripts/provision-engine.sh vllm 0.33.0
set -euo pipefail
engine=${1:?engine (vllm|sglang)}
version=${2:?version}
root=${SPECPROBE_ENGINES_DIR:-$HOME/.cache/specprobe/engines}
venv="$root/$engine-$version"
if [ -f "$venv/.specprobe-ok" ]; then
  echo "$venv/bin/python"
  exit 0
fi
mkdir -p "$root"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip >&2
# The engines are imported only for introspection on CPU; the default wheels are what users install.
"$venv/bin/python" -m pip install -q "$engine==$version" >&2
"$venv/bin/python" -c "import importlib; importlib.import_module('$engine')" >&2
touch "$venv/.specprobe-ok"
echo "$venv/bin/python"
