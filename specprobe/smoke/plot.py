"""Per-position acceptance chart (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specprobe.findings import SpecprobeError


def plot_per_position(
    path: Path,
    per_position: Sequence[float | None],
    *,
    title: str,
    reference: Sequence[float | None] | None = None,
    label: str = "measured",
) -> None:
    """Bar chart of the share of drafts accepted up to each position (1-based), optional reference bars."""
    # matplotlib (~0.5 s) only when a plot is asked for; smoke imports this module either way.
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    positions = list(range(1, len(per_position) + 1))
    values = [v if v is not None else 0.0 for v in per_position]
    figure, axes = plt.subplots(figsize=(max(5.0, 1.0 + 0.8 * len(positions)), 3.2), dpi=110)
    width = 0.38 if reference is not None else 0.6
    shift = width / 2 if reference is not None else 0.0
    axes.bar([p - shift for p in positions], values, width=width, label=label, color="#3b6ea8")
    if reference is not None:
        ref = [v if v is not None else 0.0 for v in reference]
        axes.bar([p + shift for p in positions], ref, width=width, label="reference", color="#c9a227")
        axes.legend(loc="upper right", fontsize=8)
    for p, v in zip(positions, values, strict=True):
        axes.text(p - shift, v + 0.02, f"{v:.2f}", ha="center", fontsize=8)
    axes.set_xticks(positions)
    axes.set_xlabel("draft position")
    axes.set_ylabel("accepted / drafts")
    axes.set_ylim(0, 1.1)
    axes.set_title(title, fontsize=9)
    figure.tight_layout()
    try:
        figure.savefig(path)
    except OSError as exc:
        raise SpecprobeError(f"cannot write plot {path}: {exc.strerror}") from None
    finally:
        plt.close(figure)


def plot_pairings(path: Path, pairings: Sequence[tuple[str, Sequence[float], Sequence[float] | None]]) -> None:
    """Per-position acceptance of several served pairings side by side: engine bars, reference marks."""
    # matplotlib: see plot_per_position.
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, axes_row = plt.subplots(1, len(pairings), figsize=(2.6 * len(pairings) + 0.6, 3.2), dpi=110, squeeze=False)
    for axes, (name, engine, reference) in zip(axes_row[0], pairings, strict=True):
        positions = list(range(1, len(engine) + 1))
        axes.bar(positions, engine, width=0.6, color="#3b6ea8", label="engine")
        if reference:
            axes.scatter(positions, reference, color="#c9a227", marker="D", zorder=3, label="reference")
        axes.set_xticks(positions)
        axes.set_ylim(0, 1.05)
        axes.set_title(name, fontsize=8)
        axes.set_xlabel("draft position", fontsize=8)
    axes_row[0][0].set_ylabel("accepted / drafts")
    axes_row[0][0].legend(loc="lower left", fontsize=7)
    figure.tight_layout()
    try:
        figure.savefig(path)
    except OSError as exc:
        raise SpecprobeError(f"cannot write plot {path}: {exc.strerror}") from None
    finally:
        plt.close(figure)
