"""SGLang's ``--config FILE`` (YAML) spliced into the launch, the way SGLang turns it into arguments.

``ConfigArgumentMerger`` (SGLang 0.5.23, ``sglang/srt/utils/server_args_config_parser.py``), run by
``prepare_server_args`` when ``--config`` is in argv, makes each key ``--KEY`` as written: a boolean is
``--KEY`` alone for a store_true option (``false`` leaves it out) and ``--KEY true|false`` otherwise, a
list ``--KEY item...``, a mapping ``--KEY '<JSON>'``, anything else ``--KEY str(value)``. The file's
arguments go before every command-line argument (``config_args + before + after``), so the command
line wins. Dynamo's SGLang workers mount such a file from a ConfigMap (``--config
/etc/sglang/worker.yaml``): its speculative settings live there.
"""

from __future__ import annotations

import json
from functools import cache

from specprobe.deploy.argv import detect_engine
from specprobe.deploy.yamlsource import LineDict
from specprobe.schema.cli import cli_versions, load_cli


@cache
def _store_true_keys() -> frozenset[str]:
    """Config keys SGLang treats as store_true flags (dest and each long option, dashes as
    underscores), read from the newest whole-CLI snapshot of SGLang."""
    versions = cli_versions("sglang")
    snapshot = load_cli("sglang", versions[-1]) if versions else None
    if snapshot is None:
        return frozenset()
    keys: set[str] = set()
    for option in snapshot.options:
        if option.kind == "store_true":
            keys.add(option.dest)
            keys.update(flag[2:].replace("-", "_") for flag in option.flags if flag.startswith("--"))
    return frozenset(keys)


def _text(value: object) -> str:
    return json.dumps(value) if isinstance(value, dict) else str(value)


def sglang_config_arguments(config: LineDict) -> tuple[list[str], list[int | None]]:
    """The arguments SGLang makes of the file, with the line of each."""
    store_true = _store_true_keys()
    words: list[str] = []
    lines: list[int | None] = []

    def add(*items: str, line: int | None) -> None:
        words.extend(items)
        lines.extend([line] * len(items))

    for key, value in config.items():
        line = config.line_of(key)
        flag = f"--{key}"
        if isinstance(value, bool):
            if str(key).replace("-", "_") in store_true:
                if value:
                    add(flag, line=line)
            else:
                add(flag, str(value).lower(), line=line)
        elif isinstance(value, list):
            if value:
                add(flag, *(str(item) for item in value), line=line)
        else:
            add(flag, _text(value), line=line)
    return words, lines


def splice_sglang_config(
    argv: list[str], lines: list[int | None], config: LineDict, config_line: int | None = None
) -> tuple[list[str], list[int | None]]:
    """``argv`` with ``--config FILE`` replaced by the file's arguments, placed before the command line's
    own (SGLang only reads ``--config FILE`` as two words: ``--config=FILE`` is left as written)."""
    detected = detect_engine(argv)
    index = next((i for i, word in enumerate(argv) if word == "--config"), None)
    if detected is None or index is None or index + 1 >= len(argv):
        return argv, lines
    words, word_lines = sglang_config_arguments(config)
    if config_line is not None:
        word_lines = [config_line] * len(words)
    start = detected[1]
    kept = argv[:index] + argv[index + 2 :]
    kept_lines = lines[:index] + lines[index + 2 :]
    return kept[:start] + words + kept[start:], kept_lines[:start] + word_lines + kept_lines[start:]
