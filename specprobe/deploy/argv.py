"""A serve command's argument vector read as the engine's argparse would, without importing the engine.

Recognised launchers: ``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``,
``python -m vllm.entrypoints.cli.main serve``, ``sglang serve``, ``python -m sglang.launch_server``,
each optionally behind ``exec``, ``env [VAR=x ...]`` or ``VAR=x`` prefixes. Each flag remembers the
index of the token it came from, so that a deployment file can point at the line of that token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from specprobe.findings import SpecprobeError

SGLANG_MODULES = ("sglang.launch_server", "sglang.srt.server")
VLLM_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main", "vllm.entrypoints.api_server")
# Short spellings both engines accept for flags that matter here.
SHORT_FLAGS = {"-sc": "--speculative-config", "-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Python options that take a separate argument (python -X importtime -m ...).
_PYTHON_OPTIONS_WITH_VALUE = ("-X", "-W", "-Q")


@dataclass
class ServeCommand:
    """A parsed serve command: which engine, which model, and its flags (last value wins).

    ``positions`` maps a normalised flag to the index (in the argv given to ``parse_command``) of the
    token that set it, ``value_positions`` to the index of its value's token; ``model_index`` is the
    index of the positional model, when there is one.
    """

    engine: str
    model: str | None
    flags: dict[str, str | None] = field(default_factory=dict)
    spellings: dict[str, str] = field(default_factory=dict)  # normalised flag -> as written
    positions: dict[str, int] = field(default_factory=dict)
    value_positions: dict[str, int] = field(default_factory=dict)
    model_index: int | None = None
    env: dict[str, str] = field(default_factory=dict)  # VAR=x prefixes of the command itself

    def get(self, flag: str) -> str | None:
        return self.flags.get(flag)

    def has(self, flag: str) -> bool:
        return flag in self.flags


def normalise_flag(flag: str) -> str:
    """vLLM and SGLang accept --snake_case and --kebab-case alike."""
    return "--" + flag[2:].replace("_", "-") if flag.startswith("--") else SHORT_FLAGS.get(flag, flag)


def _skip_prefixes(argv: list[str]) -> tuple[int, dict[str, str]]:
    """Index of the launcher after ``exec``, ``env [-i] VAR=x`` and ``VAR=x`` prefixes, and those variables."""
    env: dict[str, str] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in ("exec", "env", "nohup", "command") or (token.startswith("-") and i > 0 and argv[i - 1] == "env"):
            i += 1
        elif _ASSIGNMENT.match(token):
            name, _, value = token.partition("=")
            env[name] = value
            i += 1
        else:
            break
    return i, env


def _python_module(argv: list[str], start: int) -> tuple[str, int] | None:
    """For ``python [opts] -m MODULE ...`` the module and the index after it."""
    head = PurePosixPath(argv[start]).name
    if not re.fullmatch(r"python(\d+(\.\d+)?)?", head):
        return None
    i = start + 1
    while i < len(argv):
        token = argv[i]
        if token == "-m":
            return (argv[i + 1], i + 2) if i + 1 < len(argv) else None
        if token.startswith("-m") and len(token) > 2:
            return token[2:], i + 1
        if token in _PYTHON_OPTIONS_WITH_VALUE:
            i += 2
        elif token.startswith("-"):
            i += 1
        else:
            return None  # python script.py: not an engine launcher we know
    return None


def detect_engine(argv: list[str]) -> tuple[str, int, dict[str, str]] | None:
    """(engine, index of the first engine argument, env prefixes) for a serve command, else None."""
    start, env = _skip_prefixes(argv)
    if start >= len(argv):
        return None
    head = PurePosixPath(argv[start]).name
    following = argv[start + 1] if start + 1 < len(argv) else None
    if head in ("vllm", "sglang") and following == "serve":
        return head, start + 2, env
    module = _python_module(argv, start)
    if module is None:
        return None
    name, rest = module
    if name in SGLANG_MODULES:
        return "sglang", rest, env
    if name in VLLM_MODULES:
        return "vllm", rest + 1 if argv[rest : rest + 1] == ["serve"] else rest, env
    return None


def looks_like_serve_command(argv: list[str]) -> bool:
    return detect_engine(argv) is not None


def parse_command(argv: list[str]) -> ServeCommand:
    """Parse the argument vector as the engine's argparse would; SpecprobeError when it is no serve command."""
    if not argv:
        raise SpecprobeError("no command to lint: give it after --, e.g. specprobe lint -- vllm serve MODEL ...")
    detected = detect_engine(argv)
    if detected is None:
        raise SpecprobeError(
            "not a serve command: expected `vllm serve MODEL ...` or `python -m sglang.launch_server ...`"
        )
    engine, start, env = detected
    command = ServeCommand(engine=engine, model=None, env=env)
    i = start
    if engine == "vllm" and i < len(argv) and not argv[i].startswith("-"):
        command.model, command.model_index = argv[i], i
        i += 1
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-") or token == "-":
            i += 1  # a stray positional: argparse would refuse it, the engine reports that itself
            continue
        name, eq, inline = token.partition("=")
        flag = normalise_flag(name)
        value: str | None = inline if eq else None
        if not eq:
            following = argv[i + 1] if i + 1 < len(argv) else None
            # A value never starts with "--"; a negative number or a JSON object does not either.
            if following is not None and not following.startswith("--") and following not in SHORT_FLAGS:
                value = following
                command.flags[flag] = value
                command.spellings[flag] = name
                command.positions[flag] = i
                command.value_positions[flag] = i + 1
                i += 2
                continue
        command.flags[flag] = value
        command.spellings[flag] = name
        command.positions[flag] = i
        command.value_positions[flag] = i
        i += 1
    if command.model is None:
        for flag in ("--model-path", "--model"):
            if command.get(flag):
                command.model = command.get(flag)
                command.model_index = command.value_positions[flag]
                break
    return command
