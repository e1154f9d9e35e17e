"""Probe run inside SGLang's interpreter: prints SGLang's speculative-decoding surface as one JSON object.

stdlib + SGLang only. The options come from SGLang's own argparse parser (``ServerArgs.add_cli_args``),
the algorithms from ``SpeculativeAlgorithm``; each part degrades on its own into ``problems``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import platform
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

# Run as a script under the engine's interpreter (with -I): the shared helpers sit next to it.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

# Model classes that propose tokens for a target rather than serve alone.
DRAFT_NAME_MARKERS = ("Eagle", "EAGLE", "NextN", "MTP", "DFlash", "DSpark", "Draft", "Medusa")


def extract_options(problems: list[str]) -> list[dict[str, Any]]:
    try:
        server_args = importlib.import_module("sglang.srt.server_args")
        parser = argparse.ArgumentParser(add_help=False)
        server_args.ServerArgs.add_cli_args(parser)
    except Exception as exc:
        problems.append(f"cli options: {type(exc).__name__}: {exc}")
        return []
    options = []
    for action in parser._actions:
        if any(flag.startswith("--speculative") for flag in action.option_strings) or action.dest.startswith(
            "speculative_"
        ):
            options.append(_common.action_record(action))
    return options


def reserved_from_source(enum_class: Any, members: set[str]) -> list[str]:
    """Upper-case names ``from_string`` maps onto a member (older releases spell NEXTN inline)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(enum_class.from_string)))
    except Exception:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.isupper() and text.replace("_", "").isalnum() and text not in members and text not in found:
                found.append(text)
    return found


def extract_algorithms(problems: list[str]) -> tuple[list[str], list[str], str]:
    try:
        spec_info = importlib.import_module("sglang.srt.speculative.spec_info")
        enum_class = spec_info.SpeculativeAlgorithm
    except Exception as exc:
        problems.append(f"algorithms: {type(exc).__name__}: {exc}")
        return [], [], "unavailable"
    members = [member.name for member in enum_class if member.name != "NONE"]
    reserved = None
    for module_name in ("sglang.srt.speculative.spec_registry", "sglang.srt.speculative.spec_info"):
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        aliases = getattr(module, "_RESERVED_ALIASES", None)
        if aliases is not None:
            reserved = sorted(str(alias) for alias in aliases)
            source = f"{module_name}._RESERVED_ALIASES"
            break
    if reserved is None:
        reserved = reserved_from_source(enum_class, set(members) | {"NONE"})
        source = "SpeculativeAlgorithm.from_string"
    return members, reserved, source


def entry_classes(tree: ast.Module) -> list[str]:
    """Names a model module registers: ``EntryClass = X`` or ``EntryClass = [X, Y]``."""
    names: list[str] = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "EntryClass" for t in node.targets)):
            continue
        values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
        names.extend(value.id for value in values if isinstance(value, ast.Name))
    return names


def extract_draft_architectures(problems: list[str]) -> list[str]:
    """Draft-capable classes of SGLang's model registry, read from each module's ``EntryClass``.

    The registry imports every model module and silently drops those whose kernels do not import on
    this machine (no GPU); reading ``EntryClass`` statically lists what the release ships.
    """
    try:
        spec = importlib.util.find_spec("sglang.srt.models")
        folders = list(spec.submodule_search_locations or []) if spec else []
    except Exception as exc:
        problems.append(f"draft architectures: {type(exc).__name__}: {exc}")
        return []
    names: list[str] = []
    for folder in folders:
        for module in sorted(Path(folder).glob("*.py")):
            try:
                tree = ast.parse(module.read_text(encoding="utf-8-sig"))  # some modules start with a BOM
            except (OSError, SyntaxError, UnicodeDecodeError):
                # SGLang's registry skips a module that does not import; so does this reading.
                continue
            names.extend(name for name in entry_classes(tree) if name not in names)
    if not names:
        problems.append("draft architectures: no EntryClass found in sglang.srt.models")
    return [name for name in names if any(marker in name for marker in DRAFT_NAME_MARKERS)]


def main() -> None:
    started = time.monotonic()
    problems = []
    if importlib.util.find_spec("sglang") is None:
        _common.reply({"error": "not_installed", "engine": "sglang", "interpreter": sys.executable})
        sys.exit(3)
    with _common.stdout_to_stderr():
        import sglang

        imported = time.monotonic()
        options = extract_options(problems)
        algorithms, reserved, reserved_source = extract_algorithms(problems)
        draft_architectures = extract_draft_architectures(problems)
    versions = _common.distribution_versions("sglang", "torch", "transformers", "pydantic")
    _common.reply(
        {
            "engine": "sglang",
            "version": getattr(sglang, "__version__", None) or versions["sglang"],
            "options": options,
            "algorithms": algorithms,
            "reserved_aliases": reserved,
            "reserved_aliases_source": reserved_source,
            "draft_architectures": draft_architectures,
            "problems": problems,
            "provenance": {
                "engine_version": versions["sglang"],
                "parser": "sglang.srt.server_args.ServerArgs.add_cli_args",
                "python": platform.python_version(),
                "interpreter": sys.executable,
                "dependencies": versions,
                "import_seconds": round(imported - started, 2),
                "probe_seconds": round(time.monotonic() - started, 2),
            },
        }
    )


if __name__ == "__main__":
    main()
