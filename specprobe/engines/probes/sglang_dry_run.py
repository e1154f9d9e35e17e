"""Dry run inside SGLang's interpreter: build and resolve ``ServerArgs`` of a launch command, start nothing.

stdlib + SGLang only. ``prepare_server_args`` parses the command with SGLang's own parser and builds
``ServerArgs``; releases that resolve settings in a pipeline (``resolve_once``, 0.5.2x) then run it,
older ones check in ``__post_init__`` while building. Whatever SGLang raises comes back as JSON.

Usage: python -I -B sglang_dry_run.py REQUEST_JSON, where the request is
``{"argv": [args after "python -m sglang.launch_server"], "device": "cpu" | null}``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

# Run as a file under `python -I`, which leaves the script's folder off sys.path: the shared helpers
# (_common.py, _errors.py) sit beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _errors


def has_accelerator() -> bool:
    """Whether torch sees a device SGLang can resolve its defaults for (CUDA/ROCm, XPU, NPU, MPS)."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return False
    for name in ("cuda", "xpu", "npu", "mps"):
        backend = getattr(torch, name, None)
        available = getattr(backend, "is_available", None)
        try:
            if callable(available) and available():
                return True
        except Exception:
            continue
    return False


def _device_flag(argv: list[str]) -> str | None:
    """The value of the command's last --device, if any."""
    found = None
    for index, item in enumerate(argv):
        if item == "--device" and index + 1 < len(argv):
            found = argv[index + 1]
        elif item.startswith("--device="):
            found = item.split("=", 1)[1]
    return found


def _without_device(argv: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
        elif item == "--device":
            skip = True
        elif not item.startswith("--device="):
            kept.append(item)
    return kept


def summary_of(server_args: Any) -> dict[str, Any]:
    names = (
        "speculative_algorithm",
        "speculative_draft_model_path",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
        "attention_backend",
        "device",
        "page_size",
        "dtype",
    )
    resolved: dict[str, Any] = {}
    resolved_dict = getattr(server_args, "resolved_dict", None)
    if callable(resolved_dict):
        # 0.5.2x keeps resolved values apart from the declared ones; the resolved ones are what runs.
        try:
            resolved = dict(resolved_dict())
        except Exception:
            resolved = {}
    return {name: _common.json_value(resolved.get(name, getattr(server_args, name, None))) for name in names}


def dry_run(argv: list[str], device: str | None) -> dict[str, Any]:
    stages: dict[str, float] = {}
    started = time.monotonic()
    platform_how = "detected"
    given = _device_flag(argv)
    if given != "cpu" and (device == "cpu" or not has_accelerator()):
        # SGLang resolves its defaults for a device and gives up without one; its CPU engine resolves
        # the same speculative settings (topk, steps, draft tokens) with CPU defaults.
        argv = [*_without_device(argv), "--device", "cpu"]
        platform_how = "cpu-requested" if device == "cpu" else "cpu-substituted"
    stage = "parse"
    try:
        server_args_module = importlib.import_module("sglang.srt.server_args")
        stages["import"] = round(time.monotonic() - started, 2)
        _errors.keep_parser_errors()
        server_args = server_args_module.prepare_server_args(argv)
        stage = "resolve"
        resolve = getattr(server_args, "resolve_once", None)
        if callable(resolve):
            resolve()
        stages["resolve"] = round(time.monotonic() - started, 2)
    except (Exception, SystemExit) as exc:  # a SystemExit from a check is SGLang refusing too
        error = _errors.describe_error(exc, "sglang")
        return {"ok": False, "stage": stage, "platform": platform_how, "stages": stages, "error": error}
    return {
        "ok": True,
        "stage": "done",
        "platform": platform_how,
        "stages": stages,
        "error": None,
        "summary": summary_of(server_args),
    }


def main() -> None:
    _errors.run_main("sglang", ("sglang", "torch", "transformers"), dry_run)


if __name__ == "__main__":
    main()
