"""Safety family: remote code and symlinks leaving the folder. Reported, never followed or imported."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specprobe.checkpoint.forms import detect_form
from specprobe.compat.engine_facts import known_model_classes
from specprobe.findings import Finding, Severity
from specprobe.rules import rule

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "safety"

REMOTE_CODE = rule(
    "SAFETY-REMOTE-CODE",
    FAMILY,
    Severity.ERROR,
    "config.json asks for remote code (auto_map): loading it needs trust_remote_code and runs that code",
    "https://huggingface.co/docs/transformers/v4.57.0/en/custom_models#using-a-model-with-custom-code",
    "https://github.com/huggingface/transformers/blob/v4.57.0/src/transformers/dynamic_module_utils.py",
)
SYMLINK_ESCAPE = rule(
    "SAFETY-SYMLINK-ESCAPE",
    FAMILY,
    Severity.ERROR,
    "a file in the drafter folder is a symlink to a path outside it (not followed)",
    "https://huggingface.co/docs/huggingface_hub/v0.35.0/en/guides/manage-cache#understand-caching",
)


def _loadable_references(auto_map: object) -> list[str]:
    """The auto_map references transformers would import: values of its ``Auto*`` keys. Other keys, such
    as speculators' ``{"": "eagle3.Eagle3SpeculatorConfig"}``, are read by no Auto class and no engine
    (vLLM routes speculators configs by speculators_model_type; SGLang does not read auto_map)."""
    if not isinstance(auto_map, dict):
        return [str(auto_map)]
    references: list[str] = []
    for key, value in auto_map.items():
        if not str(key).startswith("Auto"):
            continue
        # AutoTokenizer maps to a [slow, fast] pair.
        references.extend(str(v) for v in (value if isinstance(value, list) else [value]) if v)
    return references


def _registered_natively(ctx: CheckContext) -> str | None:
    """The judged releases, when the drafter is not EAGLE-3 and every one registers its architecture."""
    arch = ctx.draft_architecture
    if arch is None or ctx.draft_format is not None or detect_form(ctx.layout, ctx.draft_raw).form is None:
        return None
    for engine, version in ctx.engines:
        known = known_model_classes(engine, version)
        if known is None or arch not in known.value:
            return None
    return ", ".join(f"{engine}=={version}" for engine, version in ctx.engines)


def run(ctx: CheckContext) -> Iterator[Finding]:
    raw = ctx.draft_raw or {}
    auto_map = raw.get("auto_map")
    references = _loadable_references(auto_map) if auto_map else []
    if references:
        # "module.Class" names a file shipped here; "repo--module.Class" code from another repository.
        modules = sorted({ref.split("--")[-1].split(".")[0] for ref in references})
        shipped = [f for f in ctx.checkpoint.python_files if f.removesuffix(".py") in modules]
        native = _registered_natively(ctx)
        if native:
            # A block drafter or draft model whose architecture every judged release registers: the engines
            # build it from their own registry and never read auto_map (only transformers would).
            yield REMOTE_CODE.finding(
                f"auto_map names {', '.join(modules)}; {native} build {ctx.draft_architecture} from their own model "
                "registry and do not read auto_map (transformers would, with trust_remote_code). specprobe did not "
                "import it",
                location="config.json:auto_map",
                key="config.json:auto_map",
                severity=Severity.INFO,
            )
        elif shipped:
            yield REMOTE_CODE.finding(
                f"auto_map points at code shipped with the drafter ({', '.join(shipped)}); loading the drafter "
                "with trust_remote_code would run it. specprobe did not import it",
                location="config.json:auto_map",
                key="config.json:auto_map",
                hint="EAGLE-3 drafters need no custom code: drop auto_map and the .py files, or review the code",
            )
        else:
            yield REMOTE_CODE.finding(
                f"auto_map names {', '.join(modules)}, which the drafter folder does not ship; nothing was imported",
                location="config.json:auto_map",
                key="config.json:auto_map",
                severity=Severity.WARNING,
                hint="EAGLE-3 drafters need no custom code: drop auto_map from config.json",
            )
    for name, target in ctx.checkpoint.escaping_symlinks:
        yield SYMLINK_ESCAPE.finding(
            f"{name} links to {target}, outside the drafter folder; it was not read",
            location=name,
            hint="copy the real file into the folder; a checkpoint must be self-contained",
        )
