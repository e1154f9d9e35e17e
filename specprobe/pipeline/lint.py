"""The engine-settings rules of one deployment (a `vllm serve ...` or `python -m sglang.launch_server ...`
launch, from a serve command line or a deployment file): what `lint` reports.

The command is parsed (never run), its speculative-decoding settings are checked against the engine
version's schema snapshot, and the compatibility matrix adds what it knows of the pairing. The gate
(``specprobe.pipeline.gate``) runs this for every deployment it examines.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft202012Validator, ValidationError
from packaging.version import Version

from specprobe.compat.engine_facts import auto_resolved_flags, self_drafting_architectures
from specprobe.compat.evaluate import evaluate
from specprobe.compat.loader import load_matrix
from specprobe.compat.model import Entry, Pairing, Verdict
from specprobe.compat.snapshots import StoreSnapshots
from specprobe.compat.subjects import DraftInfo, TargetInfo, build_pairing
from specprobe.deploy.argv import ServeCommand, normalise_flag
from specprobe.deploy.model import Deployment, parse_speculative
from specprobe.deploy.quoting import quoting_hint
from specprobe.engines.versions import parse_version
from specprobe.findings import Finding, Severity, SpecprobeError
from specprobe.hfconfig import (
    MAX_CONFIG_BYTES,
    ConfigError,
    cached_file,
    load_config_json,
    looks_like_hub_id,
    parse_config_bytes,
)
from specprobe.modelfiles import ModelFiles
from specprobe.rules import cli_args, launch_classes, within_lifecycle
from specprobe.rules import lint as rules
from specprobe.rules.compat import matrix_findings
from specprobe.rules.internal import guarded
from specprobe.schema.jsonschema_export import to_json_schema
from specprobe.schema.model import EngineSchema
from specprobe.schema.store import known_versions, load_snapshot
from specprobe.untrusted.files import exists

__all__ = ["LintCache", "LintResult", "lint_deployment"]
_normalise = normalise_flag


@dataclass
class LintCache:
    """What the deployments of one run share, read once per run instead of once per deployment: the
    schema snapshot per engine version, the shipped compatibility matrix and the snapshot facts the
    matrix reads. A gate over a fleet of a thousand deployments would otherwise parse the matrix
    YAML and deep-copy a snapshot a thousand times. Lint only reads the schema, never mutates it, so
    one copy per run is safe; a new run (a new cache) sees files changed in between."""

    snapshots: dict[tuple[str, str | None], tuple[EngineSchema, str | None]] = field(default_factory=dict)
    matrix: list[Entry] | None = None
    facts: StoreSnapshots = field(default_factory=StoreSnapshots)
    verdicts: dict[tuple[Any, ...], list[Verdict]] = field(default_factory=dict)

    def snapshot(self, engine: str, version: str | None) -> tuple[EngineSchema, str | None]:
        key = (engine, version)
        if key not in self.snapshots:
            self.snapshots[key] = _snapshot(engine, version)
        return self.snapshots[key]

    def entries(self) -> list[Entry]:
        if self.matrix is None:
            self.matrix = load_matrix()
        return self.matrix

    def evaluate(self, pairing: Pairing) -> list[Verdict]:
        """The matrix verdicts for ``pairing``, evaluated once per distinct pairing in a run (replicas
        of a deployment, or drafters of one shape, share them)."""
        # Pairing is frozen but holds the target's config.json as a dict: key on its JSON text. The
        # labels (the folders as named) are not read by the evaluation: drafters of one shape in
        # different folders share their verdicts.
        config = json.dumps(pairing.target_config, sort_keys=True, default=str)
        key = (replace(pairing, target_config=None, target_label=None, draft_label=None), config)
        if key not in self.verdicts:
            self.verdicts[key] = evaluate(self.entries(), pairing, self.facts)
        return self.verdicts[key]


def _snapshot(engine: str, version: str | None) -> tuple[EngineSchema, str | None]:
    """The snapshot to lint against, and a note when it is not the requested version's own: the
    nearest older snapshot (flags are added more often than removed), else the oldest newer one."""
    schema = load_snapshot(engine, version)
    if schema is not None:
        return schema, None
    known = known_versions(engine)
    if not known:
        raise SpecprobeError(f"no schema snapshot of {engine} is shipped; extract one with `specprobe schema {engine}`")
    wanted = Version(version) if version else None
    older = [v for v in known if wanted is not None and (parsed := parse_version(v)) is not None and parsed < wanted]
    chosen = older[-1] if older else known[0]
    nearest = load_snapshot(engine, chosen)
    if nearest is None:  # listed but unreadable: the shipped store is damaged
        raise SpecprobeError(f"the shipped schema snapshot of {engine} {chosen} cannot be read")
    return nearest, f"no snapshot of {engine} {version}: linted against {engine} {chosen}"


def _close(name: str, choices: list[str]) -> str:
    match = difflib.get_close_matches(name, choices, n=1)
    return f"; did you mean {match[0]!r}?" if match else ""


@dataclass
class LintResult:
    """What lint learned about the command, for the report and the matrix pairing."""

    findings: list[Finding] = field(default_factory=list)
    method: str | None = None
    draft_path: str | None = None
    features: set[str] = field(default_factory=set)


_BOUND_NAMES = {"minimum": "ge", "exclusiveMinimum": "gt", "maximum": "le", "exclusiveMaximum": "lt"}


def _value_problem(key: str, error: ValidationError) -> str:
    """One SpeculativeConfig value error in lint's words: the types it accepts, the choices it is not
    one of, or the engine bound it breaks. A property typed ``X | None`` is an ``anyOf``: its
    branches' errors say which applies (a branch failing on more than its type is the one to report)."""
    leaves = list(error.context or ()) if error.validator in ("anyOf", "oneOf") else [error]
    leaves = leaves or [error]
    failed_on_type = {leaf.relative_schema_path[0] for leaf in leaves if leaf.validator == "type"}
    value = error.instance
    for leaf in leaves:
        branch = leaf.relative_schema_path[0] if error.validator in ("anyOf", "oneOf") else None
        if leaf.validator == "type" or branch in failed_on_type:
            continue
        if leaf.validator == "enum":
            choices = [c for c in cast("list[Any]", leaf.validator_value) if c is not None]
            return f"{key}={json.dumps(value)} is not one of {choices}"
        if leaf.validator in _BOUND_NAMES:
            return f"{key}={value} breaks the engine's bound {_BOUND_NAMES[leaf.validator]} {leaf.validator_value:g}"
    types: set[str] = set()
    for leaf in leaves:
        if leaf.validator == "type":
            declared = cast("str | list[str]", leaf.validator_value)
            types.update([declared] if isinstance(declared, str) else declared)
    return f"{key} must be {' or '.join(sorted(types)) or 'another type'}, got {json.dumps(value)}"


def _check_settings(settings: dict[str, Any], schema: EngineSchema, where: str) -> list[Finding]:
    """SpeculativeConfig settings against the snapshot's exported JSON Schema (the document
    `specprobe schema --format json-schema` writes), one finding per key in the order written."""
    found: dict[str, Finding] = {}
    for name in settings:
        spec = schema.parameters.get(name)
        if spec is None:
            found[name] = rules.SPEC_CONFIG_KEY.finding(
                f"SpeculativeConfig of vllm {schema.version} has no field {name!r}"
                + _close(name, sorted(schema.parameters)),
                location=where,
                key=f"speculative.{name}",
            )
        elif spec.internal:
            found[name] = rules.SPEC_CONFIG_KEY.finding(
                f"{name!r} is set by vLLM itself, not by users", location=where, key=f"speculative.{name}"
            )
    validator = Draft202012Validator(to_json_schema(schema))
    for error in validator.iter_errors(settings):
        if not error.absolute_path:
            continue  # unknown and internal keys are named above; a missing key is the engine's default
        name = str(error.absolute_path[0])
        # The method has its own rule (LINT-METHOD), and null is the engine's default for what it accepts.
        if name in found or name == "method" or settings.get(name) is None:
            continue
        found[name] = rules.SPEC_CONFIG_VALUE.finding(
            _value_problem(name, error), location=where, key=f"speculative.{name}"
        )
    return [found[name] for name in settings if name in found]


def _lint_vllm(command: ServeCommand, schema: EngineSchema, result: LintResult) -> None:
    known_flags = {_normalise(f) for flag in schema.cli_flags for f in flag.flags}
    known_flags |= {_normalise(a) for p in schema.parameters.values() for a in [p.flag, *p.aliases] if a}
    for flag, spelled in command.spellings.items():
        speculative = "specul" in flag or flag.startswith("--spec-")
        if speculative and flag not in known_flags and not flag.startswith("--speculative-config."):
            result.findings.append(
                rules.UNKNOWN_FLAG.finding(
                    f"vllm {schema.version} has no flag {spelled}" + _close(flag, sorted(known_flags)),
                    location=spelled,
                    key=flag,
                    hint='Speculative decoding is set with --speculative-config \'{"method": ..., "model": ...}\'.',
                )
            )
    settings = parse_speculative(command)
    where = command.spellings.get("--speculative-config", "--speculative-config")
    if settings.problem is not None:
        problem = rules.SPEC_CONFIG_JSON.finding(
            settings.problem,
            location=where,
            key="--speculative-config",
            hint=quoting_hint(command.get("--speculative-config"), where),
        )
        result.findings.append(problem)
    if not settings.given:
        result.findings.append(rules.NO_SPECULATION.finding("no --speculative-config: speculative decoding is off"))
        return
    if settings.problem is not None and not settings.values:
        return
    config = settings.values
    result.findings.extend(_check_settings(config, schema, where))
    method = config.get("method")
    if isinstance(method, str):
        result.method = method.lower()
        if schema.methods and result.method not in [m.lower() for m in schema.methods]:
            result.findings.append(
                rules.METHOD.finding(
                    f"vllm {schema.version} has no speculative method {method!r}"
                    + _close(method, list(schema.methods)),
                    location=where,
                    key="speculative.method",
                )
            )
    model = config.get("model")
    result.draft_path = model if isinstance(model, str) else None
    if command.has("--enable-lora"):
        result.features.add("lora")


def _int_flag(command: ServeCommand, flag: str, result: LintResult) -> int | None:
    if not command.has(flag):
        return None
    raw = command.get(flag)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        result.findings.append(
            rules.SPEC_CONFIG_VALUE.finding(
                f"{flag} must be an integer, got {raw!r}", location=command.spellings[flag], key=flag
            )
        )
        return None


def _target_architectures(target: Path | str | ModelFiles | None) -> list[str] | None:
    """The architectures of the target's config.json: from its files when the caller located them (a
    folder, or a hub repository read by specprobe.modelfiles), else when it is on this machine (a folder,
    or a hub id already in the local hub cache); None otherwise."""
    if target is None:
        return None
    raw: Any = None
    if isinstance(target, ModelFiles):
        try:
            raw = parse_config_bytes(target.read_file("config.json", max_bytes=MAX_CONFIG_BYTES)).value
        except (ConfigError, OSError, ValueError):
            return None
        architectures = raw.get("architectures") if isinstance(raw, dict) else None
        return [a for a in architectures if isinstance(a, str)] if isinstance(architectures, list) else None
    path = Path(target)
    try:
        if path.is_dir() and (path / "config.json").is_file():
            raw = load_config_json(path / "config.json")
        elif looks_like_hub_id(str(target)) and (cached := cached_file(str(target), "config.json")) is not None:
            raw = load_config_json(cached)
    except (ConfigError, OSError, ValueError):
        return None
    architectures = raw.get("architectures") if isinstance(raw, dict) else None
    if not isinstance(architectures, list):
        return None
    return [a for a in architectures if isinstance(a, str)]


def _sglang_draft_path(
    command: ServeCommand, algorithm: str, version: str, target: Path | str | ModelFiles | None, result: LintResult
) -> None:
    """EAGLE-family algorithms without a draft path: SGLang fills it with the target's own path for
    targets that carry their own MTP layers, and loads the target as its own draft (and crashes) for
    the others."""
    fills = self_drafting_architectures("sglang", version)
    if algorithm.upper() == "EAGLE3":
        # Filled or not, the draft is never an EAGLE-3 head: a target's own MTP layers are an EAGLE
        # (NextN) head, any other target is loaded as its own draft.
        result.findings.append(
            rules.SGLANG_DRAFT_PATH.finding(
                f"--speculative-algorithm {algorithm} without --speculative-draft-model-path: sglang {version} "
                "loads the target's own path as the draft, which is no EAGLE-3 drafter (at best the target's MTP "
                "layers, an EAGLE/NextN head)",
                hint="Point --speculative-draft-model-path at the EAGLE-3 drafter, or use --speculative-algorithm "
                "EAGLE for the target's own MTP layers.",
                evidence=(fills.evidence,) if fills else (),
            )
        )
        return
    if fills is None:
        result.findings.append(
            rules.SGLANG_DRAFT_PATH.finding(
                f"--speculative-algorithm {algorithm} without --speculative-draft-model-path; which targets "
                f"sglang {version} fills it for is not known to specprobe",
                severity=Severity.WARNING,
                hint="Point --speculative-draft-model-path at the drafter checkpoint.",
            )
        )
        return
    listed = ", ".join(fills.value) or "none"
    architectures = _target_architectures(target)
    if architectures is None:
        result.findings.append(
            rules.SGLANG_DRAFT_PATH.finding(
                f"--speculative-algorithm {algorithm} without --speculative-draft-model-path: sglang {version} fills "
                f"it with the target's own path (its MTP layers) for these architectures: {listed}; any other target "
                f"is loaded as its own draft and crashes. The target's config.json is not on this machine to tell",
                severity=Severity.INFO,
                hint="Point --speculative-draft-model-path at the drafter unless the target carries MTP layers.",
                evidence=(fills.evidence,),
            )
        )
        return
    if architectures and architectures[0] in fills.value:
        result.findings.append(
            rules.SGLANG_DRAFT_PATH.finding(
                f"sglang {version} fills --speculative-draft-model-path with the target's own path: "
                f"{architectures[0]} carries its own MTP layers",
                severity=Severity.INFO,
                evidence=(fills.evidence,),
            )
        )
        return
    result.findings.append(
        rules.SGLANG_DRAFT_PATH.finding(
            f"--speculative-algorithm {algorithm} without --speculative-draft-model-path, and the target "
            f"({', '.join(architectures) or 'no architectures'}) is not one sglang {version} drafts with its own MTP "
            f"layers ({listed})",
            hint="Point --speculative-draft-model-path at the drafter checkpoint.",
            evidence=(fills.evidence,),
        )
    )


def _lint_sglang(
    command: ServeCommand,
    schema: EngineSchema,
    version: str | None = None,
    target: Path | str | ModelFiles | None = None,
) -> LintResult:
    version = version or schema.version
    result = LintResult()
    known_flags = {_normalise(f) for flag in schema.cli_flags for f in flag.flags}
    for flag, spelled in command.spellings.items():
        if flag.startswith("--speculative-") and flag not in known_flags:
            result.findings.append(
                rules.UNKNOWN_FLAG.finding(
                    f"sglang {schema.version} has no flag {spelled}" + _close(flag, sorted(known_flags)),
                    location=spelled,
                    key=flag,
                )
            )
    algorithm = command.get("--speculative-algorithm")
    if algorithm is None:
        result.findings.append(rules.NO_SPECULATION.finding("no --speculative-algorithm: speculative decoding is off"))
        return result
    result.method = algorithm.lower()
    offered = [m.upper() for m in schema.methods]
    if offered and algorithm.upper() not in offered:
        result.findings.append(
            rules.METHOD.finding(
                f"sglang {schema.version} has no speculative algorithm {algorithm!r} (has: {', '.join(offered)})",
                location="--speculative-algorithm",
                key="--speculative-algorithm",
            )
        )
    steps = _int_flag(command, "--speculative-num-steps", result)
    topk = _int_flag(command, "--speculative-eagle-topk", result)
    tokens = _int_flag(command, "--speculative-num-draft-tokens", result)
    triple = ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens")
    # The EAGLE family chooses all three itself only when none is given (and asserts so); other
    # algorithms (NGRAM) derive the missing ones themselves: topk from the BFS breadth, 12 draft tokens.
    eagle_family = algorithm.upper() in ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
    filled = () if eagle_family else auto_resolved_flags("sglang", version, algorithm)
    given = [f for f in triple if command.has(f) and f not in filled]
    if filled:
        given = []
    if given and len(given) != len(triple):
        missing = [f for f in triple if f not in given]
        result.findings.append(
            rules.SGLANG_STEPS.finding(
                f"{', '.join(given)} set without {', '.join(missing)}",
                hint="Set all three, or none and let SGLang choose them.",
                key=given[0],
            )
        )
    if topk == 1 and steps is not None and tokens is not None and tokens != steps + 1 and not filled:
        result.findings.append(
            rules.SGLANG_TOPK1_TOKENS.finding(
                f"--speculative-eagle-topk 1 with --speculative-num-steps {steps}: sglang replaces the "
                f"--speculative-num-draft-tokens {tokens} written with {steps + 1} and logs a warning "
                '("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when '
                'speculative_eagle_topk == 1")'
                if rules.topk1_adjusted(version)
                else f"--speculative-eagle-topk 1 with --speculative-num-steps {steps}: sglang=={version} runs "
                f"with --speculative-num-draft-tokens {tokens} as given, not the chain length {steps + 1}",
                severity=rules.topk1_severity(version),
                key="--speculative-num-draft-tokens",
            )
        )
    if topk is not None and topk > 1:
        result.features.add("eagle_topk_gt_1")
    draft = command.get("--speculative-draft-model-path")
    result.draft_path = draft
    if algorithm.upper() in ("EAGLE", "EAGLE3", "NEXTN") and draft is None:
        _sglang_draft_path(command, algorithm, version, target, result)
    if command.has("--enable-lora") or command.has("--lora-paths"):
        result.features.add("lora")
    return result


def _finding_line(deployment: Deployment, finding: Finding) -> int | None:
    """The line a command finding points at: the line of the setting it is about (``finding.key``) in
    the deployment's source map, else the line of the speculative settings as a whole."""
    key = finding.key
    source = deployment.source
    if key is not None and key.startswith("--"):
        # An unknown flag is about the flag itself; the other rules are about its value.
        line = deployment.flag_line(key, value=finding.rule != rules.UNKNOWN_FLAG.id)
        if line is not None:
            return line
    elif key is not None and key in source.fields:
        return source.fields[key]
    return source.line_of("speculative", "command")


def lint_deployment(
    deployment: Deployment,
    *,
    target: TargetInfo | None = None,
    draft: DraftInfo | None = None,
    cache: LintCache | None = None,
    target_files: ModelFiles | None = None,
) -> tuple[list[Finding], str]:
    """Lint the deployment's serve command against its engine version's snapshot, then add the matrix
    verdicts for the pairing (``target``/``draft`` when the caller could examine them).

    Returns the findings, each stamped with the deployment's file, line and name, and the engine label
    (``vllm==0.33.0``) the command was linted against. ``cache`` shares snapshots and the matrix
    between the deployments of one run.
    """
    cache = cache if cache is not None else LintCache()
    command = deployment.command
    if command is None or deployment.engine is None:
        raise SpecprobeError(f"deployment {deployment.name} has no serve command to lint")
    version = deployment.engine.version
    schema, snapshot_note = cache.snapshot(command.engine, version)

    def lint() -> LintResult:
        target_path = deployment.resolve_path(deployment.target or command.model)
        if command.engine == "vllm":
            linted = LintResult()
            _lint_vllm(command, schema, linted)
            linted.findings.extend(launch_classes.run_vllm(command, version or schema.version))
        else:
            local_target: Path | str | ModelFiles | None = (
                target_path if target_path is not None and exists(target_path) else command.model
            )
            if target_files is not None:
                local_target = target_files  # read where it is (a hub target through the run's reader)
            linted = _lint_sglang(command, schema, version, local_target)
        linted.findings.extend(
            launch_classes.run_mtp_target(command.engine, version or schema.version, linted.method, target_path)
        )
        return linted

    # A bug in a lint rule is an INTERNAL-ERROR finding (exit 2), never a pass.
    linted, crash = guarded(f"lint of the {command.engine} command", lint)
    result = linted if linted is not None else LintResult(findings=[crash] if crash else [])
    # The matrix's CPU-platform entries (compat_matrix/platform.yaml) are about vLLM's CPU MLA backend;
    # VLLM_MLA_DISABLE=1 makes vLLM run an MLA target with its ordinary attention (config/model.py use_mla).
    mla_off = command.env.get("VLLM_MLA_DISABLE", "0").strip() not in ("", "0")
    if (deployment.device or "").strip().lower() == "cpu" and not mla_off:
        result.features.add("cpu")
    pp = command.get("--pipeline-parallel-size")
    if pp is not None and pp.isascii() and pp.isdigit() and len(pp) < 10 and int(pp) > 1:
        result.features.add("pipeline_parallel")
    engine_label = f"{command.engine}=={version or schema.version}"
    findings: list[Finding] = []
    if snapshot_note:
        note = rules.for_version(rules.SNAPSHOT.finding(snapshot_note), command.engine, version or schema.version)
        findings.append(note)
    for finding in result.findings:
        located = rules.for_version(finding, command.engine, version or schema.version)
        if deployment.file is not None:
            located.line = _finding_line(deployment, located)
        findings.append(located)
    # The whole command, speculative or not, against the release's own launch parser (a refusal there
    # means the server never starts).
    release = version or schema.version
    whole, crash = guarded(
        "the whole-command check", lambda: list(cli_args.check_deployment(deployment, release, findings))
    )
    findings.extend(whole or ([crash] if crash else []))
    if result.method is not None:
        pairing = build_pairing(
            engine=engine_label, method=result.method, target=target, draft=draft, features=frozenset(result.features)
        )
        matrix_line = deployment.source.line_of("method", "speculative", "command")
        evaluated, crash = guarded("the compatibility matrix", lambda: cache.evaluate(pairing))
        verdicts = evaluated or []
        if crash is not None:
            findings.append(crash)
        # LINT-METHOD has judged the method against the release's schema already: no method step here.
        for verdict_line in matrix_findings(pairing, verdicts, prefix=f"{engine_label}: "):
            if deployment.file is not None:
                verdict_line.line = matrix_line
            findings.append(verdict_line)
    # A rule whose engine range (or status) puts it outside the release linted says nothing here.
    judged = [(command.engine, version or schema.version)]
    return [deployment.locate(f) for f in within_lifecycle(findings, judged)], engine_label
