"""`specprobe fix` as a library: plan, write into a staging folder, prove, publish; or refuse and say why.

The report is a findings report (command ``fix``): one FIX-* finding per change (info), per blocker
(error) and per part of the proof, with the plan (``plan``), the proof (``proof``) and, when the
drafter cannot be fixed for the release asked, what would work instead (``alternatives``) beside the
contract keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specprobe.findings import Report, Severity, SpecprobeError
from specprobe.fix import apply as applying
from specprobe.fix import proof as proving
from specprobe.fix.alternatives import Alternatives, find_alternatives, matrix_failures
from specprobe.fix.model import Blocker, FixPlan
from specprobe.fix.plan import build_plan, load_target
from specprobe.rules import fix as rules
from specprobe.rules.tokenizer import RETRAIN
from specprobe.untrusted.files import expand_user


@dataclass
class FixOptions:
    draft: Path
    target: str
    engine: str
    out: Path | None = None
    plan_only: bool = False
    exact: bool = False
    format_out: str | None = None
    # Called after each tensor is written (tests interrupt the write here).
    after_tensor: Callable[[str], None] | None = None


def _report(options: FixOptions, plan: FixPlan | None) -> Report:
    return Report(
        command="fix",
        subject={
            "draft": str(options.draft),
            "target": options.target,
            "engine": plan.engine_label if plan is not None else options.engine,
            "out": None if options.out is None else str(options.out),
        },
    )


def _residual_blockers(check: Report, plan: FixPlan) -> list[Blocker]:
    """The copy's own check errors: what rewriting could not change (the pairing, the target's config)."""
    blockers = []
    for finding in check.findings:
        if finding.severity is not Severity.ERROR:
            continue
        blockers.append(
            Blocker(
                rules.UNFIXABLE,
                f"after the fix, check still fails for {plan.engine_label}: {finding.rule}: {finding.message}",
                location=finding.location,
                hint=finding.hint,
                evidence=tuple(finding.evidence[:2]),
            )
        )
    return blockers


def _refuse(report: Report, plan: FixPlan, options: FixOptions, blockers: list[Blocker]) -> Report:
    """Unfixable: the blockers as errors, and the releases and advice that would work instead."""
    # Other releases help only when the pairing or the release is the problem, not missing information.
    alternatives = (
        find_alternatives(
            plan.draft_dir, target=options.target, asked=(plan.engine, plan.version), format_out=options.format_out
        )
        if any(blocker.rule is rules.UNFIXABLE for blocker in blockers)
        else Alternatives()
    )
    alternatives.hints.extend(hint for _, hint in matrix_failures(plan) if hint)
    instead = alternatives.text()
    for blocker in blockers:
        finding = blocker.finding()
        if blocker.rule is rules.UNFIXABLE:
            own = blocker.hint if blocker.hint and blocker.hint not in alternatives.hints else None
            finding.hint = "; ".join(part for part in (own, "instead: " + instead) if part)
        report.add(finding)
    report.extra["alternatives"] = alternatives.to_json_dict()
    report.extra["written"] = False
    return report


def run_fix(options: FixOptions) -> Report:
    """Fix ``options.draft`` for one release; SpecprobeError (exit 2) for arguments that cannot be used."""
    if not options.plan_only and options.out is None:
        raise SpecprobeError("--out NEW_DIR is required (or --plan to only print the changes)")
    out: Path | None = None
    if options.out is not None and not options.plan_only:
        target_files = load_target(options.target)
        out = applying.validate_out(
            options.out, draft_dir=expand_user(options.draft), target_dir=target_files.folder
        )
    started = time.perf_counter()
    plan = build_plan(options.draft, target=options.target, engine=options.engine, format_out=options.format_out)
    report = _report(options, plan)
    timings = report.extra.setdefault("timings_s", {})
    timings["plan"] = round(time.perf_counter() - started, 3)
    report.extra["plan"] = plan.to_json_dict()
    report.extend(change.finding() for change in plan.changes)
    if plan.blockers:
        return _refuse(report, plan, options, plan.blockers)
    started = time.perf_counter()
    if options.plan_only or out is None:
        folder, written = applying.write_shadow(plan)
    else:
        folder = applying.staging_folder(out)
        try:
            written = applying.write_into(plan, folder, after_tensor=options.after_tensor)
        except BaseException:
            applying.discard(folder)
            raise
    timings["write"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    try:
        proof = _prove(plan, folder, written, shadow=options.plan_only or out is None, exact=options.exact)
        timings["proof"] = round(time.perf_counter() - started, 3)
        report.extra["proof"] = proof.to_json_dict()
        if proof.check_errors:
            return _refuse(report, plan, options, _residual_blockers_from(proof, plan))
        if proof.tokenizer_refuted:
            tokenizer = proof.tokenizer or {}
            return _refuse(report, plan, options, [Blocker(
                rules.UNFIXABLE,
                f"the copy's tokenizer against the target's: {tokenizer.get('verdict')} "
                f"({tokenizer.get('evidence')}); {RETRAIN}",
                location="config.json:vocab_size",
            )])
        _proof_findings(report, plan, proof, shadow=options.plan_only)
        if out is not None and not options.plan_only and report.ok:
            applying.publish(folder, out)
            report.extra["written"] = str(out)
        else:
            report.extra["written"] = False
    finally:
        if folder.exists():
            applying.discard(folder)
    return report


def _residual_blockers_from(proof: proving.Proof, plan: FixPlan) -> list[Blocker]:
    return _residual_blockers(Report(command="check", findings=list(proof.check_errors)), plan)


def _prove(plan: FixPlan, folder: Path, written: applying.Written, *, shadow: bool, exact: bool) -> proving.Proof:
    check = proving.check_copy(folder, plan)
    result = proving.Proof(
        check_errors=[f for f in check.findings if f.severity is Severity.ERROR],
        check_warnings=check.summary.warnings,
        tokenizer=proving.tokenizer_proof(folder, plan),
    )
    if result.check_errors or shadow:
        return result
    result.tensors = proving.checksums(plan, written)
    result.logits = proving.reference_logits(plan, folder)
    if exact:
        result.exact = proving.exact_proof(folder, plan)
    return result


def _proof_findings(report: Report, plan: FixPlan, proof: proving.Proof, *, shadow: bool) -> None:
    what = "the planned copy (header-only, nothing written)" if shadow else "the copy"
    report.add(
        rules.PROOF.finding(
            f"check of {what} for {plan.engine_label}: no errors, {proof.check_warnings} warning(s)",
        )
    )
    tokenizer = proof.tokenizer or {}
    report.add(
        rules.PROOF.finding(
            f"tokenizer of {what} against the target's: {tokenizer.get('verdict')} ({tokenizer.get('evidence')})"
            + ("; vocab_size was rewritten, so one tokenizer had to be shown" if tokenizer.get("vocab_size_rewritten")
               else ""),
        )
    )
    if shadow:
        return
    copied = [t for t in proof.tensors if t.origin == "copied"]
    differing = [t.name for t in copied if not t.identical]
    built = [t for t in proof.tensors if t.origin != "copied"]
    if differing:
        report.add(
            rules.PROOF.finding(
                f"{len(differing)} copied tensor(s) differ from the source: {', '.join(differing[:5])}",
                severity=Severity.ERROR,
            )
        )
    else:
        report.add(
            rules.PROOF.finding(
                f"{len(copied)} tensor(s) byte-identical to the source (sha256 of source and copy); "
                f"{len(built)} derived or taken from the target: "
                + (", ".join(f"{t.name} ({t.origin})" for t in built) or "none"),
            )
        )
    logits = proof.logits or {}
    if logits.get("compared"):
        identical = bool(logits.get("identical"))
        report.add(
            rules.PROOF.finding(
                f"reference backend, float32, {logits['positions']} positions: draft logits of the original and "
                f"the copy differ by at most {logits['max_abs_diff']:g}"
                + ("" if identical else " (NOT identical)")
                + (f"; {logits['d2t_entries_changed']} d2t entries now map elsewhere (repaired map)"
                   if logits.get("d2t_entries_changed") else ""),
                severity=Severity.INFO if identical else Severity.ERROR,
            )
        )
    else:
        report.add(rules.PROOF.finding(f"draft logits not compared: {logits.get('reason', 'not run')}"))
    if proof.exact is not None:
        if proof.exact.get("available"):
            report.add(
                rules.PROOF.finding(
                    f"exact check in {plan.engine_label}'s own code: "
                    + ("the copy loads" if proof.exact.get("ok") else "the copy does NOT load"),
                    severity=Severity.INFO if proof.exact.get("ok") else Severity.ERROR,
                )
            )
        else:
            report.add(rules.EXACT.finding(str(proof.exact.get("reason"))))
