"""vLLM's ``--config`` YAML parsed into a deployment, the way vLLM turns it into arguments.

vLLM's ``FlexibleArgumentParser.load_config_file`` (v0.33.0, ``vllm/utils/argparse_utils.py``) makes
each key a flag: ``true`` -> ``--key``, ``false`` -> ``--no-key`` where that flag exists, a list ->
``--key item...``, a mapping -> ``--key '<JSON>'``, anything else -> ``--key str(value)``; the
arguments go after ``serve MODEL``. So ``speculative_config`` may be a mapping or a JSON string.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specprobe.deploy.argv import detect_engine
from specprobe.deploy.model import Deployment, deployment_from_argv
from specprobe.deploy.yamlsource import LineDict
from specprobe.findings import Finding

# Keys that mark a mapping as a vLLM config (any serve flag would do; these are the ones that matter).
_MARKERS = ("model", "speculative_config", "speculative-config", "served_model_name", "served-model-name",
            "tensor_parallel_size", "tensor-parallel-size", "max_model_len", "max-model-len")


def is_vllm_config(documents: list[Any]) -> bool:
    first = documents[0] if len(documents) == 1 else None
    if not isinstance(first, dict) or not any(key in first for key in _MARKERS):
        return False
    # vLLM's config holds flag values: a `model` that is a mapping (a recipe's metadata) is no flag.
    return not isinstance(first.get("model"), dict | list)


def _jsonable(value: Any) -> Any:
    """YAML values as JSON can carry them: mapping keys and scalars JSON lacks (dates) become text."""
    if isinstance(value, dict):
        plain = (str, int, float, bool)
        return {k if k is None or isinstance(k, plain) else str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """``value`` as the JSON text vLLM would receive for a mapping in its config file."""
    return json.dumps(_jsonable(value), default=str)


def config_arguments(config: LineDict) -> tuple[list[str], list[int | None]]:
    """The arguments vLLM makes of the file, with the line of each."""
    words: list[str] = []
    lines: list[int | None] = []
    for key, value in config.items():
        line = config.line_of(key)
        flag = f"--{key}"
        if isinstance(value, bool):
            if value:
                words.append(flag)
                lines.append(line)
            continue  # --no-KEY exists only for some flags; leaving it out changes no speculative setting
        if isinstance(value, list):
            if value:
                words.append(flag)
                lines.append(line)
                for item in value:
                    words.append(str(item))
                    lines.append(line)
            continue
        words.append(flag)
        lines.append(line)
        words.append(json_text(value) if isinstance(value, dict) else str(value))
        lines.append(line)
    return words, lines


def splice_config(
    argv: list[str], lines: list[int | None], config: LineDict, config_line: int | None = None
) -> tuple[list[str], list[int | None]]:
    """``argv`` with its ``--config FILE`` replaced by the file's arguments where vLLM puts them: after
    ``serve MODEL`` (the command line's later flags still win). ``config_line`` replaces the lines of
    the file's keys when they are in another file than the launch."""
    detected = detect_engine(argv)
    index = next((i for i, word in enumerate(argv) if word.split("=", 1)[0] == "--config"), None)
    if detected is None or index is None:
        return argv, lines
    width = 1 if "=" in argv[index] else 2
    words, word_lines = config_arguments(config)
    if config_line is not None:
        word_lines = [config_line] * len(words)
    start = detected[1]
    insert_at = start + 1 if start < len(argv) and not argv[start].startswith("-") else start
    rest = [(w, ln) for i, (w, ln) in enumerate(zip(argv, lines, strict=True)) if not index <= i < index + width]
    kept = [w for w, _ in rest]
    kept_lines = [ln for _, ln in rest]
    insert_at = min(insert_at, len(kept))
    return (
        kept[:insert_at] + words + kept[insert_at:],
        kept_lines[:insert_at] + word_lines + kept_lines[insert_at:],
    )


def config_path(argv: list[str]) -> str | None:
    """The value of ``--config`` in ``argv``."""
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if flag == "--config":
            return value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return None


def annotate_speculative(deployment: Deployment, config: LineDict) -> None:
    """The line of each key of a ``speculative_config`` mapping, for findings about one key."""
    for key in ("speculative_config", "speculative-config"):
        settings = config.get(key)
        if isinstance(settings, LineDict):
            for field, _ in settings.items():
                deployment.source.set(f"speculative.{field}", settings.line_of(field))
            deployment.source.set("method", settings.lines.get("method"))
            deployment.source.set("draft", settings.lines.get("model"))


def parse_vllm_config(documents: list[Any], file: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    config = documents[0]
    if not isinstance(config, LineDict):
        return [], []
    words, lines = config_arguments(config)
    deployment = deployment_from_argv(
        ["vllm", "serve", *words],
        file,
        config.line,
        argv_lines=[config.line, config.line, *lines],
        name=f"vllm-config/{Path(file).name}",
        base_dir=base_dir,
    )
    annotate_speculative(deployment, config)
    deployment.findings = [deployment.locate(f) for f in deployment.findings]
    return [deployment], []
