"""vLLM recipes' model files (vllm-project/recipes ``models/<org>/<model>.yaml``) read as the launches
they describe: ``vllm serve MODEL_ID`` with ``model.base_args`` and the arguments of every feature
that is on by default; each opt-in feature that turns speculative decoding on (``spec_decoding``:
``--speculative-config ...``) is one more deployment with its arguments added.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specprobe.deploy.launch import Search, find_launches, to_deployments
from specprobe.deploy.model import Deployment
from specprobe.deploy.yamlsource import LineDict, LineList
from specprobe.findings import Finding


def is_vllm_recipe(documents: list[Any]) -> bool:
    first = documents[0] if len(documents) == 1 else None
    if not isinstance(first, dict):
        return False
    model = first.get("model")
    return isinstance(model, dict) and isinstance(model.get("model_id"), str) and (
        isinstance(first.get("features"), dict) or isinstance(first.get("variants"), dict)
    )


def _arguments(node: Any) -> tuple[list[str], list[int | None]]:
    if not isinstance(node, LineList):
        return [], []
    words = [str(item) for item in node if isinstance(item, str | int | float)]
    lines: list[int | None] = [node.line_of(k) for k, item in enumerate(node) if isinstance(item, str | int | float)]
    return words, lines


def parse_vllm_recipe(documents: list[Any], file: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    recipe: LineDict = documents[0]
    model: LineDict = recipe["model"]
    meta = recipe.get("meta")
    slug = meta.get("slug") if isinstance(meta, dict) and isinstance(meta.get("slug"), str) else Path(file).stem
    opt_in = {str(name) for name in recipe.get("opt_in_features") or [] if isinstance(name, str)}
    raw_features = recipe.get("features")
    features: LineDict = raw_features if isinstance(raw_features, LineDict) else LineDict()
    base, base_lines = _arguments(model.get("base_args"))
    words = ["vllm", "serve", model["model_id"], *base]
    lines: list[int | None] = [model.line_of("model_id"), model.line_of("model_id"), model.line_of("model_id")]
    lines += base_lines
    variants: list[tuple[str, list[str], list[int | None]]] = []
    for name, feature in features.items():
        args, args_lines = _arguments(feature.get("args") if isinstance(feature, dict) else None)
        if str(name) not in opt_in:
            words, lines = [*words, *args], [*lines, *args_lines]
        elif any(arg.startswith(("--speculative", "-sc", "--spec-")) for arg in args):
            variants.append((str(name), args, args_lines))
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for label, extra, extra_lines in [("", [], []), *variants]:
        found = find_launches([*words, *extra], [*lines, *extra_lines])
        made, leftover = to_deployments(
            Search(found.launches, found.findings),
            name=f"recipe/{slug}" + (f"+{label}" if label else ""),
            file=file,
            base_dir=base_dir,
            line=model.line_of("model_id"),
        )
        deployments.extend(made)
        findings.extend(leftover)
    return deployments, findings
