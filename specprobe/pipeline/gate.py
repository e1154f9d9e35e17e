"""`specprobe gate` as a library: every deployment of the given files linted, its drafter checked, its
pairing looked up in the compatibility matrix, in one report with a section (``Finding.deployment``)
per deployment. `specprobe lint` of a serve command is this same examination of the one deployment
its argv builds (``lint_command``).

Drafters and targets named by hub id (with ``revision`` / ``--speculative-draft-model-revision`` /
``--revision``) are read where they live through ``specprobe.modelfiles``: each distinct repository once
per run, several at a time, only config.json, the shard index, the safetensors headers and d2t/t2d (by
HTTP Range). What cannot be examined (a hub that refuses or does not answer, a path that exists only in
the container, an unexpanded environment variable) is a finding, never silence. No weight file is
downloaded, nothing is imported from a checkpoint, and no engine or torch is imported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from specprobe.compat.engine_facts import sglang_context_length
from specprobe.compat.subjects import DraftInfo, TargetInfo, classify_draft, classify_target, target_from_model_config
from specprobe.context import Family
from specprobe.deploy import rules as deploy_rules
from specprobe.deploy.engines import resolve_engine_version
from specprobe.deploy.loader import EmptyInputError, load_deployments
from specprobe.deploy.model import Deployment, deployment_from_argv
from specprobe.engines.spec import EngineSpec, parse_engine_spec
from specprobe.engines.versions import engine_first
from specprobe.findings import Finding, Report, Section, Severity, SpecprobeError
from specprobe.modelfiles import HubRef, HubSession, ModelFiles, ModelUnavailableError, Unavailable, hub_ref
from specprobe.modelfiles.local import LocalFiles
from specprobe.pipeline.check import _families, build_context, run_families
from specprobe.pipeline.lint import LintCache, lint_deployment
from specprobe.rules import compat
from specprobe.rules import hub as hub_rules
from specprobe.rules import target as target_rules
from specprobe.untrusted.files import is_dir, is_file

__all__ = ["Measure", "ModelRef", "gate_deployments", "gate_paths", "lint_command", "resolve_model"]

Measure = Callable[[Sequence[Deployment]], list[Finding]]
"""Findings measured on running models for the deployments (``gate --smoke``)."""

_UNEXPANDED = re.compile(r"\$\(?\{?[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ModelRef:
    """A target or drafter as far as this machine can see it: its files (a local folder, a hub repository
    read where it lives, or a cached snapshot), or why not."""

    spec: str
    folder: Path | None = None  # a folder with config.json (local, or a Hugging Face cache snapshot)
    hub_cached: bool = False  # a snapshot of the Hugging Face cache stands for the hub repository
    why_not: str | None = None
    files: ModelFiles | None = None
    unavailable: ModelUnavailableError | None = None
    # What check is given for this model: the folder, or the hub reference with its revision.
    check_spec: str | None = None

    @property
    def has_weights(self) -> bool:
        # One directory listing (or the hub's): Path.glob compiles and walks a pattern each call, which
        # made this test a third of a thousand-deployment gate.
        if self.files is not None and self.folder is None:
            return any(".safetensors" in name for name in self.files.listing())
        if self.folder is None:
            return False
        try:
            with os.scandir(self.folder) as entries:
                return any(".safetensors" in entry.name for entry in entries)
        except OSError:
            return False


CheckKey = tuple[str, str | None, str | None, str | None, str | None]


@dataclass
class GateCache:
    """What one gate run reads once and shares between its deployments: check's findings per
    (drafter folder, target, engine, method, device), and lint's snapshots and matrix.

    One per run, passed along, never module state: a folder may change between two runs in one
    process, and two gates in one process (a library caller, threads) must not share results.
    """

    checks: dict[CheckKey, list[Finding]] = field(default_factory=dict)
    # The drafter's context length as SGLang derives it, from the config.json the check read (None: unknown).
    draft_contexts: dict[CheckKey, int | None] = field(default_factory=dict)
    lint: LintCache = field(default_factory=LintCache)
    check_families: list[Family] | None = None
    targets: dict[str, TargetInfo | None] = field(default_factory=dict)
    drafts: dict[str, DraftInfo | None] = field(default_factory=dict)
    # The run's hub reader: each repository resolved and read once, under the run's hub policy.
    hub: HubSession = field(default_factory=HubSession)

    def families(self) -> list[Family]:
        if self.check_families is None:
            self.check_families = _check_families()
        return self.check_families


def model_revision(deployment: Deployment, role: str) -> str | None:
    """The hub revision the launch pins for ``role``: vLLM's ``revision`` in --speculative-config for the
    drafter, SGLang's --speculative-draft-model-revision, and --revision (both engines) for the target.
    (``code_revision`` pins remote code, which specprobe never runs: auto_map is read from config.json.)"""
    command = deployment.command
    value: object = None
    if role == "target":
        value = command.get("--revision") if command is not None else None
    elif command is not None and command.engine == "sglang":
        value = command.get("--speculative-draft-model-revision")
    else:
        value = deployment.speculative.get("revision")
    return value if isinstance(value, str) and value.strip() else None


def _hub_reference(deployment: Deployment, spec: str | None, role: str) -> HubRef | None:
    if not spec or _UNEXPANDED.search(spec):
        return None
    path = deployment.resolve_path(spec)
    if path is not None and (is_dir(path) or is_file(path)):
        return None
    return hub_ref(spec, revision=model_revision(deployment, role), base_dir=deployment.base_dir)


def resolve_model(
    deployment: Deployment, spec: str | None, role: str, hub: HubSession | None = None
) -> ModelRef | None:
    """Where ``spec`` (a path relative to the deployment file, an absolute path, or a hub id) is: a local
    folder, or a hub repository read through ``hub`` (the run's session; a fresh one when None)."""
    if not spec:
        return None
    if _UNEXPANDED.search(spec):
        return ModelRef(spec, why_not=f"{role} {spec!r} refers to an environment variable that is not set in the file")
    path = deployment.resolve_path(spec)
    if path is not None and is_dir(path):
        return ModelRef(spec, folder=path, files=LocalFiles(path, label=spec), check_spec=str(path))
    if path is not None and is_file(path) and path.name == "config.json":
        return ModelRef(spec, folder=path.parent, files=LocalFiles(path.parent, label=spec), check_spec=str(path))
    ref = _hub_reference(deployment, spec, role)
    if ref is not None:
        try:
            files = (hub if hub is not None else HubSession()).open(ref, role)
        except ModelUnavailableError as exc:
            if exc.kind is Unavailable.OFF:
                return ModelRef(spec, why_not=f"{role} {spec!r}: {exc}; `hf download {ref.repo_id}` lets specprobe "
                                "read it from the local cache", unavailable=exc)
            return ModelRef(spec, why_not=str(exc), unavailable=exc)
        return ModelRef(
            spec,
            folder=files.folder,
            hub_cached=files.folder is not None,
            files=files,
            check_spec=str(ref),
        )
    return ModelRef(spec, why_not=f"{role} {spec!r} is not a folder on this machine (a path inside the container?)")


def _not_examined(deployment: Deployment, ref: ModelRef, key: str, strict: bool, hub: HubSession) -> Finding:
    if ref.unavailable is not None and (ref.unavailable.kind is not Unavailable.OFF or hub.policy == "required"):
        # The hub refused or did not answer: HUB-ACCESS (always an error) or HUB-NOT-EXAMINED (by policy;
        # hub = "required" fails even a model left unread by HF_HUB_OFFLINE).
        finding = hub_rules.unavailable_finding(ref.unavailable, key, policy=hub.policy, subject=False)
        return deployment.locate(finding, key)
    severity = Severity.WARNING if strict else Severity.INFO
    finding = deploy_rules.NOT_EXAMINED.finding(ref.why_not or ref.spec, location=ref.spec, severity=severity)
    return deployment.locate(finding, key)


def _check_families() -> list[Family]:
    """check's rule families without the matrix: gate adds the matrix once, from lint (which knows features)."""
    return [family for family in _families() if family is not compat.run]


def _check_draft(deployment: Deployment, draft: ModelRef, target: ModelRef | None, cache: GateCache) -> list[Finding]:
    assert draft.files is not None
    engine = str(deployment.engine) if deployment.engine is not None else None
    target_spec = target.check_spec if target is not None and target.files is not None else None
    # Replicas of one deployment (a fleet's files) name the same drafter: check it once per setting.
    where = str(draft.folder.resolve()) if draft.folder is not None else f"{draft.check_spec}#{draft.files.commit}"
    key = (where, target_spec, engine, deployment.method, deployment.device)
    cached = cache.checks.get(key)
    if cached is None:
        context = build_context(
            draft.files, target=target_spec, engine=engine, method=deployment.method, device=deployment.device,
            hub=cache.hub,
        )
        report = Report(command="check")
        run_families(context, cache.families(), report)
        cached = cache.checks[key] = list(report.findings)
        cache.draft_contexts[key] = sglang_context_length(context.draft_raw) if context.draft_raw is not None else None
        if context.draft_format is not None:
            # check has read the drafter's headers already: the matrix's classification is the same
            # detection (compat.subjects.classify_draft), so the folder is not read a second time.
            label = str(draft.folder) if draft.folder is not None else str(draft.check_spec)
            info = DraftInfo(label=label, format=context.draft_format, architecture=context.draft_architecture)
            cache.drafts.setdefault(label, info)
        if target_spec is not None and context.target_checkpoint is not None and context.target_config is not None:
            # The same for the target: check read its config.json once; the matrix classifies that.
            cache.targets.setdefault(target_spec, target_from_model_config(context.target_config, target_spec))
    findings = []
    launch = _sglang_launch(deployment, cache.draft_contexts.get(key))
    for original in cached:
        finding = replace(original, evidence=list(original.evidence))
        if launch is not None and finding.rule == target_rules.MAX_POSITION.id:
            # SGLang's refusal of a short draft context is the launch's to decide: the command is known here.
            decided = target_rules.max_position_for_launch(finding, *launch)
            if decided is None:
                continue
            finding = decided
        finding.location = f"{draft.spec}/{finding.location}" if finding.location else draft.spec
        findings.append(deployment.locate(finding, "draft", "speculative", "command"))
    return findings


def _sglang_launch(
    deployment: Deployment, draft_context: int | None
) -> tuple[dict[str, str], str | None, int | None] | None:
    """An SGLang deployment's environment, --context-length and the draft's derived context (None: not SGLang)."""
    if deployment.engine_name != "sglang" or deployment.command is None:
        return None
    env = {**deployment.env, **deployment.command.env}
    return env, deployment.command.get("--context-length"), draft_context


def _classify(target: ModelRef | None, draft: ModelRef | None, cache: GateCache) -> tuple[
    TargetInfo | None, DraftInfo | None
]:
    """What the matrix needs of the target and drafter, read once per folder in a run (a fleet names
    one target many times)."""
    target_info = draft_info = None
    if target is not None and target.check_spec is not None and target.files is not None:
        key = target.check_spec
        if key not in cache.targets:
            try:
                cache.targets[key] = classify_target(key, hub=cache.hub)
            except SpecprobeError:
                cache.targets[key] = None  # check's target rules report an unreadable target config
        target_info = cache.targets[key]
    if draft is not None and draft.files is not None:
        key = str(draft.folder) if draft.folder is not None else str(draft.check_spec)
        if key not in cache.drafts:
            try:
                cache.drafts[key] = classify_draft(key)
            except (SpecprobeError, OSError):
                cache.drafts[key] = None
        draft_info = cache.drafts[key]
    return target_info, draft_info


def examine(deployment: Deployment, *, strict: bool = False, cache: GateCache | None = None) -> list[Finding]:
    """Every finding for one deployment whose engine version is resolved; ``cache`` is the run's."""
    cache = cache if cache is not None else GateCache()
    findings = list(deployment.findings)
    if deployment.command is None:
        return findings
    target = resolve_model(deployment, deployment.target, "target", cache.hub)
    draft = resolve_model(deployment, deployment.draft, "draft", cache.hub)
    for ref, key in ((target, "target"), (draft, "draft")):
        if ref is not None and ref.why_not is not None:
            findings.append(_not_examined(deployment, ref, key, strict, cache.hub))
    if draft is not None and draft.files is not None:
        if draft.has_weights or not draft.hub_cached:
            findings.extend(_check_draft(deployment, draft, target, cache))
        else:
            severity = Severity.WARNING if strict else Severity.INFO
            note = deploy_rules.NOT_EXAMINED.finding(
                f"draft {draft.spec!r}: only its config.json is in the local Hugging Face cache; "
                "the checkpoint's weights were not checked",
                location=draft.spec,
                severity=severity,
            )
            findings.append(deployment.locate(note, "draft"))
    target_info, draft_info = _classify(target, draft, cache)
    lint_findings, _ = lint_deployment(
        deployment,
        target=target_info,
        draft=draft_info,
        cache=cache.lint,
        target_files=target.files if target is not None else None,
    )
    findings.extend(lint_findings)
    return findings


# Evidence that belongs to one engine or one input form. A rule shared by both engines or by several
# forms cites them all; a finding about one deployment cites only what applies to it (a vLLM flag
# finding does not send the reader to SGLang's server_args.py, a shell script's to Kubernetes docs).
_ENGINE_OF_URL = {"github.com/vllm-project/": "vllm", "github.com/sgl-project/": "sglang"}
_FORM_OF_URL = {"kubernetes.io/": "kubernetes", "docs.docker.com/reference/compose-file": "compose"}
_FORM_OF_NAME = {"k8s/": "kubernetes", "compose/": "compose", "dockerfile/": "dockerfile", "script/": "shell"}
_SHELL_SUFFIXES = (".sh", ".bash", ".zsh")


def input_form(name: str | None, file: str | None) -> str | None:
    """The input form a deployment (by its name) or a file (by its name) was read from; None when
    neither tells."""
    for prefix, form in _FORM_OF_NAME.items():
        if name and name.startswith(prefix):
            return form
    if file:
        base = Path(file).name.lower()
        if base.endswith(_SHELL_SUFFIXES):
            return "shell"
        if base.startswith(("dockerfile", "containerfile")) or base.endswith(".dockerfile"):
            return "dockerfile"
    return None


def relevant_evidence(evidence: Sequence[str], *, engine: str | None, form: str | None) -> list[str]:
    """``evidence`` without links about the other engine or another input form; links that name
    neither are always kept. This engine's links come first: the reporters show the first one. A
    finding may be left citing nothing of its own (a shell script's DEPLOY-NO-LAUNCH cites only
    Kubernetes and Compose references): better none than a wrong one, and its rule page still
    carries them all."""
    def fits(url: str) -> bool:
        # A link fits unless it names an engine or form, and one other than this deployment's.
        other_engine = any(m in url and engine is not None and o != engine for m, o in _ENGINE_OF_URL.items())
        other_form = any(m in url and form is not None and o != form for m, o in _FORM_OF_URL.items())
        return not (other_engine or other_form)

    kept = [url for url in evidence if fits(url)]
    if engine is not None:
        kept.sort(key=lambda url: not any(marker in url for marker, owner in _ENGINE_OF_URL.items() if owner == engine))
    return kept


def _with_relevant_evidence(findings: Iterable[Finding], engine: str | None, form: str | None) -> list[Finding]:
    out = []
    for finding in findings:
        finding.evidence = relevant_evidence(finding.evidence, engine=engine, form=form)
        out.append(finding)
    return out


def _version_finding(deployment: Deployment) -> Finding:
    source = deployment.version_source.value if deployment.version_source else "unknown"
    detail = f" {deployment.image}" if deployment.image and source == "image tag" else ""
    finding = deploy_rules.ENGINE_VERSION.finding(
        f"checked against {deployment.engine} (from the {source}{detail})", location=deployment.image
    )
    # This engine's releases first: the reporters show the first link.
    finding.evidence = engine_first(finding.evidence, deployment.engine_name)
    return deployment.locate(finding, "engine", "image", "command")


def describe(deployment: Deployment) -> Section:
    """The deployment as a report section."""
    return Section(
        name=deployment.name,
        file=deployment.file,
        line=deployment.source.line,
        engine=str(deployment.engine) if deployment.engine else None,
        version_source=deployment.version_source.value if deployment.version_source else None,
        image=deployment.image,
        target=deployment.target,
        draft=deployment.draft,
        method=deployment.method,
        device=deployment.device,
    )


def gate_deployments(
    deployments: Sequence[Deployment],
    *,
    engine: EngineSpec | None = None,
    strict: bool = False,
    command: str = "gate",
    files: Iterable[str] = (),
    extra_findings: Iterable[Finding] = (),
    measure: Measure | None = None,
    hub: HubSession | None = None,
) -> Report:
    """One report over ``deployments``; ``engine`` (from --engine) applies to deployments of that engine.
    ``hub`` reads the drafters and targets named by hub id (each repository once, several at a time).

    ``measure`` (``gate --smoke``: ``specprobe.smoke.deployment.smoke_findings``) adds measured findings
    before ``--strict`` is applied; the measuring code sits above the pipeline, so it is passed in."""
    report = Report(command=command)
    for finding in extra_findings:
        # About a file rather than a deployment (no launch found, a file that could not be read).
        report.extend(_with_relevant_evidence([finding], None, input_form(None, finding.file)))
    cache = GateCache(hub=hub if hub is not None else HubSession())
    if cache.hub.policy != "off":
        # Every distinct hub repository of the run, read in parallel before the deployments are examined.
        cache.hub.prefetch(
            (ref, role)
            for deployment in deployments
            if deployment.command is not None
            for role, spec in (("target", deployment.target), ("draft", deployment.draft))
            if (ref := _hub_reference(deployment, spec, role)) is not None
        )
    for deployment in deployments:
        own: list[Finding] = []
        if deployment.command is not None:
            resolve_engine_version(deployment, engine)
            if deployment.file is not None:
                own.append(_version_finding(deployment))
        own += examine(deployment, strict=strict, cache=cache)
        form = input_form(deployment.name, deployment.file)
        report.extend(_with_relevant_evidence(own, deployment.engine_name, form))
    if measure is not None:
        report.extend(measure(deployments))
    if strict:
        # Under --strict what could not be examined counts: the gate must not pass on what it did not see.
        for finding in report.findings:
            if finding.rule == deploy_rules.NOT_EXAMINED.id and finding.severity is Severity.INFO:
                finding.severity = Severity.WARNING
    if len(deployments) == 1 and not list(files)[1:]:
        only = deployments[0]
        report.subject = {
            "engine": str(only.engine) if only.engine else None,
            "target": only.target,
            "draft": only.draft,
            "method": only.method,
        }
        if only.file is not None:
            report.subject["file"] = only.file
            report.subject["deployment"] = only.name
    else:
        report.subject = {"files": ", ".join(files) or None, "deployments": str(len(deployments))}
    if command == "gate" or len(deployments) != 1 or deployments[0].file is not None:
        report.sections = [describe(d) for d in deployments]
    return report


def load_paths(paths: Sequence[str], *, stdin_filename: str | None = None) -> tuple[list[Deployment], list[Finding]]:
    """Every deployment in ``paths`` and the findings about the files themselves. A missing or unreadable
    path raises SpecprobeError (exit 2), as does input with nothing in it (empty stdin, or every file
    empty: "no input"); a broken or foreign file is a finding for that file and the others are still read."""
    deployments: list[Deployment] = []
    notes: list[Finding] = []
    empty: list[str] = []
    for path in paths:
        try:
            found, file_findings = load_deployments(path, stdin_name=stdin_filename)
        except EmptyInputError:
            if path == "-":
                raise SpecprobeError("no input") from None
            empty.append(path)
            continue
        deployments.extend(found)
        notes.extend(file_findings)
    if empty and len(empty) == len(paths):
        raise SpecprobeError("no input")
    for path in empty:
        note = deploy_rules.NO_LAUNCH.finding(f"{path}: empty (only blanks and comments)", location=path)
        note.file, note.line = path, 1
        notes.append(note)
    return deployments, notes


def gate_paths(
    paths: Sequence[str],
    *,
    engine: EngineSpec | None = None,
    strict: bool = False,
    measure: Measure | None = None,
    stdin_filename: str | None = None,
    hub: HubSession | None = None,
) -> Report:
    """Parse every file into deployments (``load_paths``) and gate them."""
    deployments, notes = load_paths(paths, stdin_filename=stdin_filename)
    return gate_deployments(
        deployments, engine=engine, strict=strict, files=paths, extra_findings=notes, measure=measure, hub=hub
    )


def lint_command(
    argv: list[str],
    *,
    engine: str | None = None,
    strict: bool = False,
    device: str | None = None,
    hub: HubSession | None = None,
) -> Report:
    """Lint one serve command, and check the drafter and target it names where they are on this machine.

    ``device`` (``--device cpu``) overrides the command's own ``--device``. SpecprobeError when it is not a
    serve command, ``engine`` does not match it, or no snapshot exists.
    """
    deployment = deployment_from_argv(argv)
    if device:
        deployment.device = device
    if engine:
        spec = parse_engine_spec(engine, allow_range=False)
        if spec.engine != deployment.engine_name:
            raise SpecprobeError(f"--engine {engine} does not match the command, which runs {deployment.engine_name}")
        deployment.engine = spec
    option: EngineSpec | None = deployment.engine if engine else None
    report = gate_deployments([deployment], engine=option, strict=strict, command="lint", hub=hub)
    if deployment.device:
        report.subject["device"] = deployment.device
    return report
