"""What changed in a release's whole launch CLI: options added, removed, renamed, retyped, re-defaulted,
newly deprecated, and the fields each JSON-valued config class gained or lost (``schema diff --cli``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specprobe.findings import SpecprobeError
from specprobe.schema.cli import CliOption, CliSnapshot, cli_versions, load_cli, nearest_cli

# What "changed" compares, by the name the report uses.
_COMPARED: dict[str, Callable[[CliOption], Any]] = {
    "type": lambda o: " > ".join(o.type_names()) or None,
    "default": lambda o: o.default,
    "choices": lambda o: list(o.choices) if o.choices is not None else None,
    "nargs": lambda o: o.nargs,
    "action": lambda o: o.kind,
}


@dataclass
class CliDiff:
    engine: str
    old: str
    new: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (old flag, the flag now on its dest)
    changed: list[tuple[str, str, Any, Any]] = field(default_factory=list)  # (flag, what, old, new)
    deprecated: list[str] = field(default_factory=list)
    abbreviations: tuple[bool, bool] | None = None
    config_fields: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # class -> added/removed

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "old": self.old,
            "new": self.new,
            "options_added": self.added,
            "options_removed": self.removed,
            "options_renamed": [{"old": old, "new": new} for old, new in self.renamed],
            "options_changed": [
                {"option": flag, "what": what, "old": old, "new": new} for flag, what, old, new in self.changed
            ],
            "options_deprecated": self.deprecated,
            "allow_abbrev_changed": list(self.abbreviations) if self.abbreviations else None,
            "config_fields": self.config_fields,
        }


def _long(option: CliOption) -> str:
    return next((flag for flag in option.flags if flag.startswith("--")), option.flags[0] if option.flags else "")


def diff_cli(old: CliSnapshot, new: CliSnapshot) -> CliDiff:
    result = CliDiff(old.engine, old.version, new.version)
    old_flags, new_flags = old.by_flag(), new.by_flag()
    new_by_dest = {option.dest: option for option in new.options if option.flags}
    for flag, option in old_flags.items():
        if flag in new_flags:
            continue
        successor = new_by_dest.get(option.dest)
        if successor is not None and flag.startswith("--"):
            result.renamed.append((flag, _long(successor)))
        else:
            result.removed.append(flag)
    result.added = [flag for flag in new_flags if flag not in old_flags]
    seen: set[int] = set()
    for option in new.options:
        if not option.flags or id(option) in seen:
            continue
        seen.add(id(option))
        before = next((old_flags[f] for f in option.flags if f in old_flags), None)
        if before is None:
            continue
        for what, read in _COMPARED.items():
            if read(before) != read(option):
                result.changed.append((_long(option), what, read(before), read(option)))
        if option.deprecated and not before.deprecated:
            result.deprecated.append(_long(option))
    if old.allow_abbrev != new.allow_abbrev:
        result.abbreviations = (old.allow_abbrev, new.allow_abbrev)
    old_tables = {name.rpartition(".")[2]: table for name, table in old.configs.items()}
    for name, table in new.configs.items():
        short = name.rpartition(".")[2]
        before_table = old_tables.get(short)
        if before_table is None:
            continue
        added = [key for key in table.fields if key not in before_table.fields]
        removed = [key for key in before_table.fields if key not in table.fields]
        if added or removed:
            result.config_fields[short] = {"added": added, "removed": removed}
    return result


def load_for_diff(engine: str, version: str) -> CliSnapshot:
    snapshot = load_cli(engine, version)
    if snapshot is None:
        _nearest, note = nearest_cli(engine, version)
        raise SpecprobeError(f"no whole-CLI snapshot of {engine} {version}" + (f" ({note})" if note else ""))
    return snapshot


def releases_text(engine: str) -> str:
    """Which releases have a whole-CLI snapshot, and how the others are judged."""
    versions = cli_versions(engine)
    return (
        f"{engine}: whole-CLI snapshots for {', '.join(versions) or 'no release'}\n"
        "A release between two of them is judged by the nearest older one's parser (said as CLI-SNAPSHOT);\n"
        "a release older than all of them gets the speculative-decoding check only.\n"
    )


def render_text(diff: CliDiff) -> str:
    lines = [f"{diff.engine} {diff.old} -> {diff.new}: the whole launch CLI"]

    def block(title: str, items: list[str]) -> None:
        if items:
            lines.append(f"\n{title} ({len(items)})")
            lines.extend(f"  {item}" for item in items)

    block("Options removed", diff.removed)
    block("Options renamed", [f"{old} -> {new}" for old, new in diff.renamed])
    block("Options added", diff.added)
    block("Options newly deprecated", diff.deprecated)
    block("Options changed", [f"{flag}: {what} {old!r} -> {new!r}" for flag, what, old, new in diff.changed])
    if diff.abbreviations:
        lines.append(f"\nallow_abbrev: {diff.abbreviations[0]} -> {diff.abbreviations[1]}")
    for name, change in sorted(diff.config_fields.items()):
        parts = [f"+{key}" for key in change["added"]] + [f"-{key}" for key in change["removed"]]
        lines.append(f"\n{name} fields: {' '.join(parts)}")
    if len(lines) == 1:
        lines.append("no change")
    return "\n".join(lines) + "\n"


def render_markdown(diff: CliDiff) -> str:
    lines = [f"## {diff.engine} {diff.old} → {diff.new}: the whole launch CLI", ""]
    rows = (
        [("removed", f"`{flag}`", "") for flag in diff.removed]
        + [("renamed", f"`{old}`", f"`{new}`") for old, new in diff.renamed]
        + [("added", f"`{flag}`", "") for flag in diff.added]
        + [("deprecated", f"`{flag}`", "") for flag in diff.deprecated]
        + [("changed", f"`{flag}`", f"{what}: `{old!r}` → `{new!r}`") for flag, what, old, new in diff.changed]
    )
    if rows:
        lines += ["| change | option | detail |", "|---|---|---|"]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    for name, change in sorted(diff.config_fields.items()):
        parts = [f"+`{key}`" for key in change["added"]] + [f"−`{key}`" for key in change["removed"]]
        lines.append(f"\n**{name}** fields: {' '.join(parts)}")
    return "\n".join(lines) + "\n"
