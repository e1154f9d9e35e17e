"""Turning a smoke run's JSON into a matrix entry whose evidence is the measured acceptance."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from specprobe.compat.loader import MatrixError, entry_from_dict, parse_matrix_yaml, validation_errors
from specprobe.compat.model import Acceptance, Entry, EntryKind, Status
from specprobe.compat.subjects import DraftInfo, TargetInfo, classify_draft, classify_target, parse_engine
from specprobe.findings import Severity, SpecprobeError
from specprobe.untrusted.files import UntrustedInputError, load_json_file

# Below these the drafter does not pay for itself: one accepted token in five drafted, or fewer than
# 1.3 tokens per target forward pass (the field report's pairing measured ~15%).
FAIL_ACCEPTANCE_RATE = 0.2
FAIL_ACCEPTANCE_LENGTH = 1.3
# Below this the pairing works but is well short of what EAGLE-3 drafters usually reach.
WARN_ACCEPTANCE_RATE = 0.4


# A smoke result is a few kB (per-position rates, a handful of figures); 16 MiB is far beyond any.
MAX_SMOKE_JSON_BYTES = 16 * 1024 * 1024
# Measured figures recorded into the matrix: each must be a finite number (or absent/null).
# Methods that draft from the prompt itself: their runs have no drafter folder to classify.
DRAFTERLESS_METHODS = ("ngram", "suffix")
MEASURED_FIELDS = ("acceptance_rate", "mean_acceptance_length", "speedup", "tokens", "drafts", "tokens_per_s")


def load_smoke_json(path: Path) -> dict[str, Any]:
    """Read a `specprobe smoke --format json` result; anything else is a usage error (exit 2).

    Every field that is recorded is checked, naming the field: a measured value must be a finite
    number (Python's json reads ``NaN``/``Infinity``, which must never become a measurement), and a
    field of the wrong type is refused rather than silently left out of the entry.
    """
    try:
        data = load_json_file(path, max_bytes=MAX_SMOKE_JSON_BYTES).value
    except FileNotFoundError:
        raise SpecprobeError(f"{path} does not exist") from None
    except OSError as exc:
        raise SpecprobeError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UntrustedInputError as exc:
        raise SpecprobeError(str(exc)) from None
    if not isinstance(data, dict):
        raise SpecprobeError(f"{path.name} is not a smoke result (not a JSON object)")
    if data.get("command", "smoke") != "smoke":
        command = data.get("command")
        raise SpecprobeError(f"{path.name} is the result of `specprobe {command}`, not of `specprobe smoke`")
    subject = data.get("subject")
    if not isinstance(subject, dict) or not subject.get("target"):
        raise SpecprobeError(f"{path.name} has no subject with a target")
    for key in ("target", "draft", "engine", "backend", "method"):
        value = subject.get(key)
        if value is not None and not isinstance(value, str):
            raise SpecprobeError(f"{path.name}: subject.{key} must be a string, got {_kind(value)}")
    method = data.get("method")
    if method is not None and not isinstance(method, str):
        raise SpecprobeError(f"{path.name}: method must be a string, got {_kind(method)}")
    for key in MEASURED_FIELDS:
        _check_measured(path, key, data.get(key))
    ci95 = data.get("ci95")
    if ci95 is not None:
        if not isinstance(ci95, list) or len(ci95) != 2:
            raise SpecprobeError(f"{path.name}: ci95 must be a list of two numbers, got {_kind(ci95)}")
        for index, bound in enumerate(ci95):
            _check_measured(path, f"ci95[{index}]", bound)
    lossless = data.get("lossless")
    if lossless is not None and not isinstance(lossless, bool):
        raise SpecprobeError(f"{path.name}: lossless must be true or false, got {_kind(lossless)}")
    rate: Any = data.get("acceptance_rate")
    length: Any = data.get("mean_acceptance_length")
    cause = data.get("engine_cause")
    if cause is not None and not isinstance(cause, str):
        raise SpecprobeError(f"{path.name}: engine_cause must be a string, got {_kind(cause)}")
    # `smoke --serve` of an engine that refused the deployment records the engine's own cause instead.
    if not _number(rate) and not _number(length) and not cause:
        raise SpecprobeError(f"{path.name} has neither acceptance_rate nor mean_acceptance_length")
    if _number(rate) and not 0 <= float(rate) <= 1:
        raise SpecprobeError(f"{path.name}: acceptance_rate {rate} is not within [0, 1]")
    if _number(length) and float(length) < 1:
        raise SpecprobeError(f"{path.name}: mean_acceptance_length {length} is below 1")
    return data


def _kind(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    names = {bool: "a boolean", str: "a string", list: "a list", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _check_measured(path: Path, key: str, value: Any) -> None:
    if value is None:
        return
    if not _number(value):
        raise SpecprobeError(f"{path.name}: {key} must be a number, got {_kind(value)}")
    if not math.isfinite(value):
        raise SpecprobeError(f"{path.name}: {key} is {value}, not a measured value")
    if value < 0:
        raise SpecprobeError(f"{path.name}: {key} is negative ({value})")


def recorded_subjects(
    data: dict[str, Any], *, smoke_name: str, target: str | None = None, draft: str | None = None
) -> tuple[TargetInfo, DraftInfo | None]:
    """The target and drafter to classify: ``--target``/``--draft`` when given, else the result file's
    subject; a path from the file that is not here says that it came from the file."""
    subject = data["subject"]

    def from_file(what: str, spec: str, classify: Any) -> Any:
        try:
            return classify(spec)
        except SpecprobeError as exc:
            raise SpecprobeError(
                f"{exc} (subject.{what} in {smoke_name}, as recorded where the smoke run ran; pass --{what})"
            ) from None

    target_info = classify_target(target) if target else from_file("target", str(subject["target"]), classify_target)
    if draft:
        return target_info, classify_draft(draft)
    if not subject.get("draft"):
        if str(subject.get("method") or "").lower() in DRAFTERLESS_METHODS:
            return target_info, None
        raise SpecprobeError(f"{smoke_name} names no drafter folder: pass --draft")
    return target_info, from_file("draft", str(subject["draft"]), classify_draft)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _slug(text: str) -> str:
    tail = text.rstrip("/").split("/")[-1] or text
    return re.sub(r"[^a-z0-9.]+", "-", tail.lower()).strip("-.") or "x"


def classify_measurement(data: dict[str, Any]) -> tuple[Status, Severity]:
    """An engine that refused the deployment or lossless failure is broken; collapsing acceptance is
    degraded; the rest works."""
    if isinstance(data.get("engine_cause"), str) and data["engine_cause"]:
        return Status.BROKEN, Severity.ERROR
    rate = float(data["acceptance_rate"]) if _number(data.get("acceptance_rate")) else None
    length = float(data["mean_acceptance_length"]) if _number(data.get("mean_acceptance_length")) else None
    if data.get("lossless") is False:
        return Status.BROKEN, Severity.ERROR
    if (rate is not None and rate < FAIL_ACCEPTANCE_RATE) or (length is not None and length < FAIL_ACCEPTANCE_LENGTH):
        return Status.DEGRADED, Severity.ERROR
    if rate is not None and rate < WARN_ACCEPTANCE_RATE:
        return Status.DEGRADED, Severity.WARNING
    return Status.WORKS, Severity.INFO


def _engine_facets(subject: dict[str, Any]) -> tuple[str, str, str]:
    """(engine, versions, label): a server run names its engine; the reference backend is engine-free."""
    raw_engine = subject.get("engine")
    if isinstance(raw_engine, str) and raw_engine.strip():
        engine, version = parse_engine(raw_engine)
        return engine, f"=={version}" if version is not None else "", raw_engine
    backend = subject.get("backend")
    return "any", "", f"{backend or 'reference'} backend"


def _fmt(value: Any, spec: str) -> str | None:
    return format(float(value), spec) if _number(value) else None


def record_entry(
    data: dict[str, Any],
    *,
    smoke_name: str,
    target: TargetInfo,
    draft: DraftInfo | None,
    entry_id: str | None = None,
) -> Entry:
    """The matrix entry for one smoke result, validated against the matrix schema."""
    subject = data["subject"]
    engine, versions, engine_label = _engine_facets(subject)
    draft_name = subject.get("draft") or (draft.label if draft is not None else "none")
    status, severity = classify_measurement(data)
    method = subject.get("method") or data.get("method")
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    figures = [
        f"acceptance rate {_fmt(data.get('acceptance_rate'), '.1%')}" if _number(data.get("acceptance_rate")) else "",
        f"acceptance length {_fmt(data.get('mean_acceptance_length'), '.2f')}"
        if _number(data.get("mean_acceptance_length"))
        else "",
        f"speed-up {_fmt(data.get('speedup'), '.2f')}x" if _number(data.get("speedup")) else "",
        "lossless" if data.get("lossless") is True else "NOT lossless" if data.get("lossless") is False else "",
        f"refused by the engine: {cause.rstrip('.')}" if isinstance(cause := data.get("engine_cause"), str) else "",
    ]
    evidence_name = re.sub(r"\s+", "-", smoke_name) or "result"
    note_parts = []
    if _number(data.get("tokens")):
        note_parts.append(f"{int(data['tokens'])} tokens")
    if _number(data.get("drafts")):
        note_parts.append(f"{int(data['drafts'])} drafts")
    ci95 = data.get("ci95")
    if isinstance(ci95, list) and len(ci95) == 2 and all(_number(x) for x in ci95):
        note_parts.append(f"95% CI [{float(ci95[0]):.3f}, {float(ci95[1]):.3f}]")
    note_parts.append(engine_label)
    entry: dict[str, Any] = {
        "id": entry_id or f"measured-{engine}-{_slug(str(subject['target']))}-{_slug(str(draft_name))}",
        "kind": EntryKind.MEASURED.value,
        "engine": engine,
        "versions": versions,
    }
    if isinstance(method, str) and method:
        entry["methods"] = [method.lower()]
    if draft is not None:
        draft_facet: dict[str, Any] = {}
        if draft.format:
            draft_facet["formats"] = [draft.format]
        if draft.architecture:
            draft_facet["architectures"] = [draft.architecture]
        if not draft_facet:
            raise SpecprobeError(f"cannot classify the drafter {draft.label!r}: pass --draft with its folder")
        entry["draft"] = draft_facet
    if not target.model_types:
        raise SpecprobeError(f"target {target.label!r} has no model_type in its config.json")
    target_facet: dict[str, Any] = {"model_types": [target.model_types[0]], "attention": [target.attention.value]}
    # A model_type names a family, not a model: the measurement holds for targets of the same shape.
    shape = {
        "hidden_size": target.config.hidden_size,
        "num_hidden_layers": target.config.num_hidden_layers,
        "vocab_size": target.config.vocab_size,
    }
    fingerprint = {key: [f"=={value}"] for key, value in shape.items() if value is not None}
    if fingerprint:
        target_facet["config"] = fingerprint
    entry["target"] = target_facet
    entry.update(
        {
            "status": status.value,
            "severity": severity.value,
            "summary": f"Measured by specprobe smoke on {engine_label}: {subject['target']} with drafter "
            f"{draft_name}: " + ", ".join(f for f in figures if f) + ".",
            # The result file as named on the command line: a path inside the repository stays one.
            "evidence": [f"smoke-run:{evidence_name}@sha256:{digest}"],
            "acceptance": Acceptance(
                acceptance_rate=float(data["acceptance_rate"]) if _number(data.get("acceptance_rate")) else None,
                mean_acceptance_length=float(data["mean_acceptance_length"])
                if _number(data.get("mean_acceptance_length"))
                else None,
                note=", ".join(note_parts),
            ).to_dict(),
        }
    )
    if isinstance(data.get("engine_cause"), str) and data["engine_cause"]:
        entry["hint"] = "The engine refused this deployment at start; the summary quotes its own error."
    elif status is not Status.WORKS:
        entry["hint"] = "Re-run `specprobe check` on the drafter; compare with the pairing's known entries."
    errors = validation_errors({"entries": [entry]})
    if errors:
        raise MatrixError(f"the recorded entry does not match the matrix schema: {errors[0]}")
    return entry_from_dict(entry, source=None)


def matrix_document(entries: list[Entry], description: str | None = None) -> str:
    document: dict[str, Any] = {}
    if description:
        document["description"] = description
    document["entries"] = [e.to_dict() for e in entries]
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=1000)


def merge_into(existing_text: str | None, entry: Entry) -> str:
    """An existing matrix file with ``entry`` added (or replacing the entry of the same id)."""
    if not existing_text:
        return matrix_document([entry], "Measured pairings recorded with `specprobe matrix record`.")
    try:
        document = parse_matrix_yaml(existing_text, "the output file")
    except UntrustedInputError as exc:
        raise MatrixError(f"{exc}; choose another --output") from None
    if validation_errors(document):
        raise MatrixError("the output file exists and is not a matrix file; choose another --output")
    kept = [e for e in document["entries"] if e.get("id") != entry.id]
    document["entries"] = [*kept, entry.to_dict()]
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=1000)
