"""What would work instead, when a drafter cannot be fixed for the release asked: other releases of
both engines (from the shipped snapshots and the compatibility matrix) for which a fix plan has no
blocker and the matrix knows no failure, and the matrix's own advice (train an MLA drafter, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specprobe.checkpoint.layout import effective_draft_config
from specprobe.compat.evaluate import evaluate
from specprobe.compat.loader import load_matrix
from specprobe.findings import SpecprobeError
from specprobe.fix.model import FixPlan
from specprobe.fix.plan import build_plan
from specprobe.hfconfig import ModelConfig, parse_model_config
from specprobe.rules.compat import pairings_for
from specprobe.schema.store import known_versions


@dataclass
class Alternatives:
    """Releases that would serve the drafter (after a fix), as ranges per engine, and the matrix's hints."""

    releases: dict[str, list[str]] = field(default_factory=dict)
    hints: list[str] = field(default_factory=list)

    def text(self) -> str:
        parts = [f"{engine} {_ranges(engine, versions)}" for engine, versions in self.releases.items() if versions]
        said = (
            ("fix makes it pass on " + "; ".join(parts))
            if parts
            else "no shipped release of vLLM or SGLang serves it after a fix"
        )
        return said + ("; " + " ".join(dict.fromkeys(self.hints)) if self.hints else "")

    def to_json_dict(self) -> dict[str, Any]:
        return {"releases": self.releases, "hints": list(dict.fromkeys(self.hints))}


def _ranges(engine: str, versions: list[str]) -> str:
    """Runs of consecutive shipped releases: ``0.18.0-0.34.0, 0.9.0``."""
    order = known_versions(engine)
    chosen = set(versions)
    runs: list[list[str]] = []
    for version in order:
        if version in chosen:
            if runs and order.index(runs[-1][-1]) == order.index(version) - 1:
                runs[-1].append(version)
            else:
                runs.append([version])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


@dataclass
class _Context:
    """The part of check's context the matrix reads (rules.compat.CompatContext)."""

    draft_dir: Path
    draft_config: ModelConfig | None
    draft_format: str | None
    draft_architecture: str | None
    target_config: ModelConfig | None
    engines: list[tuple[str, str]]
    method: str | None = "eagle3"


def matrix_failures(plan: FixPlan) -> list[tuple[str, str | None]]:
    """(message, hint) of the matrix verdicts that say the fixed pairing fails on the plan's release."""
    config = plan.config or {}
    architectures = config.get("architectures")
    context = _Context(
        draft_dir=plan.draft_dir,
        draft_config=parse_model_config(effective_draft_config(config)) if config else None,
        draft_format=plan.out_format or plan.source_format,
        draft_architecture=architectures[0] if isinstance(architectures, list) and architectures else None,
        target_config=plan.target.config,
        engines=[(plan.engine, plan.version)],
    )
    entries = list(load_matrix())
    failures = []
    for pairing, _ in pairings_for(context):
        for verdict in evaluate(entries, pairing):
            if verdict.fails:
                failures.append((verdict.message, verdict.entry.hint))
    return failures


def find_alternatives(draft_dir: Path, *, target: str, asked: tuple[str, str], format_out: str | None) -> Alternatives:
    """Every shipped release of both engines whose plan has no blocker and no matrix failure."""
    found = Alternatives()
    for engine in ("vllm", "sglang"):
        for version in known_versions(engine):
            if (engine, version) == asked:
                continue
            try:
                plan = build_plan(draft_dir, target=target, engine=f"{engine}=={version}", format_out=format_out)
            except SpecprobeError:
                continue
            if plan.blockers:
                continue
            failures = matrix_failures(plan)
            if failures:
                continue
            found.releases.setdefault(engine, []).append(version)
    return found
