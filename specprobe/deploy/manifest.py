"""specprobe's own deployment manifest (YAML or TOML), validated by the shipped JSON Schema
``specprobe/data/manifest/manifest.schema.json``.

A deployment names its engine (with a version), target, drafter, method and settings, and either a
launch command or nothing (a command is then built from the fields). With a launch, ``target`` and
``draft`` name local copies of what the launch names (container paths are checked through them).
"""

from __future__ import annotations

import json
import re
import shlex
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from specprobe.deploy import rules
from specprobe.deploy.launch import find_launches, shown_command
from specprobe.deploy.model import Deployment, VersionSource, deployment_from_argv
from specprobe.deploy.shell import ShellSyntaxError, split_commands
from specprobe.deploy.vllm_config import json_text
from specprobe.deploy.yamlsource import LineDict, LineList
from specprobe.engines.spec import parse_engine_spec
from specprobe.findings import Finding, SpecprobeError

_TOML_HEADER = re.compile(r"^\s*\[\[\s*deployments\s*\]\]\s*(#.*)?$")
_TOML_TABLE = re.compile(r"^\s*\[\s*deployments\.([A-Za-z0-9_-]+)\s*\]\s*(#.*)?$")
_TOML_KEY = re.compile(r"^\s*\"?([A-Za-z0-9_-]+)\"?\s*=")
_FIELDS = ("name", "engine", "image", "target", "draft", "method", "speculative", "device", "url", "launch", "smoke")


@lru_cache(maxsize=1)
def manifest_schema() -> dict[str, Any]:
    text = resources.files("specprobe").joinpath("data", "manifest", "manifest.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def is_manifest(documents: list[Any]) -> bool:
    first = documents[0] if len(documents) == 1 else None
    return isinstance(first, dict) and "deployments" in first


def toml_lines(text: str) -> tuple[int | None, list[dict[str, int]]]:
    """For a TOML manifest: the line of ``deployments`` and, per ``[[deployments]]`` table, the line of
    each key (``speculative.KEY`` for keys of its sub-tables). tomllib keeps no positions, so the
    text is scanned; inline arrays of tables get the line of ``deployments`` only."""
    tables: list[dict[str, int]] = []
    current: dict[str, int] | None = None
    prefix = ""
    top: int | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        if _TOML_HEADER.match(raw):
            current, prefix = {"": number}, ""
            tables.append(current)
            top = top or number
            continue
        table = _TOML_TABLE.match(raw)
        if table and current is not None:
            prefix = table.group(1) + "."
            current.setdefault(table.group(1), number)
            continue
        if raw.lstrip().startswith("["):
            current = None
            continue
        key = _TOML_KEY.match(raw)
        if key is None:
            continue
        if current is None:
            if key.group(1) == "deployments":
                top = number
            continue
        current.setdefault(prefix + key.group(1), number)
    return top, tables


class _Lines:
    """Line look-ups over either a YAML manifest (LineDict) or a scanned TOML one."""

    def __init__(self, root: Any, toml: tuple[int | None, list[dict[str, int]]] | None) -> None:
        self.root = root
        self.toml = toml

    def of(self, path: list[str | int]) -> int:
        if self.toml is not None:
            top, tables = self.toml
            if len(path) >= 2 and path[0] == "deployments" and isinstance(path[1], int) and path[1] < len(tables):
                table = tables[path[1]]
                keys = [str(p) for p in path[2:4]]
                for depth in range(len(keys), 0, -1):
                    joined = ".".join(keys[:depth])
                    if joined in table:
                        return table[joined]
                return table[""]
            return top or 1
        node, line = self.root, getattr(self.root, "line", 1)
        for part in path:
            in_mapping = isinstance(node, LineDict) and part in node
            in_list = isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node)
            if in_mapping or in_list:
                line, node = node.line_of(part), node[part]
            else:
                break
        return line


def _schema_findings(root: Any, lines: _Lines, file: str) -> list[Finding]:
    validator = Draft202012Validator(manifest_schema())
    findings = []
    for error in sorted(validator.iter_errors(_plain(root)), key=lambda e: [str(p) for p in e.absolute_path])[:50]:
        path = list(error.absolute_path)
        where = "/".join(str(p) for p in path) or "(top level)"
        message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
        if error.validator == "anyOf" and len(path) == 2:
            message = "a deployment needs `launch`, or `engine` and `target` (a command is built from them)"
        finding = rules.MANIFEST_SCHEMA.finding(f"{where}: {message}", location=where)
        finding.file, finding.line = file, lines.of(path)
        if len(path) >= 2 and path[0] == "deployments" and isinstance(path[1], int):
            entry = _plain(root)["deployments"][path[1]]
            label = entry.get("name") if isinstance(entry, dict) else None
            finding.deployment = f"manifest/{label if isinstance(label, str) and label else path[1]}"
        findings.append(finding)
    return findings


def _plain(value: Any) -> Any:
    """Plain JSON-like data for the validator (dates and other YAML scalars become strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _built_argv(entry: dict[str, Any], engine: str) -> list[str]:
    """A serve command made from the manifest's fields."""
    target = str(entry.get("target", ""))
    settings = dict(entry.get("speculative") or {})
    method = entry.get("method")
    draft = entry.get("draft")
    if engine == "sglang":
        argv = ["python", "-m", "sglang.launch_server", "--model-path", target]
        if method:
            argv += ["--speculative-algorithm", str(method).upper()]
        if draft:
            argv += ["--speculative-draft-model-path", str(draft)]
        for key, value in settings.items():
            flag = "--speculative-" + str(key).removeprefix("speculative_").replace("_", "-")
            argv += [flag] if value is True else [flag, str(value)]
        return argv
    config = {**({"method": method} if method else {}), **({"model": draft} if draft else {}), **settings}
    return ["vllm", "serve", target, *(["--speculative-config", json_text(config)] if config else [])]


def _launch_search(entry: dict[str, Any], line: int) -> tuple[list[str], list[int | None]] | Finding:
    launch = entry["launch"]
    if isinstance(launch, str):
        try:
            commands = split_commands(launch, first_line=line, lines_follow_text=False)
        except ShellSyntaxError as exc:
            return rules.VALUE.finding(f"launch cannot be read as a shell command: {exc}", location="launch")
        for command in commands:
            found = find_launches(command.words, list(command.lines), variables=command.variables)
            if found.launches:
                return found.launches[0].argv, found.launches[0].lines
        try:
            words = shlex.split(launch)
        except ValueError:
            words = []
        return rules.NO_LAUNCH.finding(
            f"launch `{shown_command(words)}` is no vLLM or SGLang serve command", location="launch"
        )
    if not isinstance(launch, list):
        # YAML gives dates, numbers and mappings too: only a command line or a list of words is a launch.
        return rules.VALUE.finding(
            f"launch is a {type(launch).__name__}, not a command line or a list of words", location="launch"
        )
    argv = [str(w) for w in launch]
    found = find_launches(argv, [line] * len(argv))
    if found.launches:
        return found.launches[0].argv, found.launches[0].lines
    return rules.NO_LAUNCH.finding(
        f"launch `{shown_command(argv)}` is no vLLM or SGLang serve command", location="launch"
    )


def _deployment(entry: dict[str, Any], index: int, lines: _Lines, file: str, base_dir: Path) -> Deployment | Finding:
    path: list[str | int] = ["deployments", index]
    line_of = {key: lines.of([*path, key]) for key in _FIELDS}
    name = f"manifest/{entry.get('name') or index}"
    spec = None
    if entry.get("engine"):
        try:
            spec = parse_engine_spec(str(entry["engine"]), allow_range=False, option="engine")
        except SpecprobeError as exc:
            return rules.MANIFEST_SCHEMA.finding(str(exc), location="engine")
    if "launch" in entry:
        launched = _launch_search(entry, line_of["launch"])
        if isinstance(launched, Finding):
            launched.line = line_of["launch"]
            return launched
        argv, argv_lines = launched
    else:
        assert spec is not None  # the schema requires engine and target without launch
        argv = _built_argv(entry, spec.engine)
        argv_lines = [line_of["target"]] * len(argv)
    deployment = deployment_from_argv(
        argv, file, lines.of(path), argv_lines=argv_lines, name=name, base_dir=base_dir
    )
    if spec is not None:
        if spec.engine != deployment.engine_name:
            return rules.VALUE.finding(
                f"engine {entry['engine']} does not match the launch, which runs {deployment.engine_name}",
                location="engine",
            )
        deployment.engine = spec
        deployment.version_source = VersionSource.MANIFEST if spec.version else None
    for key in ("target", "draft", "method", "device"):
        if key in entry and (key != "method" or "launch" not in entry):
            setattr(deployment, key, str(entry[key]).lower() if key == "method" else str(entry[key]))
            deployment.source.set(key, line_of[key])
    if "launch" not in entry:
        for key, _ in (entry.get("speculative") or {}).items():
            deployment.source.set(f"speculative.{key}", lines.of([*path, "speculative", key]))
        deployment.source.set("speculative", line_of["speculative"] if "speculative" in entry else line_of["target"])
    deployment.source.set("engine", line_of["engine"] if "engine" in entry else None)
    if "image" in entry:
        deployment.image = str(entry["image"])
        deployment.source.set("image", line_of["image"])
    if "url" in entry:
        deployment.url = str(entry["url"])
        deployment.source.set("url", line_of["url"])
    deployment.smoke = {k: float(v) for k, v in (entry.get("smoke") or {}).items()}
    deployment.findings = [deployment.locate(f) for f in deployment.findings]
    return deployment


def parse_manifest(
    root: Any, file: str, base_dir: Path, *, toml_text: str | None = None
) -> tuple[list[Deployment], list[Finding]]:
    """Deployments of a manifest; schema violations are findings at their line (the invalid entries skipped)."""
    lines = _Lines(root, toml_lines(toml_text) if toml_text is not None else None)
    problems = _schema_findings(root, lines, file)
    bad_entries = {
        index
        for finding in problems
        if (parts := (finding.location or "").split("/"))[0] == "deployments" and len(parts) > 1 and parts[1].isdigit()
        for index in [int(parts[1])]
    }
    deployments: list[Deployment] = []
    entries = root.get("deployments") if isinstance(root, dict) else None
    if problems and not bad_entries:
        return [], problems  # the manifest as a whole is wrong (no deployments list, unknown top-level key)
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if index in bad_entries or not isinstance(entry, dict):
            continue
        made = _deployment(entry, index, lines, file, base_dir)
        if isinstance(made, Finding):
            made.file = file
            made.line = made.line or lines.of(["deployments", index, made.location or ""])
            made.deployment = f"manifest/{entry.get('name') or index}"
            problems.append(made)
        else:
            deployments.append(made)
    return deployments, problems
