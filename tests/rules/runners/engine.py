"""Runners of the fixtures that need a drafter on disk, a measurement or an engine interpreter.

Kinds:

- ``fix``: a drafter built from ``"draft"`` (see ``build_drafter``) and a target from ``"target"``, fixed for
  ``"engine"`` as ``specprobe fix`` would: ``"plan": true`` (the default) is ``--plan``, nothing written;
  ``"exact": true`` asks for the engine's own load of the copy. With ``"launch"`` (a serve command whose
  ``{draft}``/``{target}`` are that drafter and target) the case is ``gate --fix-plan`` of that command.
- ``smoke``: the smoke rules on a recorded measurement (``"measurement"``: the figures of
  ``Measurement.from_figures``) or on a served engine's acceptance beside the reference backend's
  (``"engine_gap"``); ``"server"`` is an OpenAI-compatible server in this process whose metrics are the
  given text, measured by ``specprobe smoke --backend server``.
- ``exact``, ``dryrun``: see their functions.

``"engine_cache": "empty"`` (the default for the fast tier) hides every engine interpreter of this machine,
so what a case says about an absent release does not depend on what is installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from specprobe.checkpoint.builder import DraftSpec
from specprobe.deploy.model import deployment_from_argv
from specprobe.engine_spec import parse_engine_spec
from specprobe.fix.gate import fix_plan_findings
from specprobe.fix.run import FixOptions, run_fix
from tests.fix import builders
from tests.rules.runners.deploy import offline

Runner = Callable[[dict[str, Any], Path, Path], set[str]]


def build_drafter(spec: dict[str, Any], folder: Path) -> Path:
    """A drafter in a real on-disk format (tests/fix/builders.py): ``"spec"`` (DraftSpec fields), ``"edits"``
    (names of that module's broken-variant edits, applied in order), ``"config"`` (keys set in config.json),
    ``"drop"`` (tensors left out) and ``"files"`` (further files, name -> text)."""
    edits = [getattr(builders, name) for name in spec.get("edits", [])]

    def edit(draft: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
        for one in edits:
            one(draft, config, tensors)
        config.update(spec.get("config", {}))
        for name in spec.get("drop", []):
            del tensors[name]

    built = builders.make_draft(folder, DraftSpec(**spec.get("spec", {})), edit)
    for name, text in spec.get("files", {}).items():
        (built / name).write_text(text, encoding="utf-8")
    return built


def build_target(spec: dict[str, Any], folder: Path) -> Path:
    """A target (tests/fix/builders.make_target): ``"hidden"``, ``"weights"`` and further config fields."""
    fields = dict(spec)
    return builders.make_target(folder, hidden=fields.pop("hidden", builders.HIDDEN),
                                weights=fields.pop("weights", True), **fields)


@contextmanager
def engine_cache(case: dict[str, Any], tmp_path: Path) -> Iterator[None]:
    """The engine interpreters a case may see: none (``"empty"``) or those provisioned on this machine."""
    empty = case.get("engine_cache", "empty") == "empty"
    with offline(tmp_path, engines=not empty), pytest.MonkeyPatch.context() as patch:
        if empty:
            patch.setenv("SPECPROBE_ENGINES_DIR", str(tmp_path / "no-engines"))
        yield


def run_fix_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    draft = build_drafter(case["draft"], tmp_path / "draft")
    target = build_target(case.get("target", {}), tmp_path / "target")
    with engine_cache(case, tmp_path):
        if "launch" in case:
            argv = [word.replace("{draft}", str(draft)).replace("{target}", str(target)) for word in case["launch"]]
            engine = parse_engine_spec(case["engine"], allow_range=False)
            return {f.rule for f in fix_plan_findings([deployment_from_argv(argv)], engine)}
        plan = case.get("plan", True)
        report = run_fix(FixOptions(draft=draft, target=str(target), engine=case["engine"],
                                    out=None if plan else tmp_path / "fixed", plan_only=plan,
                                    exact=bool(case.get("exact"))))
    return report.fired()


RUNNERS: dict[str, Runner] = {"fix": run_fix_case}
