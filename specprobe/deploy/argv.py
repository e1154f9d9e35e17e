"""A serve command's argument vector read as the engine's argparse would, without importing the engine.

Launchers are data (``specprobe/data/launchers.yaml``: ``vllm serve``, ``python -m
sglang.launch_server``, NVIDIA Dynamo's ``python -m dynamo.vllm`` ...), each optionally behind
``exec``, ``env [VAR=x ...]`` or ``VAR=x`` prefixes. Each flag remembers the
index of the token it came from, so that a deployment file can point at the line of that token.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from specprobe.deploy.launchers import EngineLauncher, match_engine
from specprobe.findings import SpecprobeError

# Short spellings both engines accept for flags that matter here.
SHORT_FLAGS = {"-sc": "--speculative-config", "-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


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
    launcher: str | None = None  # the launcher's name in data/launchers.yaml
    launcher_flags: dict[str, str | None] = field(default_factory=dict)  # read by the launcher itself

    def get(self, flag: str) -> str | None:
        return self.flags.get(flag)

    def has(self, flag: str) -> bool:
        return flag in self.flags


def normalise_flag(flag: str) -> str:
    """vLLM and SGLang accept --snake_case and --kebab-case alike."""
    return "--" + flag[2:].replace("_", "-") if flag.startswith("--") else SHORT_FLAGS.get(flag, flag)


@lru_cache(maxsize=2)
def _speculative_flags(engine: str) -> frozenset[str]:
    """Every ``--speculative-*`` flag any shipped snapshot of ``engine`` declares (aliases included)."""
    try:
        text = resources.files("specprobe").joinpath("data", "schemas", engine, "_shared.json").read_text("utf-8")
        objects = json.loads(text).get("objects", {})
    except (OSError, ValueError):
        return frozenset()
    return frozenset(
        flag for entry in objects.values() if isinstance(entry, dict) for flag in entry.get("flags") or ()
    )


def _unabbreviated(flag: str, engine: str) -> str:
    """The flag argparse reads for a unique prefix of a speculative flag (``--speculative-algo``): SGLang's
    parser allows abbreviations, and recipes use them."""
    if not flag.startswith("--speculative-"):
        return flag
    known = _speculative_flags(engine)
    if flag in known:
        return flag
    matches = [known_flag for known_flag in known if known_flag.startswith(flag)]
    return matches[0] if len(matches) == 1 else flag


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


def detect_launcher(argv: list[str]) -> tuple[EngineLauncher, int, dict[str, str]] | None:
    """(launcher, index of the first engine argument, env prefixes) for a serve command, else None."""
    start, env = _skip_prefixes(argv)
    found = match_engine(argv, start)
    if found is None:
        return None
    return found[0], found[1], env


def detect_engine(argv: list[str]) -> tuple[str, int, dict[str, str]] | None:
    """(engine, index of the first engine argument, env prefixes) for a serve command, else None."""
    found = detect_launcher(argv)
    return (found[0].engine, found[1], found[2]) if found is not None else None


def looks_like_serve_command(argv: list[str]) -> bool:
    return detect_engine(argv) is not None


def parse_command(argv: list[str]) -> ServeCommand:
    """Parse the argument vector as the engine's argparse would; SpecprobeError when it is no serve command."""
    if not argv:
        raise SpecprobeError("no command to lint: give it after --, e.g. specprobe lint -- vllm serve MODEL ...")
    detected = detect_launcher(argv)
    if detected is None:
        raise SpecprobeError(
            "not a serve command: expected `vllm serve MODEL ...` or `python -m sglang.launch_server ...`"
        )
    launcher, start, env = detected
    engine = launcher.engine
    command = ServeCommand(engine=engine, model=None, env=env, launcher=launcher.name)
    launcher_positions: dict[str, int] = {}
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
        if launcher.abbreviations:
            flag = _unabbreviated(flag, engine)
        value: str | None = inline if eq else None
        negated = "--" + flag[5:] if flag.startswith("--no-") else None
        prefixed = bool(launcher.own_flag_prefixes) and flag.startswith(launcher.own_flag_prefixes)
        if (
            flag in launcher.own_flags
            or (negated in launcher.own_flags and not launcher.own_flags[negated])
            or prefixed
        ):
            # The launcher's own flag (a Dynamo worker's --endpoint): never handed to the engine.
            following = argv[i + 1] if i + 1 < len(argv) else None
            known = launcher.own_flags.get(flag, False)
            guessed = prefixed and following is not None and not following.startswith("-")
            takes = (known or guessed) and not eq and following is not None
            command.launcher_flags[flag] = argv[i + 1] if takes else value
            launcher_positions[flag] = i + 1 if takes else i
            i += 2 if takes else 1
            continue
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
        for flag in launcher.model_flags:
            if command.launcher_flags.get(flag):
                command.model = command.launcher_flags[flag]
                command.model_index = launcher_positions.get(flag)
                break
    if command.model is None:
        for flag in ("--model-path", "--model"):
            if command.get(flag):
                command.model = command.get(flag)
                command.model_index = command.value_positions[flag]
                break
    return command
