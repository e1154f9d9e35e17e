"""The whole launch command, judged by the release's own argparse semantics without the engine.

The release's launch parser is rebuilt from its whole-CLI snapshot (``specprobe.schema.cli``) as a real
``argparse.ArgumentParser``: the same option strings in the same order, ``allow_abbrev``, nargs,
choices, required options and mutually exclusive groups, with the type callables the snapshot names
mapped onto equivalents (``int``, ``json.loads``, vLLM's ``human_readable_int``, ``optional_type``
...). argparse itself then resolves prefixes, ambiguity, ``--flag=value``, ``--no-flag`` and repeated
options, and its error message is the one the engine would print. vLLM's FlexibleArgumentParser
rewrites argv before argparse sees it (``--max_model_len`` -> ``--max-model-len``, ``--cfg.key v`` ->
``--cfg '{"key": v}'``, ``-O3``); the snapshot records which of those rewrites the release does (asked
of its own parser class) and they are replayed here.

After argparse, the JSON values of options whose type builds a config class are checked key by key
against that class's fields (and value types, leniently: only what pydantic's lax mode refuses too).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from specprobe.compat.engine_facts import source_url
from specprobe.deploy.argv import detect_launcher, normalise_flag
from specprobe.deploy.model import Deployment
from specprobe.findings import Finding, Severity
from specprobe.rules import rule
from specprobe.schema.cli import (
    SAMPLE_VALUES,
    CliOption,
    CliSnapshot,
    ConfigTable,
    config_key_history,
    flag_history,
    nearest_cli,
    newer_cli,
)

_VLLM_ARGS = source_url("vllm", "0.33.0", "vllm/engine/arg_utils.py")
_VLLM_PARSER = source_url("vllm", "0.33.0", "vllm/utils/argparse_utils.py")
_SGLANG_ARGS = source_url("sglang", "0.5.23", "sglang/srt/server_args.py")
_ARGPARSE = "https://docs.python.org/3/library/argparse.html#allow-abbrev"

REFUSED = rule(
    "CLI-REFUSED",
    "lint",
    Severity.ERROR,
    "The release's own launch parser refuses the command (unrecognized or ambiguous option, invalid choice or "
    "type, missing value): the server never starts.",
    _VLLM_ARGS,
    _SGLANG_ARGS,
    _ARGPARSE,
)
CONFIG_KEY = rule(
    "CLI-CONFIG-KEY",
    "lint",
    Severity.ERROR,
    "A JSON-valued option (--compilation-config, --attention-config, ...) names a field its config class does "
    "not have, or gives a field a value of the wrong type: the release's parser refuses it.",
    _VLLM_ARGS,
)
DEPRECATED = rule(
    "CLI-DEPRECATED",
    "lint",
    Severity.WARNING,
    "An option the release accepts but logs as deprecated when used (its replacement named where the release "
    "names one).",
    _VLLM_PARSER,
    _SGLANG_ARGS,
)
NO_CLI_SNAPSHOT = rule(
    "CLI-SNAPSHOT",
    "lint",
    Severity.INFO,
    "No whole-CLI snapshot of the release: its command was checked with the nearest older release's parser, or "
    "only its speculative-decoding flags were checked.",
    _VLLM_ARGS,
    _SGLANG_ARGS,
)

# A value a deployment file leaves to its runtime ($VAR, ${VAR}, $(VAR), {{ .Values.x }}): unknown here.
_TEMPLATED = re.compile(r"\$\{?\(?[A-Za-z_]|\{\{")
_WHOLE_TEMPLATE = re.compile(r"^(\$\{?\(?[A-Za-z_][A-Za-z0-9_]*\)?\}?|\{\{.*\}\})$")
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class _Unknown:
    """A value the deployment leaves to its runtime: every type and choice accepts it."""

    def __repr__(self) -> str:
        return "<templated>"


UNKNOWN = _Unknown()


class _Choices(list[Any]):
    """Choices that also admit a templated value (argparse tests ``value not in choices``)."""

    def __contains__(self, value: object) -> bool:
        return value is UNKNOWN or list.__contains__(self, value)


class RefusalError(Exception):
    """What the rebuilt parser's ``error()`` was called with: the engine's own words."""

    def __init__(self, message: str, action: argparse.Action | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.action = action


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise RefusalError(message)


class _Recorded(argparse.Action):
    """Any recorded action: validity depends only on option strings, nargs, type and choices, which
    argparse checks before calling the action; the call records use and stores the value."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, option: CliOption | None = None, **kwargs: Any
    ) -> None:
        self.option = option
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        used = getattr(namespace, "_specprobe_used", None)
        if used is None:
            used = []
            namespace._specprobe_used = used
        used.append((self, option_string, values))
        deprecated = self.option.deprecated if self.option is not None else None
        if deprecated and deprecated.get("error"):
            # SGLang's DeprecatedAction with an error message stops the parser with it.
            parser.error(str(deprecated["error"]))
        setattr(namespace, self.dest, values)


def _human_readable_int(value: str) -> int:
    value = value.strip()
    match = _HUMAN_INT.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        try:
            return int(number) * _BINARY[suffix]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean to use "
                f"{number}{suffix.lower()} instead?"
            ) from None
    return int(value)


def _human_readable_int_or_auto(value: str) -> int:
    if value.strip() == "-1" or value.strip().lower() == "auto":
        return -1
    return _human_readable_int(value)


def _json_object_or_str(value: str) -> Any:
    if not re.match(r"(?s)^\s*{.*}\s*$", value):
        return value
    return None if value in ("", "None") else json.loads(value)


def _config_json(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid JSON: {exc}") from None


_NAMED: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "json.loads": json.loads,
    "loads": json.loads,
    "human_readable_int": _human_readable_int,
    "human_readable_int_or_auto": _human_readable_int_or_auto,
    "union_dict_and_str": _json_object_or_str,
    "parse_dataclass": _config_json,
    "from_cli": _config_json,
}
# Identity: any string is accepted.
_ANY = {"str", "bool", None}


def _from_signature(name: str, accepts: tuple[str, ...] | None) -> Callable[[str], Any] | None:
    """A type this module has no reading of: answer from the release's own answers to the probe's sample
    values (a sample it refused is refused), and accept every other value (it cannot be judged)."""
    if accepts is None:
        return None
    def convert(value: str) -> Any:
        if value in SAMPLE_VALUES and value not in accepts:
            raise ValueError(value)
        return value

    convert.__name__ = name
    return convert


def _type_callable(described: dict[str, Any] | None, accepts: tuple[str, ...] | None) -> Callable[[str], Any] | None:
    if not described:
        return None
    name = str(described.get("name"))
    wraps = [item for item in described.get("wraps") or () if isinstance(item, dict)]
    inner = _type_callable(wraps[0], None) if wraps else None
    if described.get("config") and name not in _NAMED:
        base: Callable[[str], Any] | None = _config_json
    elif name in ("_optional_type", "_parse_type"):
        # vLLM's optional_type(T) and parse_type(T) (engine/arg_utils.py): "" and "None" are None for the
        # former; a ValueError of T becomes "Value V cannot be converted to <T>." for both.
        optional = name == "_optional_type"
        inner_name = str(wraps[0].get("name")) if wraps else "?"
        shown = f"<class '{inner_name}'>" if inner_name in ("int", "float", "str") else inner_name

        def base(value: str) -> Any:
            if optional and value in ("", "None"):
                return None
            try:
                return inner(value) if inner is not None else value
            except ValueError:
                raise argparse.ArgumentTypeError(f"Value {value} cannot be converted to {shown}.") from None

    elif name in _NAMED:
        base = _NAMED[name]
    elif name in _ANY:
        return _lenient(None, name)
    else:
        base = _from_signature(name, accepts)
    return _lenient(base, name)


def _lenient(base: Callable[[str], Any] | None, name: str) -> Callable[[str], Any]:
    def convert(value: str) -> Any:
        if _TEMPLATED.search(value):
            return UNKNOWN
        try:
            return base(value) if base is not None else value
        except RecursionError:
            # JSON nested deeper than a parser follows: the engine's parser gives up on it too.
            raise argparse.ArgumentTypeError("the value is nested too deeply to be parsed") from None

    # argparse names the type in its message: "invalid int value: 'abc'".
    convert.__name__ = name
    return convert


def _kwargs(option: CliOption) -> dict[str, Any]:
    nargs = option.nargs
    kwargs: dict[str, Any] = {"action": _Recorded, "option": option, "default": argparse.SUPPRESS}
    if option.kind in ("help", "version", "store_true", "store_false", "store_const", "append_const", "count",
                       "boolean_optional"):
        nargs = 0
    kwargs["nargs"] = nargs
    if nargs == "?":
        kwargs["const"] = option.const
    if nargs != 0:
        kwargs["type"] = _type_callable(option.type, option.accepts)
        if option.choices is not None and option.choices_plain:
            kwargs["choices"] = _Choices(option.choices)
    if option.required:
        kwargs["required"] = True
    return kwargs


_PARSERS: dict[tuple[str, str, bool], _Parser] = {}


def parser_for(snapshot: CliSnapshot, *, positionals: bool = True) -> _Parser:
    """The rebuilt parser of a release, built once per process: parsing keeps no state in the parser
    (each parse has its own namespace), so a gate over a fleet reuses it."""
    key = (snapshot.engine, snapshot.version, positionals)
    if key not in _PARSERS:
        _PARSERS[key] = build_parser(snapshot, positionals=positionals)
    return _PARSERS[key]


def build_parser(snapshot: CliSnapshot, *, positionals: bool = True, prog: str | None = None) -> _Parser:
    """A real argparse parser equivalent, for parsing, to the release's launch parser."""
    parser = _Parser(
        prog=prog or str(snapshot.parser.get("prog") or snapshot.engine),
        allow_abbrev=snapshot.allow_abbrev,
        prefix_chars=str(snapshot.parser.get("prefix_chars") or "-"),
        add_help=False,
        exit_on_error=False,
    )
    groups: dict[str, Any] = {}
    for group in snapshot.exclusive:
        made = parser.add_mutually_exclusive_group(required=bool(group.get("required")))
        for dest in group.get("dests") or ():
            groups.setdefault(str(dest), made)
    for option in snapshot.options:
        if not option.flags:
            continue
        container = groups.get(option.dest, parser)
        container.add_argument(*option.flags, dest=option.dest, **_kwargs(option))
    if positionals:
        for option in snapshot.positionals:
            kwargs = _kwargs(option)
            kwargs.pop("required", None)
            parser.add_argument(option.dest, **kwargs)
    return parser


# ---- vLLM's FlexibleArgumentParser rewrites, replayed where the release does them -------------------


def _underscores(token: str) -> str:
    """``--max_model_len=4`` -> ``--max-model-len=4``: underscores between ``--`` and the first ``.``."""
    key, eq, value = token.partition("=")
    head, dot, tail = key[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + tail + eq + value


def _dotted_value(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        return text
    except ValueError:
        try:
            return _human_readable_int(text)
        except (ValueError, argparse.ArgumentTypeError):
            return text


def rewrite(argv: list[str], snapshot: CliSnapshot) -> list[str]:
    """argv as the release's FlexibleArgumentParser hands it to argparse."""
    features = snapshot.features
    flags = set(snapshot.option_strings())
    out: list[str] = []
    for index, token in enumerate(argv):
        if token.startswith("--") and features.get("underscore_flags"):
            out.append(_underscores(token))
        elif token.startswith("-O") and token != "-O" and not token.startswith("--"):
            level = token[3:] if token[2:3] == "=" else token[2:]
            if features.get("dash_O_optimization_level") and "--optimization-level" in flags:
                out.extend(["--optimization-level", level])
            else:
                out.append(token)
        elif token == "-O" and index + 1 < len(argv) and argv[index + 1] in {"0", "1", "2", "3"} and (
            features.get("dash_O_optimization_level") and "--optimization-level" in flags
        ):
            out.append("--optimization-level")
        else:
            out.append(token)
    if not features.get("dotted_json"):
        return out
    merged: dict[str, dict[str, Any]] = {}
    kept: list[str] = []
    skip = False
    for index, token in enumerate(out):
        if skip:
            skip = False
            continue
        if token.startswith("-") and "." in token.partition("=")[0]:
            key, eq, value = token.partition("=")
            if not eq:
                if index + 1 >= len(out):
                    kept.append(token)
                    continue
                value = out[index + 1]
                skip = True
            parsed: Any
            if key.endswith("+") and features.get("dotted_json_list_append"):
                key = key[:-1]
                parsed = value.split(",")
            else:
                parsed = _dotted_value(value)
            name, *path = key.split(".")
            target = merged.setdefault(name, {})
            for part in path[:-1]:
                nxt = target.get(part)
                target = nxt if isinstance(nxt, dict) else target.setdefault(part, {})
            if isinstance(parsed, list) and isinstance(target.get(path[-1]), list):
                target[path[-1]] = target[path[-1]] + parsed
            else:
                target[path[-1]] = parsed
            continue
        kept.append(token)
    for option_name, option_value in merged.items():
        kept.extend([option_name, json.dumps(option_value)])
    return kept


# ---- running the rebuilt parser -------------------------------------------------------------------


@dataclass
class CommandVerdict:
    """What the release's parser makes of the command: refusals (each as argparse words it), the
    options used (with the values given) and the snapshot it was judged by."""

    snapshot: CliSnapshot | None
    refusals: list[tuple[str, str | None]] = field(default_factory=list)  # (message, flag)
    used: list[tuple[CliOption, str, Any]] = field(default_factory=list)


def _resolve(parser: _Parser, token: str) -> tuple[argparse.Action | None, str | None, bool]:
    """(action, option string, explicit value given) argparse resolves ``token`` to; RefusalError when
    ambiguous. Python 3.12.7+ returns a list of candidates, earlier releases one tuple."""
    found: Any = parser._parse_optional(token)
    if isinstance(found, list):
        found = found[0] if found else None
    if not found:
        return None, None, False
    action, option_string = found[0], found[1]
    explicit = found[-1] if len(found) > 2 else None
    return action, option_string, explicit is not None


def _consumed(argv: list[str], index: int, action: argparse.Action | None, explicit: bool) -> int:
    """How many tokens from ``index`` belong to the option there (itself and its values)."""
    if action is None or explicit:
        return 1
    nargs = action.nargs
    following = 0
    while index + 1 + following < len(argv) and not argv[index + 1 + following].startswith("-"):
        following += 1
    if nargs is None:
        return 1 + min(1, following)
    if nargs == "?":
        return 1 + min(1, following)
    if isinstance(nargs, int):
        return 1 + min(nargs, following)
    return 1 + following


def _drop_offender(parser: _Parser, argv: list[str], refusal: RefusalError) -> tuple[list[str], str | None] | None:
    """argv without the tokens the refusal is about, and the flag as written; None when it cannot be
    pinned to a token (parsing stops there)."""
    message = refusal.message
    ambiguous = re.match(r"ambiguous option: (\S+?)(?:=\S*)? could match", message)
    for index, token in enumerate(argv):
        if not token.startswith("-") or token in {"-", "--"}:
            continue
        if ambiguous:
            if token.partition("=")[0] == ambiguous.group(1):
                takes_next = "=" not in token and index + 1 < len(argv) and not argv[index + 1].startswith("-")
                return argv[:index] + argv[index + 1 + int(takes_next):], ambiguous.group(1)
            continue
        try:
            action, _option, explicit = _resolve(parser, token)
        except RefusalError:
            continue
        if action is not None and action is refusal.action:
            return argv[:index] + argv[index + _consumed(argv, index, action, explicit):], token.partition("=")[0]
    return None


def _run(parser: _Parser, argv: list[str]) -> tuple[argparse.Namespace | None, list[str], RefusalError | None]:
    try:
        namespace, extras = parser.parse_known_args(argv)
    except RefusalError as refusal:
        return None, [], refusal
    except argparse.ArgumentError as error:
        action = _action_named(parser, error.argument_name) if error.argument_name else None
        return None, [], RefusalError(str(error), action)
    return namespace, extras, None


def _action_named(parser: _Parser, name: str) -> argparse.Action | None:
    for action in parser._actions:
        if argparse._get_action_name(action) == name:
            return action
    return None


def _unrecognized(extras: list[str]) -> list[tuple[str, str | None]]:
    """argparse's one "unrecognized arguments" line (quoted whole, as the engine prints it), once per
    offending option so that each finding points at its own flag."""
    if not extras:
        return []
    message = f"unrecognized arguments: {' '.join(extras)}"
    flags = [token.partition("=")[0] for token in extras if token.startswith("-")]
    return [(message, flag) for flag in dict.fromkeys(flags)] or [(message, None)]


def _without_splats(parser: _Parser, args: list[str]) -> list[str]:
    """``args`` without the tokens that are wholly a runtime variable standing where an option would
    (``$EXTRA_ARGS``): it may expand to any number of options. One that is an option's value stays."""
    kept: list[str] = []
    for index, token in enumerate(args):
        if _WHOLE_TEMPLATE.match(token) and index > 0:
            previous = args[index - 1]
            takes_value = False
            if previous.startswith("-") and "=" not in previous:
                try:
                    action = _resolve(parser, previous)[0]
                except RefusalError:
                    action = None
                takes_value = action is None or action.nargs != 0
            if not takes_value:
                continue
        elif _WHOLE_TEMPLATE.match(token):
            continue
        kept.append(token)
    return kept


_MODEL_OPTION = re.compile(r"^--model(=.+|$)")
_SERVED_NAME = re.compile(r"^--served[-_]model[-_]name(=.+|$)")
_CONFIG_OPTION = re.compile(r"^--config(=.+|$)")
MODEL_FIRST = (
    "`model` should be provided as the first positional argument when using `vllm serve`. "
    "i.e. `vllm serve <model> --<arg> <value>`."
)


def _model_missing(args: list[str], snapshot: CliSnapshot) -> bool:
    """vLLM's ``parse_args`` (0.18.0 on) raises ValueError for ``vllm serve`` with options first, a
    --served-model-name, no --model (which it would move to the front) and no --config."""
    if not snapshot.features.get("model_first_with_served_name") or not args or not args[0].startswith("-"):
        return False
    if any(_MODEL_OPTION.match(arg) or _CONFIG_OPTION.match(arg) for arg in args):
        return False
    return any(_SERVED_NAME.match(arg) for arg in args)


def judge(args: list[str], snapshot: CliSnapshot, *, positionals: bool = True, limit: int = 20) -> CommandVerdict:
    """Parse ``args`` (what follows the launcher) as the release would; every refusal, not just the
    first: after one, the offending option is dropped and parsing goes on."""
    verdict = CommandVerdict(snapshot=snapshot)
    if positionals and snapshot.engine == "vllm" and _model_missing(args, snapshot):
        # Raised before argparse runs: nothing else is parsed.
        verdict.refusals.append((f"ValueError: {MODEL_FIRST}", None))
        return verdict
    parser = parser_for(snapshot, positionals=positionals)
    argv = rewrite(_without_splats(parser, args), snapshot)
    for _ in range(limit):
        # A bare "--" ends the options for argparse as for the engine.
        namespace, extras, refusal = _run(parser, argv)
        if refusal is None:
            verdict.refusals.extend(_unrecognized(extras))
            for action, option_string, values in getattr(namespace, "_specprobe_used", []):
                if isinstance(action, _Recorded) and action.option is not None:
                    verdict.used.append((action.option, option_string or action.dest, values))
            return verdict
        dropped = _drop_offender(parser, argv, refusal)
        verdict.refusals.append((refusal.message, dropped[1] if dropped else None))
        if dropped is None or dropped[0] == argv:
            return verdict
        argv = dropped[0]
    return verdict


# ---- findings -----------------------------------------------------------------------------------------


def _did_you_mean(flag: str, snapshot: CliSnapshot) -> str:
    close = difflib.get_close_matches(flag, [f for f in snapshot.option_strings() if f.startswith("--")], n=2)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def _history_note(engine: str, flag: str, version: str) -> str:
    history = flag_history(engine, flag, version)
    if history.last_with is not None:
        gone = f", gone by {history.first_without}" if history.first_without else ""
        then = f"; use {history.replacement}" if history.replacement else ""
        return f" ({flag} was accepted up to {engine} {history.last_with}{gone}{then})"
    if history.first_with_after is not None:
        return f" ({flag} is accepted from {engine} {history.first_with_after} on)"
    return ""


def _refusal_finding(message: str, flag: str | None, snapshot: CliSnapshot, program: str) -> Finding:
    engine, version = snapshot.engine, snapshot.version
    hint = None
    detail = ""
    spelled = flag
    if flag is not None and flag.startswith("--") and snapshot.features.get("underscore_flags"):
        spelled = _underscores(flag)
    if spelled is not None and spelled.startswith("--") and spelled not in snapshot.by_flag():
        detail = _history_note(engine, spelled, version)
        if message.startswith("unrecognized"):
            hint = (detail.strip(" ()") or "") + _did_you_mean(spelled, snapshot)
            hint = hint.lstrip("; ") or None
    several = message.startswith("unrecognized") and flag is not None and message.count(" -") > 1
    about = f" ({flag}{detail[2:-1] and ': ' + detail[2:-1]})" if several else detail
    said = message if message.startswith("ValueError") else f"{program}: error: {message}"
    text = f"{engine} {version} would not start: {said}{about}"
    return REFUSED.finding(text, key=flag, hint=hint)


def _config_findings(snapshot: CliSnapshot, option: CliOption, value: Any, program: str) -> list[Finding]:
    """The config class's refusals of ``value``, in pydantic's words as the release prints them:
    ``argument --attention-config/-ac: 1 validation error for AttentionConfig: KEY: Unexpected keyword
    argument`` (one finding per refused key; pydantic counts them all in one message)."""
    config = option.config_class()
    table = snapshot.configs.get(config) if config else None
    if table is None or value is UNKNOWN or value is None:
        return []
    findings = []
    argument = "/".join(option.flags)
    for path, problem, hint in _check_config(snapshot, table, value, []):
        where = ".".join(path)
        findings.append(
            CONFIG_KEY.finding(
                f"{snapshot.engine} {snapshot.version} would not start: {program}: error: argument {argument}: "
                f"1 validation error for {table.short_name}: {where + ': ' if where else ''}{problem}",
                key=option.flags[0] if option.flags else None,
                hint=hint,
            )
        )
    return findings


def _check_config(
    snapshot: CliSnapshot, table: ConfigTable, value: Any, path: list[str]
) -> list[tuple[list[str], str, str | None]]:
    """(key path, problem, hint) for each part of ``value`` the config class refuses."""
    if not isinstance(value, dict):
        return [(path, f"Input should be a dictionary or an instance of {table.short_name}", None)]
    problems: list[tuple[list[str], str, str | None]] = []
    accepted = [name for name, spec in table.fields.items() if spec.get("init", True)]
    for key, item in value.items():
        spec = table.fields.get(key)
        if spec is None or not spec.get("init", True):
            if table.extra != "forbid":
                continue
            close = difflib.get_close_matches(key, accepted, n=1)
            last = config_key_history(snapshot.engine, table.short_name, key, snapshot.version)
            history = f" ({table.short_name}.{key} was accepted up to {snapshot.engine} {last})" if last else ""
            hint = f"did you mean {close[0]!r}?" if close else None
            problems.append(([*path, key], f"Unexpected keyword argument{history}", hint))
            continue
        nested = spec.get("config")
        if nested and isinstance(item, dict) and nested in snapshot.configs:
            problems.extend(_check_config(snapshot, snapshot.configs[nested], item, [*path, key]))
            continue
        problem = _value_problem(spec.get("type") or {}, item)
        if problem:
            problems.append(([*path, key], problem, None))
    return problems


_NUMBER_TEXT = re.compile(r"^\s*[-+]?\d+(\.\d*)?([eE][-+]?\d+)?\s*$")
_BOOL_TEXT = {"0", "1", "true", "false", "yes", "no", "on", "off", "t", "f", "y", "n"}


def _fits(schema: dict[str, Any], value: Any) -> bool | None:
    """Whether pydantic's lax mode takes ``value`` for ``schema``; None when it cannot be told here."""
    if "anyOf" in schema:
        answers = [_fits(member, value) for member in schema["anyOf"] if isinstance(member, dict)]
        if any(answer is not False for answer in answers):
            return True if all(answer is not None for answer in answers) or True in answers else None
        return False
    if "enum" in schema:
        return value in schema["enum"]
    kind = schema.get("type")
    if kind is None:
        return None
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool) or value in (0, 1) or (isinstance(value, str) and value.lower() in _BOOL_TEXT)
    if kind == "integer":
        if isinstance(value, bool):
            return True  # lax mode takes a bool as an int
        if isinstance(value, int):
            return True
        if isinstance(value, float):
            return value.is_integer()
        return isinstance(value, str) and bool(re.fullmatch(r"\s*[-+]?\d+\s*", value))
    if kind == "number":
        return isinstance(value, (int, float)) or (isinstance(value, str) and bool(_NUMBER_TEXT.match(value)))
    if kind == "string":
        if "x-enum-names" in schema:
            return None  # parsed by name by the engine, spellings vary
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return None


def _value_problem(schema: dict[str, Any], value: Any) -> str | None:
    if _fits(schema, value) is not False:
        return None
    if "enum" in schema:
        return f"{json.dumps(value)} is not one of {', '.join(json.dumps(v) for v in schema['enum'])}"
    kinds = [m.get("type") for m in schema.get("anyOf", [schema]) if isinstance(m, dict) and m.get("type")]
    return f"{json.dumps(value)[:60]} is not a valid {' or '.join(str(k) for k in kinds) or 'value'}"


def _deprecation_finding(snapshot: CliSnapshot, option: CliOption, spelled: str) -> Finding:
    deprecated = option.deprecated or {}
    new_flag = deprecated.get("new_flag")
    if snapshot.engine == "sglang":
        said = f"'{spelled}' is deprecated and will be removed in a future release."
        if new_flag:
            said += f" Use '{new_flag}' instead."
    else:
        said = f"argument '{option.dest}' is deprecated"
    hint = option.help if option.help and option.help != "==SUPPRESS==" else None
    return DEPRECATED.finding(
        f"{snapshot.engine} {snapshot.version} accepts {spelled} but logs: {said}", key=spelled, hint=hint
    )


def _warns(snapshot: CliSnapshot, option: CliOption, spelled: str, values: Any) -> bool:
    """Whether using a deprecated option logs. An engine-defined action (SGLang's Deprecated*Action)
    warns whenever it is called. vLLM's parser on Python < 3.13 warns only when the parsed value differs
    from the default (FlexibleArgumentParser.parse_known_args); argparse 3.13+ whenever it is used."""
    if option.kind == "custom" or snapshot.engine != "vllm":
        return True
    python = str(snapshot.provenance.get("python") or "3.11")
    if tuple(int(part) for part in python.split(".")[:2] if part.isdigit()) >= (3, 13):
        return True
    stored: Any
    if option.kind == "boolean_optional":
        stored = not spelled.startswith("--no-")
    elif option.kind == "store_true":
        stored = True
    elif option.kind == "store_false":
        stored = False
    elif option.kind == "store_const":
        stored = option.const
    else:
        stored = values
    if stored is UNKNOWN:
        return False
    return bool(stored != option.default)


def check_args(
    engine: str,
    version: str,
    args: list[str],
    *,
    program: str,
    positionals: bool = True,
) -> list[Finding]:
    """Findings for the engine arguments ``args`` (after the launcher) judged by ``engine`` ``version``'s
    launch parser; a CLI-SNAPSHOT info when that release has no snapshot of its own. The verdict of one
    command is computed once per process (the replicas of a fleet repeat it); each call gets copies,
    which the caller may stamp with its own file and line."""
    key = (engine, version, tuple(args), positionals, program)
    if key not in _VERDICTS:
        if len(_VERDICTS) >= _VERDICT_LIMIT:
            _VERDICTS.clear()
        _VERDICTS[key] = _check_args(engine, version, args, program=program, positionals=positionals)
    return [replace(finding, evidence=list(finding.evidence)) for finding in _VERDICTS[key]]


_VERDICTS: dict[tuple[Any, ...], list[Finding]] = {}
_VERDICT_LIMIT = 4096


def _check_args(engine: str, version: str, args: list[str], *, program: str, positionals: bool) -> list[Finding]:
    snapshot, note = nearest_cli(engine, version)
    findings: list[Finding] = []
    if note is not None:
        findings.append(NO_CLI_SNAPSHOT.finding(note))
    if snapshot is None:
        return findings
    verdict = judge(args, snapshot, positionals=positionals)
    # Judged by an older release's parser: an option the next newer snapshot has may be one the release
    # itself added, so its absence is no certain refusal.
    newer = newer_cli(engine, version) if note is not None else None
    # The release prints its parser's prog ("vllm serve", "sglang serve"), whichever launcher ran it.
    program = str(snapshot.parser.get("prog") or program)
    for message, flag in verdict.refusals:
        finding = _refusal_finding(message, flag, snapshot, program)
        if newer is not None and flag is not None and message.startswith("unrecognized"):
            spelled = _underscores(flag) if snapshot.features.get("underscore_flags") else flag
            if spelled in newer.by_flag():
                finding.severity = Severity.INFO
                finding.message = (
                    f"{spelled} is not in {engine} {snapshot.version}'s parser but is in {newer.version}'s: whether "
                    f"{engine} {version} accepts it cannot be told from the shipped snapshots"
                )
        findings.append(finding)
    seen_deprecated: set[str] = set()
    last_config: dict[str, tuple[CliOption, Any, str]] = {}
    for option, spelled, values in verdict.used:
        if (
            option.deprecated
            and not option.deprecated.get("error")
            and option.dest not in seen_deprecated
            and _warns(snapshot, option, spelled, values)
        ):
            seen_deprecated.add(option.dest)
            findings.append(_deprecation_finding(snapshot, option, spelled))
        if option.config_class():
            last_config[option.dest] = (option, values, spelled)  # the last occurrence wins, as in argparse
    for option, values, _spelled in last_config.values():
        findings.extend(_config_findings(snapshot, option, values, program))
    return [_pinned(finding, snapshot) for finding in findings]


_SOURCES = {
    _VLLM_ARGS: ("vllm", "vllm/engine/arg_utils.py"),
    _VLLM_PARSER: ("vllm", "vllm/utils/argparse_utils.py"),
    _SGLANG_ARGS: ("sglang", "sglang/srt/server_args.py"),
}


def _pinned(finding: Finding, snapshot: CliSnapshot) -> Finding:
    """The finding citing the engine source of the release judged, and only that engine's."""
    evidence = []
    for url in finding.evidence:
        source = _SOURCES.get(url)
        if source is None:
            evidence.append(url)
        elif source[0] == snapshot.engine:
            evidence.append(source_url(snapshot.engine, snapshot.version, source[1]))
    finding.evidence = evidence
    return finding


# The launchers whose argument vector goes to the engine's own launch parser unchanged (names as in
# data/launchers.yaml), and whether that parser takes the positional model (``vllm serve MODEL``). Other
# launchers (Dynamo workers, the SGLang router) build their own parsers around the engine's.
ENGINE_PARSERS = {
    "vllm serve": True,
    "python -m vllm.entrypoints.cli.main serve": True,
    "python -m vllm.entrypoints.openai.api_server": False,
    "sglang serve": True,
    "python -m sglang.launch_server": True,
}
_SPECULATIVE_UNKNOWN = "LINT-UNKNOWN-FLAG"


def check_deployment(deployment: Deployment, version: str, earlier: Sequence[Finding] = ()) -> list[Finding]:
    """The whole-command findings of ``deployment``'s launch judged by ``version``, each on the line of
    the flag it is about. A flag the speculative-only check (``earlier``) already reported unknown is
    not reported twice."""
    command = deployment.command
    if command is None or command.launcher not in ENGINE_PARSERS:
        return []
    detected = detect_launcher(deployment.argv)
    if detected is None:
        return []
    launcher, start, _env = detected
    program = launcher.name.removeprefix("python -m ")
    reported = {f.key for f in earlier if f.rule == _SPECULATIVE_UNKNOWN and f.key}
    findings = []
    for finding in check_args(
        command.engine, version, deployment.argv[start:], program=program, positionals=ENGINE_PARSERS[launcher.name]
    ):
        if finding.key and normalise_flag(finding.key) in reported and finding.rule == REFUSED.id:
            continue
        if deployment.file is not None and finding.key:
            finding.line = deployment.flag_line(finding.key, value=finding.rule == CONFIG_KEY.id)
        findings.append(deployment.locate(finding, "command"))
    return findings
