#!/usr/bin/env bash
# Write the shipped schema snapshot of one engine release: specprobe/data/schemas/<engine>/<version>.json.
# Every release at once, resumable and cached: scripts/snapshot_all.py (uv, one venv per release).
# The release is installed in a throwaway venv that is deleted afterwards.
#   scripts/snapshot-engine.sh vllm 0.18.0                      full install (pip install vllm==0.18.0)
#   scripts/snapshot-engine.sh vllm 0.18.0 --overlay PYTHON     light install: the release's own package
#       (pip install --no-deps) on top of the dependencies of another engine venv (its site-packages
#       added through a .pth file); the probe still imports that release's own code.
#   scripts/snapshot-engine.sh vllm 0.16.0 --overlay PYTHON gguf   ... plus dependencies the base venv lacks
#       (older releases import packages newer ones dropped); they are recorded in the provenance too.
# How it was installed is recorded in the snapshot's provenance.
set -euo pipefail
engine=${1:?engine (vllm|sglang)}
version=${2:?version}
overlay=""
extra=()
if [ "${3:-}" = "--overlay" ]; then
  overlay=${4:?--overlay needs the python of an engine venv}
  extra=("${@:5}")
fi
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/specprobe-snapshot-$engine-$version.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
if [ -n "$overlay" ]; then
  base_site=$("$overlay" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  base_version=$("$overlay" -c "import importlib.metadata as m; print(m.version('$engine'))")
  own_site=$("$py" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  # Appended after the venv's own site-packages, so this release's package shadows the base one.
  echo "$base_site" > "$own_site/zz-specprobe-base.pth"
  "$py" -m pip install -q --no-deps "$engine==$version" >&2
  if [ ${#extra[@]} -gt 0 ]; then
    "$py" -m pip install -q "${extra[@]}" >&2
  fi
  deps=$("$py" -c "import importlib.metadata as m; print(', '.join(f'{d} {m.version(d)}' for d in ('torch', 'transformers', 'pydantic')))")
  note="pip install --no-deps $engine==$version over the dependencies of the $engine $base_version venv ($deps)"
  if [ ${#extra[@]} -gt 0 ]; then
    note="$note, plus pip install ${extra[*]}"
  fi
else
  "$py" -m pip install -q --upgrade pip >&2
  "$py" -m pip install -q "$engine==$version" >&2
  note="pip install $engine==$version (own throwaway venv)"
fi
python -m specprobe.schema.snapshot "$engine" "$py" --install "$note"
