"""Run inside an engine's interpreter: parse each command with the release's own launch parser.

``python -I oracle.py ENGINE`` reads a JSON list of argument lists (what follows the launcher) on stdin and
prints, per command, ``{"ok": bool, "error": the parser's error line or None}``. The parser is built
exactly as probes/cli_probe.py reads it (vLLM: ``vllm`` with the ``serve`` subparser, parsed as
``vllm serve ARGS``; SGLang: the parser ``prepare_server_args`` builds), so the labels are the release's.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

PROBES = Path(__file__).resolve().parents[2] / "specprobe" / "engines" / "probes"
sys.path.insert(0, str(PROBES))

import cli_probe  # noqa: E402


def main() -> None:
    engine = sys.argv[1]
    commands = json.loads(sys.stdin.read())
    problems: list[str] = []
    with cli_probe._common.stdout_to_stderr():
        if engine == "vllm":
            serve, _ = cli_probe.vllm_parser(problems)
            # The top-level parser ``vllm`` runs FlexibleArgumentParser.parse_args's argv rewrites once,
            # then hands the rest to the serve subparser, as ``vllm serve`` does.
            top = serve._specprobe_top if hasattr(serve, "_specprobe_top") else None
        else:
            serve, _ = cli_probe.sglang_parser(problems)
            top = None
        results = []
        for args in commands:
            stream = io.StringIO()
            try:
                with contextlib.redirect_stderr(stream):
                    if top is not None:
                        top.parse_args(["serve", *args])
                    else:
                        serve.parse_args(args)
            except SystemExit as exit_:
                lines = [line for line in stream.getvalue().splitlines() if ": error: " in line]
                error = lines[-1].split(": error: ", 1)[1] if lines else stream.getvalue().strip()[-300:]
                results.append({"ok": exit_.code in (0, None), "error": error if exit_.code else None})
                continue
            except Exception as exc:
                results.append({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
                continue
            results.append({"ok": True, "error": None})
    sys.stdout.write(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
