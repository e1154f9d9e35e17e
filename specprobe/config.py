"""Project configuration, like ruff's: ``[tool.specprobe]`` in pyproject.toml or a ``specprobe.toml``.

Found upward from the command's inputs, else from the working directory (``--config FILE`` names it
explicitly). It selects and ignores rules by ID or prefix, re-grades severities, ignores rules for
some deployments with a reason on record, and sets ``fail-on``. ``apply`` is the one place a report
is filtered by it; every finding-producing command goes through it via the CLI's ``emit``.
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from specprobe.baseline import with_suppressed
from specprobe.findings import Finding, Report, Severity, SpecprobeError

SPECPROBE_TOML = "specprobe.toml"
PYPROJECT_TOML = "pyproject.toml"
ALL = "ALL"


@dataclass(frozen=True)
class DeploymentIgnore:
    """Rules switched off for the deployments matching a glob, and why."""

    deployment: str
    rules: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Config:
    """The settings of one configuration file; the default (no file) changes nothing."""

    path: Path | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    per_deployment_ignores: tuple[DeploymentIgnore, ...] = ()
    fail_on: Severity | None = None
    baseline: Path | None = None
    # The mildest severity SARIF keeps as results (``sarif-level``); None: the reporter's default.
    sarif_level: Severity | None = None
    # Run exact mode (the engine release's own code) wherever a command offers --exact.
    exact: bool = False
    # How models named by hub id are read: "optional", "required" or "off" (specprobe.modelfiles.HubSession).
    hub: str = "optional"

    @property
    def label(self) -> str:
        if self.path is None:
            return "defaults"
        return f"{self.path} [tool.specprobe]" if self.path.name == PYPROJECT_TOML else str(self.path)


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the settings (the ``[tool.specprobe]`` table), shipped with the package."""
    text = resources.files("specprobe").joinpath("data/config.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise SpecprobeError(f"cannot read configuration {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecprobeError(f"configuration {path} is not valid TOML: {exc}") from None


def _settings_table(path: Path) -> dict[str, Any] | None:
    """The settings in ``path``: the whole of a specprobe.toml, ``[tool.specprobe]`` of any other
    TOML file (None when a pyproject.toml has no such table)."""
    data = _read_toml(path)
    if path.name == SPECPROBE_TOML:
        return data
    tool = data.get("tool")
    table = tool.get("specprobe") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def find_config(inputs: Iterable[Path] = (), cwd: Path | None = None) -> Path | None:
    """The nearest specprobe.toml or pyproject.toml with ``[tool.specprobe]`` above the first input
    that has one, else above the working directory."""
    starts: list[Path] = []
    for each in inputs:
        try:
            resolved = each.resolve() if each.exists() else None
        except (OSError, RuntimeError, ValueError):  # too long, a symlink loop, a NUL byte: nothing found
            resolved = None
        if resolved is not None:
            starts.append(resolved if resolved.is_dir() else resolved.parent)
    starts.append((cwd or Path.cwd()).resolve())
    for start in starts:
        for directory in (start, *start.parents):
            candidate = directory / SPECPROBE_TOML
            if _is_file(candidate):
                return candidate
            candidate = directory / PYPROJECT_TOML
            if _is_file(candidate) and _settings_table(candidate) is not None:
                return candidate
    return None


def _is_file(path: Path) -> bool:
    # A folder above the inputs that this user may not search is not a configuration, not a crash.
    try:
        return path.is_file()
    except OSError:
        return False


def _where(path: Path, error_path: Sequence[Any]) -> str:
    """``tool.specprobe.per-deployment-ignores[0].reason``: the key as the user wrote it."""
    text = "" if path.name == SPECPROBE_TOML else "tool.specprobe"
    for key in error_path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text or "(top level)"


def validate_settings(settings: Mapping[str, Any], path: Path) -> None:
    """Check ``settings`` against the shipped JSON Schema; the first error becomes one line (exit 2)."""
    # only when a configuration exists: it costs more than reading one
    import jsonschema  # noqa: PLC0415

    validator = jsonschema.Draft202012Validator(config_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(settings)))
    if error is not None:
        where = _where(path, list(error.absolute_path))
        raise SpecprobeError(f"invalid configuration {path}: {where}: {error.message}")


def _known(selector: str, rule_ids: Sequence[str]) -> bool:
    return selector == ALL or any(matches(selector, rule_id) for rule_id in rule_ids)


def _check_rule_names(config: Config, rule_ids: Sequence[str]) -> None:
    """A misspelt rule ID would silently do nothing: refuse it, as ruff does."""
    named = [("select", s) for s in config.select] + [("ignore", s) for s in config.ignore]
    named += [("severity", s) for s in config.severity]
    named += [("per-deployment-ignores", s) for entry in config.per_deployment_ignores for s in entry.rules]
    for key, selector in named:
        if not _known(selector, rule_ids):
            raise SpecprobeError(
                f"invalid configuration {config.path}: {key}: no rule is {selector!r} or starts with it "
                "(`specprobe rules` lists them)"
            )


def load_config(path: Path | None, *, rule_ids: Sequence[str] | None = None) -> Config:
    """Read and validate ``path`` (None: the default configuration). ``rule_ids`` defaults to every
    registered rule; selectors that match none of them are an error."""
    if path is None:
        return Config()
    if not path.is_file():
        raise SpecprobeError(f"configuration {path} does not exist")
    settings = _settings_table(path)
    if settings is None:
        raise SpecprobeError(f"configuration {path} has no [tool.specprobe] table")
    return config_from_settings(settings, path, rule_ids=rule_ids)


def config_from_settings(
    settings: Mapping[str, Any], path: Path, *, rule_ids: Sequence[str] | None = None
) -> Config:
    """Validate the settings table read from ``path`` and build the configuration from it."""
    validate_settings(settings, path)
    baseline = settings.get("baseline")
    config = Config(
        path=path,
        select=tuple(settings.get("select", ())),
        ignore=tuple(settings.get("ignore", ())),
        severity={rule: Severity(level) for rule, level in settings.get("severity", {}).items()},
        per_deployment_ignores=tuple(
            DeploymentIgnore(entry["deployment"], tuple(entry["rules"]), entry["reason"].strip())
            for entry in settings.get("per-deployment-ignores", ())
        ),
        fail_on=Severity(settings["fail-on"]) if "fail-on" in settings else None,
        sarif_level=Severity(settings["sarif-level"]) if "sarif-level" in settings else None,
        # A relative baseline path is relative to the configuration file, like ruff's paths.
        baseline=(path.parent / baseline) if isinstance(baseline, str) else None,
        exact=bool(settings.get("exact", False)),
        hub=str(settings.get("hub", "optional")),
    )
    if rule_ids is None:
        # The catalogue imports every rule family, the deployment and engine-probe ones too (~40 ms that
        # check would pay at start-up); only a configuration that names rules needs it.
        from specprobe.rules.catalog import all_rules  # noqa: PLC0415

        rule_ids = [r.id for r in all_rules()]
    _check_rule_names(config, rule_ids)
    return config


def matches(selector: str, rule_id: str) -> bool:
    """``ALL``, the exact ID, or a prefix ending at a dash: ``VOCAB``, ``VOCAB-`` and ``VOCAB-D2T``
    select ``VOCAB-D2T-RANGE``; ``VOCAB-D`` does not."""
    if selector in (ALL, rule_id):
        return True
    prefix = selector if selector.endswith("-") else selector + "-"
    return rule_id.startswith(prefix)


def _specificity(selector: str) -> int:
    return -1 if selector == ALL else len(selector.rstrip("-"))


def is_selected(rule_id: str, config: Config) -> bool:
    """ruff's rule: the most specific matching selector decides; ignore wins a tie; with no
    ``select``, every rule is selected."""
    best: tuple[int, bool] | None = None
    for selector in config.select:
        if matches(selector, rule_id):
            candidate = (_specificity(selector), True)
            best = candidate if best is None or candidate[0] > best[0] else best
    for selector in config.ignore:
        if matches(selector, rule_id):
            candidate = (_specificity(selector), False)
            best = candidate if best is None or candidate[0] >= best[0] else best
    if best is None:
        return not config.select
    return best[1]


def severity_for(finding: Finding, config: Config) -> Severity:
    """The configured severity of ``finding``'s rule (most specific selector), else its own."""
    chosen: tuple[int, Severity] | None = None
    for selector, severity in config.severity.items():
        if matches(selector, finding.rule) and (chosen is None or _specificity(selector) > chosen[0]):
            chosen = (_specificity(selector), severity)
    return chosen[1] if chosen else finding.severity


def ignored_for_deployment(finding: Finding, config: Config) -> bool:
    if finding.deployment is None:
        return False
    return any(
        fnmatch.fnmatchcase(finding.deployment, entry.deployment) and any(matches(s, finding.rule) for s in entry.rules)
        for entry in config.per_deployment_ignores
    )


def apply(report: Report, config: Config) -> Report:
    """``report`` as ``config`` wants it: unselected and per-deployment-ignored findings dropped (and
    counted in ``report.suppressed['config']``), severities re-graded."""
    kept: list[Finding] = []
    for finding in report.findings:
        if not is_selected(finding.rule, config) or ignored_for_deployment(finding, config):
            continue
        severity = severity_for(finding, config)
        kept.append(finding if severity is finding.severity else replace(finding, severity=severity))
    return with_suppressed(report, kept, "config", len(report.findings) - len(kept))


def exact_configured(config: Path | None, inputs: Iterable[Path]) -> bool:
    """``exact = true`` in the configuration that applies to ``inputs`` (``--config`` or the nearest one)."""
    return load_config(config if config is not None else find_config(inputs)).exact


def hub_configured(config: Path | None, inputs: Iterable[Path]) -> str:
    """``hub = ...`` in the configuration that applies to ``inputs``: required, optional (default) or off."""
    return load_config(config if config is not None else find_config(inputs)).hub
