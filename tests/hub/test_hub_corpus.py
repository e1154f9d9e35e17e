"""Every drafter of the check corpus (tests/cases/), published as a hub repository, gets the verdict its
local folder gets, online and again offline from what the first run cached.

In-process (one ``HubSession`` per run, given the endpoint and cache): the corpus is a hundred drafters, and
a process per run would cost minutes. huggingface_hub's own offline switch, fixed when it was first imported
in this worker, is set to what a fresh process would read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.modelfiles import HubSession
from specprobe.pipeline.check import run_check
from tests.check.casebuild import build_case, case_names
from tests.hub.hubserver import publish, serve_hub

# In-process runs ask the loopback hub (tests/hub/conftest.py).
pytestmark = pytest.mark.usefixtures("online_in_process")


def _regular_files_only(folder: Path) -> bool:
    """A case the hub can publish as it is: no symlinks, subfolders, FIFOs (those are local-folder cases)."""
    return all(path.is_file() and not path.is_symlink() for path in folder.iterdir())


def _named(verdict: tuple, names: dict[str, str]) -> str:
    text = repr(verdict)
    for written, placeholder in names.items():
        text = text.replace(written, placeholder)
    return text


def _verdict(report) -> tuple:
    return report.ok, sorted((f.rule, f.severity.value, f.location, f.message) for f in report.findings)


def test_corpus_verdicts_are_the_same_on_the_hub_and_offline(tmp_path: Path) -> None:
    root = tmp_path / "repos"
    root.mkdir()
    cases: dict[str, tuple[Path, dict]] = {}
    for name in case_names():
        draft_dir, kwargs, _ = build_case(name, tmp_path / "cases" / name)
        if not _regular_files_only(draft_dir) or kwargs.get("deep"):
            continue  # symlink/FIFO cases judge a local folder; --deep reads weights that never travel
        publish(root, f"corpus/{name}", draft_dir)
        if "target" in kwargs:
            publish(root, f"corpus/{name}-target", Path(kwargs["target"]))
        cases[name] = (draft_dir, kwargs)
    assert len(cases) > 80  # most of the corpus is published

    cache = tmp_path / "specprobe-hub"
    with serve_hub(root) as hub:
        differ = []
        for name, (draft_dir, kwargs) in cases.items():
            local = run_check(draft_dir, **kwargs)
            hub_kwargs = {**kwargs, "target": f"corpus/{name}-target"} if "target" in kwargs else kwargs
            online = run_check(f"corpus/{name}", **hub_kwargs, hub=HubSession(endpoint=hub.url, cache_root=cache))
            offline = run_check(
                f"corpus/{name}", **hub_kwargs, hub=HubSession(endpoint=hub.url, cache_root=cache, offline=True)
            )
            # Messages may name the folders: compare them with the folder and the repository named alike.
            names = {str(draft_dir): "<draft>", f"corpus/{name}-target": "<target>", f"corpus/{name}": "<draft>"}
            if "target" in kwargs:
                names = {kwargs["target"]: "<target>", **names}
            wanted = _named(_verdict(local), names)
            for label, report in (("hub", online), ("offline", offline)):
                got = _named(_verdict(report), names)
                if got != wanted:
                    differ.append((name, label, wanted, got))
        assert differ == []
