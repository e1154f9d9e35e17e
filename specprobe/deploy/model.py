"""The deployment model: one speculative-decoding deployment as every input form describes it.

A launch command, a shell script, a Kubernetes container, a compose service, a vLLM ``--config`` file
or specprobe's own manifest all become ``Deployment`` objects; lint, gate and the drafter checks run
on them. Each field remembers the line of the file it came from (``SourceMap``), so that findings
point where a reviewer edits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from specprobe.deploy.argv import ServeCommand, normalise_flag, parse_command
from specprobe.engines.spec import EngineSpec
from specprobe.findings import Finding
from specprobe.untrusted.files import UntrustedInputError, expand_user, parse_json


class VersionSource(StrEnum):
    """Where the engine version of a deployment came from, most authoritative first."""

    MANIFEST = "manifest"
    OPTION = "--engine"
    IMAGE_TAG = "image tag"
    LIVE = "live install"
    SNAPSHOT = "newest snapshot"


@dataclass
class SourceMap:
    """Which line of ``file`` each field came from (1-based); ``line`` is where the deployment starts.

    Field keys: ``engine``, ``image``, ``target``, ``draft``, ``method``, ``speculative`` (the
    settings as a whole), ``speculative.<key>``, ``device``, ``command``, ``flag:<--normalised-flag>``.
    ``argv_lines`` gives the line of each launch-argument token where the input form knows it.
    """

    file: str | None = None
    line: int | None = None
    fields: dict[str, int] = field(default_factory=dict)
    argv_lines: list[int | None] = field(default_factory=list)

    def set(self, key: str, line: int | None) -> None:
        if line is not None:
            self.fields[key] = line

    def setdefault(self, key: str, line: int | None) -> None:
        if line is not None and key not in self.fields:
            self.fields[key] = line

    def line_of(self, *keys: str) -> int | None:
        """The line of the first key known, else the deployment's own line."""
        for key in keys:
            if key in self.fields:
                return self.fields[key]
        return self.line

    def argv_line(self, index: int | None) -> int | None:
        if index is None or index >= len(self.argv_lines):
            return None
        return self.argv_lines[index]


@dataclass
class Deployment:
    """One engine launch with speculative decoding (or without: lint says so).

    ``engine`` carries the version once resolved (``version_source`` says from where); ``draft`` and
    ``target`` are as written (hub id or path); ``base_dir`` is the folder relative paths resolve
    against (the deployment file's folder). ``findings`` are what the parser already observed (a value
    it could not read, an env var it could not expand), located in the file.
    """

    name: str
    engine: EngineSpec | None = None
    version_source: VersionSource | None = None
    target: str | None = None
    draft: str | None = None
    method: str | None = None
    speculative: dict[str, Any] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    command: ServeCommand | None = None
    device: str | None = None
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    file: str | None = None
    base_dir: Path | None = None
    source: SourceMap = field(default_factory=SourceMap)
    findings: list[Finding] = field(default_factory=list)
    url: str | None = None
    smoke: dict[str, float] = field(default_factory=dict)

    @property
    def engine_name(self) -> str | None:
        return self.engine.engine if self.engine is not None else None

    def locate(self, finding: Finding, *keys: str) -> Finding:
        """Stamp file, line and deployment name on ``finding`` (the line of the first known key).

        A command given on the command line has no file: its findings stay unlocated."""
        if self.file is None:
            return finding
        if finding.file is None:
            finding.file = self.file
        if finding.line is None:
            finding.line = self.source.line_of(*keys)
        if finding.deployment is None:
            finding.deployment = self.name
        return finding

    def flag_line(self, flag: str, *, value: bool = True) -> int | None:
        """Line of a flag's value (or of the flag token itself), where the input form knows it."""
        command = self.command
        normalised = normalise_flag(flag)
        if command is not None:
            index = (command.value_positions if value else command.positions).get(normalised)
            line = self.source.argv_line(index)
            if line is not None:
                return line
        return self.source.fields.get(f"flag:{normalised}")

    def resolve_path(self, spec: str | None) -> Path | None:
        """A path as written, relative to the deployment file's folder when relative; None for no spec."""
        if not spec:
            return None
        path = expand_user(spec)
        if not path.is_absolute() and self.base_dir is not None:
            path = self.base_dir / path
        return path


def _scalar(value: str | None) -> Any:
    """A CLI value as the engine would coerce it (numbers and booleans as JSON, the rest as text)."""
    if value is None:
        return True
    try:
        return parse_json(value, what="the value").value
    except UntrustedInputError:
        return value


@dataclass(frozen=True)
class SpeculativeSettings:
    """The speculative settings a serve command names, and why ``--speculative-config`` could not be
    read when it could not (None when it was read, or not given)."""

    values: dict[str, Any]
    given: bool
    problem: str | None = None


def parse_speculative(command: ServeCommand) -> SpeculativeSettings:
    """The one parser of a command's speculative settings: SGLang's ``--speculative-*`` flags; vLLM's
    ``--speculative-config`` JSON, its dotted form (``--speculative-config.method eagle3``) and the
    ``--spec-*`` shorthands. ``given`` says whether the command names any of them."""
    if command.engine == "sglang":
        values = {
            flag[2:].replace("-", "_"): _scalar(value)
            for flag, value in command.flags.items()
            if flag.startswith("--speculative-")
        }
        return SpeculativeSettings(values, given=bool(values))
    settings: dict[str, Any] = {}
    problem: str | None = None
    given = command.has("--speculative-config")
    raw = command.get("--speculative-config")
    if given:
        try:
            # Bounded as every untrusted JSON is (nesting, integer width); NaN is accepted as vLLM's json.loads does.
            parsed = parse_json(raw, what="the value").value if raw is not None else None
        except UntrustedInputError as exc:
            problem = str(exc)
        else:
            if isinstance(parsed, dict):
                settings.update(parsed)
            else:
                problem = "must be a JSON object"
    # vLLM's dotted form (--speculative-config.method eagle3) and the --spec-* shorthands add keys.
    for flag, value in command.flags.items():
        if flag.startswith("--speculative-config."):
            settings[flag.split(".", 1)[1].replace("-", "_")] = _scalar(value)
            given = True
    shorthand = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}
    for flag, key in shorthand.items():
        if command.has(flag):
            settings[key] = _scalar(command.get(flag))
            given = True
    return SpeculativeSettings(settings, given=given, problem=problem)


def speculative_settings(command: ServeCommand) -> dict[str, Any]:
    """The speculative settings the command names, as a dict (unreadable JSON is left to lint's rules)."""
    return parse_speculative(command).values


def fill_from_command(deployment: Deployment, command: ServeCommand) -> None:
    """Set engine, target, draft, method, settings and device of ``deployment`` from its serve command."""
    deployment.command = command
    if deployment.engine is None or deployment.engine.engine != command.engine:
        deployment.engine = EngineSpec(command.engine)
    deployment.target = command.model
    deployment.source.set("target", deployment.source.argv_line(command.model_index))
    settings = speculative_settings(command)
    deployment.speculative = settings
    if command.engine == "sglang":
        method = command.get("--speculative-algorithm")
        draft = command.get("--speculative-draft-model-path")
        deployment.source.set("method", deployment.flag_line("--speculative-algorithm"))
        deployment.source.set("draft", deployment.flag_line("--speculative-draft-model-path"))
        spec_flag = "--speculative-algorithm"
    else:
        method_value = settings.get("method")
        draft_value = settings.get("model")
        method = method_value if isinstance(method_value, str) else None
        draft = draft_value if isinstance(draft_value, str) else None
        spec_flag = "--speculative-config"
        for key, flag in (("method", "--spec-method"), ("draft", "--spec-model")):
            deployment.source.set(key, deployment.flag_line(flag))
        spec_line = deployment.flag_line("--speculative-config")
        deployment.source.setdefault("method", spec_line)
        deployment.source.setdefault("draft", spec_line)
    deployment.method = method.lower() if method else None
    deployment.draft = draft
    deployment.source.set("speculative", deployment.flag_line(spec_flag))
    device = command.get("--device")
    if device:
        deployment.device = device
        deployment.source.set("device", deployment.flag_line("--device"))
    for flag in command.flags:
        deployment.source.set(f"flag:{flag}", deployment.flag_line(flag, value=False))


def deployment_from_argv(
    argv: list[str],
    file: str | None = None,
    line: int | None = None,
    *,
    argv_lines: list[int | None] | None = None,
    name: str | None = None,
    base_dir: Path | None = None,
) -> Deployment:
    """A deployment from a launch command; SpecprobeError when ``argv`` is not a serve command.

    ``line`` is where the command starts in ``file``; ``argv_lines`` (one per token), when the input
    form knows them, let findings point at the line of the flag they are about.
    """
    command = parse_command(argv)
    lines = list(argv_lines) if argv_lines is not None else [line] * len(argv)
    deployment = Deployment(
        name=name or f"command/{command.engine}",
        argv=list(argv),
        env=dict(command.env),
        file=file,
        base_dir=base_dir,
        source=SourceMap(file=file, line=line, argv_lines=lines),
    )
    deployment.source.set("command", line)
    fill_from_command(deployment, command)
    return deployment
