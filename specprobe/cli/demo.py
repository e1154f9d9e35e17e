"""`specprobe demo` command (registration point; the command body is built in its own module)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add `specprobe demo` to the app."""
