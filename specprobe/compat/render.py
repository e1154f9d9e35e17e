"""Rendering the matrix: entry dicts for JSON, a rich table for terminals, and COMPATIBILITY.md.

`python -m specprobe.compat.render > COMPATIBILITY.md` (or `specprobe matrix --format markdown
--output COMPATIBILITY.md`) regenerates the document; a test fails when the committed one is stale.
"""

from __future__ import annotations

import io
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from specprobe.compat.loader import load_matrix
from specprobe.compat.model import ENGINES, FEATURES, Entry, EntryKind, Match, Status, Verdict
from specprobe.compat.snapshots import SnapshotSource, StoreSnapshots

STATUS_MEANING = {
    Status.WORKS: "known to work",
    Status.DEGRADED: "runs, but acceptance (and so the speed-up) collapses",
    Status.BROKEN: "crashes, stalls or produces wrong output",
    Status.UNSUPPORTED: "the engine refuses the configuration",
}
_STATUS_STYLE = {Status.WORKS: "green", Status.DEGRADED: "yellow", Status.BROKEN: "red", Status.UNSUPPORTED: "red"}


def allowlists(snapshots: SnapshotSource) -> dict[str, list[str] | None]:
    """vLLM's EAGLE-3 target allowlist per snapshotted version (None: that version has no gate)."""
    table: dict[str, list[str] | None] = {}
    for version in snapshots.versions("vllm"):
        facts = snapshots.facts("vllm", version)
        if facts is not None:
            allowed = facts.eagle3_target_supported
            table[str(version)] = list(allowed) if allowed is not None else None
    return table


def entry_dict(entry: Entry, snapshots: SnapshotSource) -> dict[str, Any]:
    data = entry.to_dict()
    if entry.kind is EntryKind.EAGLE3_TARGET_ALLOWLIST:
        data["allowlists"] = allowlists(snapshots)
    return data


def entries_json(entries: Iterable[Entry], snapshots: SnapshotSource | None = None) -> list[dict[str, Any]]:
    source = snapshots if snapshots is not None else StoreSnapshots()
    return [entry_dict(e, source) for e in entries]


def verdicts_json(verdicts: Iterable[Verdict], snapshots: SnapshotSource | None = None) -> list[dict[str, Any]]:
    source = snapshots if snapshots is not None else StoreSnapshots()
    rows = []
    for verdict in verdicts:
        data = entry_dict(verdict.entry, source)
        data["match"] = verdict.match.value
        data["verdict"] = verdict.message
        data["status"] = verdict.effective_status.value
        data["severity"] = verdict.effective_severity.value
        if verdict.missing:
            data["missing"] = list(verdict.missing)
        rows.append(data)
    return rows


def _drafter(entry: Entry) -> str:
    parts = [*entry.draft_formats, *entry.draft_architectures]
    return ", ".join(parts) or "any"


def _target(entry: Entry) -> str:
    parts = [k.value for k in entry.target_attention] + list(entry.target_model_types)
    parts += [f"{key} {' or '.join(conditions)}" for key, conditions in entry.target_config]
    if entry.kind is EntryKind.EAGLE3_TARGET_ALLOWLIST:
        return "model_type outside the version's allowlist"
    return " + ".join(parts) or "any"


def _methods(entry: Entry) -> str:
    return ", ".join(entry.methods) or "any"


def _acceptance(entry: Entry) -> str:
    return entry.acceptance.describe() if entry.acceptance is not None else ""


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _evidence_links(entry: Entry) -> str:
    links = []
    for i, item in enumerate(entry.evidence, start=1):
        links.append(f"[{i}]({item})" if item.startswith(("https://", "docs/")) else f"`{item}`")
    return " ".join(links)


def render_markdown(entries: Sequence[Entry], snapshots: SnapshotSource | None = None) -> str:
    """COMPATIBILITY.md: every entry by engine, the allowlists read from the snapshots, the legend."""
    source = snapshots if snapshots is not None else StoreSnapshots()
    lines = [
        "# specprobe compatibility matrix",
        "",
        "Generated from `specprobe/data/compat_matrix/*.yaml` and the engine schema snapshots by",
        "`specprobe matrix --format markdown --output COMPATIBILITY.md`; do not edit by hand.",
        "",
        "Check one pairing: `specprobe matrix --engine vllm==0.16.0 --method eagle3 --target TARGET --draft DRAFT`.",
        "Add a measured pairing:",
        "`specprobe matrix record SMOKE.json --output specprobe/data/compat_matrix/measured.yaml`.",
        "",
        "| status | meaning |",
        "| --- | --- |",
    ]
    lines += [f"| {status.value} | {meaning} |" for status, meaning in STATUS_MEANING.items()]
    for engine in (*ENGINES, "any"):
        rows = [e for e in entries if e.engine == engine]
        if not rows:
            continue
        lines += [
            "",
            f"## {engine if engine != 'any' else 'Every engine'}",
            "",
            "| id | versions | methods | drafter | target | features | status | severity | summary "
            "| measured | evidence |",
            "| --- " * 11 + "|",
        ]
        for e in rows:
            lines.append(
                f"| `{e.id}` | {_md(e.versions_text)} | {_methods(e)} | {_md(_drafter(e))} | {_md(_target(e))} "
                f"| {', '.join(e.features) or ''} | {e.status.value} | {e.severity.value} | {_md(e.summary)} "
                f"| {_md(_acceptance(e))} | {_evidence_links(e)} |"
            )
    table = allowlists(source)
    lines += [
        "",
        "## vLLM EAGLE-3 target allowlist by version",
        "",
        "Read from the schema snapshots (`eagle3_target_supported`); a target is accepted when one of",
        "the names is a substring of its text model's `model_type`.",
        "",
    ]
    if table:
        lines += ["| vLLM | allowlist |", "| --- | --- |"]
        for version, allowed in table.items():
            text = ", ".join(f"`{a}`" for a in allowed) if allowed is not None else "none in the snapshot"
            lines.append(f"| {version} | {text} |")
    else:
        lines.append("No vLLM schema snapshot is shipped yet.")
    lines += ["", "## Serving features", "", "| feature | meaning |", "| --- | --- |"]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in FEATURES.items()]
    return "\n".join(lines) + "\n"


def render_verdicts_markdown(verdicts: Sequence[Verdict], subject: str) -> str:
    lines = [f"# specprobe matrix: {subject}", ""]
    if not verdicts:
        return "\n".join([*lines, "No matrix entry applies to this pairing.", ""])
    lines += ["| match | id | status | severity | verdict | evidence |", "| --- | --- | --- | --- | --- | --- |"]
    for v in verdicts:
        lines.append(
            f"| {v.match.value} | `{v.entry.id}` | {v.effective_status.value} | {v.effective_severity.value} "
            f"| {_md(v.message)} | {_evidence_links(v.entry)} |"
        )
    return "\n".join(lines) + "\n"


# Below this width the five columns cannot all be read: each entry folds into a block instead.
WIDE_TABLE = 120


def _folded(entries: Sequence[Entry], width: int) -> list[Text]:
    """One block per entry for a narrow terminal, columns by priority: id and status on the first
    line, then engine and versions with what it applies to, then the summary, each wrapped."""
    blocks: list[Text] = []
    for e in entries:
        scope = f"method {_methods(e)}; drafter {_drafter(e)}; target {_target(e)}"
        if e.features:
            scope += f"; with {', '.join(e.features)}"
        summary = e.summary + (f" [measured: {_acceptance(e)}]" if _acceptance(e) else "")
        block = Text()
        block.append(e.id, style="bold")
        block.append("  ")
        block.append(e.status.value, style=_STATUS_STYLE[e.status])
        block.append(f" ({e.severity.value})\n")
        for line in (f"{e.engine} {e.versions_text}; {scope}", summary):
            block.append("".join(f"  {part}\n" for part in textwrap.wrap(line, width - 2, break_long_words=False,
                                                                          break_on_hyphens=False)))
        blocks.append(block)
    return blocks


def render_table(
    entries: Sequence[Entry],
    *,
    color: bool = False,
    snapshots: SnapshotSource | None = None,
    width: int | None = None,
) -> str:
    """The whole matrix as a rich table for a terminal ``width`` wide (default 180); below
    ``WIDE_TABLE`` columns each entry is a folded block so that no line is wider than the terminal."""
    source = snapshots if snapshots is not None else StoreSnapshots()
    buffer = io.StringIO()
    width = width or 180
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width, highlight=False)
    order = {name: i for i, name in enumerate((*ENGINES, "any"))}
    if width < WIDE_TABLE:
        console.print(f"specprobe compatibility matrix ({len(entries)} entries)\n", style="bold")
        for block in _folded(sorted(entries, key=lambda e: order.get(e.engine, len(order))), width):
            console.print(block, soft_wrap=True)
        _print_allowlists(console, source, width)
        return buffer.getvalue()
    table = Table(title=f"specprobe compatibility matrix ({len(entries)} entries)", expand=True, show_lines=True)
    table.add_column("id", no_wrap=True)
    table.add_column("engine / versions", no_wrap=True)
    table.add_column("applies to (method; drafter; target; features)", ratio=2)
    table.add_column("status", no_wrap=True)
    table.add_column("summary", ratio=3)
    for e in sorted(entries, key=lambda e: order.get(e.engine, len(order))):
        scope = f"method {_methods(e)}; drafter {_drafter(e)}; target {_target(e)}"
        if e.features:
            scope += f"; with {', '.join(e.features)}"
        table.add_row(
            e.id,
            f"{e.engine} {e.versions_text}",
            escape(scope),
            f"[{_STATUS_STYLE[e.status]}]{e.status.value}[/] ({e.severity.value})",
            escape(e.summary + (f" [measured: {_acceptance(e)}]" if _acceptance(e) else "")),
        )
    console.print(table)
    _print_allowlists(console, source, width)
    return buffer.getvalue()


def _print_allowlists(console: Console, source: SnapshotSource, width: int) -> None:
    table_allow = allowlists(source)
    if table_allow:
        console.print("vLLM EAGLE-3 target allowlists (from schema snapshots):")
        for version, allowed in table_allow.items():
            line = f"{version}: {', '.join(allowed) if allowed is not None else 'none in the snapshot'}"
            wrapped = textwrap.wrap(line, width - 2, subsequent_indent="    ", break_long_words=False,
                                    break_on_hyphens=False)
            console.print("".join(f"  {part}\n" for part in wrapped), end="", soft_wrap=True)


def matched(verdicts: Iterable[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.match is not Match.NO]


def main() -> None:
    """Print COMPATIBILITY.md to stdout."""
    sys.stdout.write(render_markdown(load_matrix()))


if __name__ == "__main__":
    main()
