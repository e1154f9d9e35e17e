"""Whether a drafter and its target share one tokenizer: a padding of the same vocabulary told apart from
another tokenizer.

A drafter proposes token ids; the target verifies them as its own ids. When the two were trained with
different tokenizers, every draft id means another token and acceptance is near zero, although every size
may line up after a rewrite of ``vocab_size``. The signals, read as data (nothing is executed, tokenizer
files are parsed as JSON with bounded size and depth):

- ``tokenizer.json`` of both sides: the model vocabulary (token -> id) and the added tokens, hashed;
- ``bos_token_id`` (config.json, else generation_config.json): a property of the tokenizer, the same in a
  base model and its instruct variant (``eos`` differs between them, so it is not compared, only ranged);
- special ids of one side beyond the other's vocabulary;
- a vocabulary map (``t2d``) sized by the target's vocabulary: the map was built over the target's ids.

``files_for(spec)`` is the one place that finds a side's files (a local folder, or the local hub cache for
a hub id), so a hub reader can be put behind it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specprobe.hfconfig import cached_file, looks_like_hub_id
from specprobe.untrusted.files import UntrustedInputError, expand_user, is_dir, is_file, load_json_file

TOKENIZER_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json")
# Published tokenizer.json files reach ~30 MB (large multilingual vocabularies); anything larger is not read.
MAX_TOKENIZER_JSON_BYTES = 64 * 1024 * 1024
MAX_SMALL_JSON_BYTES = 8 * 1024 * 1024

SAME = "same"
ANOTHER = "another"
UNKNOWN = "unknown"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _ids(value: object) -> frozenset[int]:
    if isinstance(value, list):
        return frozenset(i for v in value if (i := _int(v)) is not None)
    single = _int(value)
    return frozenset() if single is None else frozenset({single})


@dataclass(frozen=True)
class TokenizerFacts:
    """What one side's files say about its tokenizer; every field None/empty when its file is absent."""

    label: str
    vocab_size: int | None = None
    bos: int | None = None
    eos: frozenset[int] = frozenset()
    pad: int | None = None
    vocab_digest: str | None = None
    vocab_entries: int | None = None
    added: dict[int, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()

    def special_ids(self) -> dict[str, int]:
        found = {f"eos_token_id {i}": i for i in sorted(self.eos)}
        if self.bos is not None:
            found["bos_token_id"] = self.bos
        if self.pad is not None:
            found["pad_token_id"] = self.pad
        return found


def files_for(spec: str | Path | None) -> dict[str, Path]:
    """The tokenizer-bearing files of a drafter or target: a folder's own, or a hub id's in the local hub
    cache (nothing is downloaded here). The one lookup a hub reader replaces."""
    if spec is None:
        return {}
    path = expand_user(spec)
    if is_dir(path):
        return {name: path / name for name in TOKENIZER_FILES if is_file(path / name)}
    if is_file(path):
        # A config.json given on its own: its siblings are the model's other files.
        return files_for(path.parent) if path.name == "config.json" else {}
    if isinstance(spec, str) and looks_like_hub_id(spec):
        return {name: found for name in TOKENIZER_FILES if (found := cached_file(spec, name)) is not None}
    return {}


def _load(path: Path, limit: int) -> Any:
    try:
        return load_json_file(path, max_bytes=limit).value
    except (OSError, UntrustedInputError, ValueError):
        return None  # an unreadable side file is no evidence either way


def _vocab_digest(tokenizer: dict[str, Any]) -> tuple[str | None, int | None, dict[int, str]]:
    """sha256 of the model vocabulary (token -> id, or Unigram's ordered pieces) and the added tokens by id."""
    added: dict[int, str] = {}
    for entry in tokenizer.get("added_tokens") or ():
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            continue
        if (i := _int(entry.get("id"))) is not None:
            added[i] = entry["content"]
    model = tokenizer.get("model")
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):
        items = sorted((str(k), v) for k, v in vocab.items() if _int(v) is not None)
    elif isinstance(vocab, list):
        items = [(str(p[0]), i) for i, p in enumerate(vocab) if isinstance(p, list) and p]
    else:
        return None, None, added
    if not items:
        return None, None, added
    digest = hashlib.sha256(json.dumps(items, ensure_ascii=True, separators=(",", ":")).encode()).hexdigest()
    return digest, len(items), added


def _tokenizer_digest(path: Path) -> tuple[str | None, int | None, dict[int, str]]:
    """The vocabulary digest of one tokenizer.json, computed once per file version in a run (check's
    tokenizer and target families both ask; a published file is ~10 MB of JSON)."""
    try:
        stat = path.stat()
    except OSError:
        return None, None, {}
    digest, entries, added = _cached_digest(str(path), stat.st_size, stat.st_mtime_ns)
    return digest, entries, dict(added)


@functools.lru_cache(maxsize=16)
def _cached_digest(path: str, size: int, mtime_ns: int) -> tuple[str | None, int | None, tuple[tuple[int, str], ...]]:
    del size, mtime_ns  # the cache key: a file rewritten in place is read again
    tokenizer = _load(Path(path), MAX_TOKENIZER_JSON_BYTES)
    if not isinstance(tokenizer, dict):
        return None, None, ()
    digest, entries, added = _vocab_digest(tokenizer)
    return digest, entries, tuple(sorted(added.items()))


def read_facts(
    label: str, config: dict[str, Any] | None, files: dict[str, Path], *, vocab_size: int | None = None
) -> TokenizerFacts:
    """The tokenizer facts of one side from its parsed config.json (``config``) and its other files."""
    raw: dict[str, Any] = dict(config or {})
    text = raw.get("text_config")
    if isinstance(text, dict):
        raw = {**text, **{k: v for k, v in raw.items() if k.endswith("_token_id")}}
    if not raw and "config.json" in files:
        loaded = _load(files["config.json"], MAX_SMALL_JSON_BYTES)
        raw = loaded if isinstance(loaded, dict) else {}
    loaded_generation = (
        _load(files["generation_config.json"], MAX_SMALL_JSON_BYTES) if "generation_config.json" in files else None
    )
    generation: dict[str, Any] = loaded_generation if isinstance(loaded_generation, dict) else {}
    bos = _int(raw.get("bos_token_id"))
    if bos is None:
        bos = _int(generation.get("bos_token_id"))
    eos = _ids(raw.get("eos_token_id")) or _ids(generation.get("eos_token_id"))
    pad = _int(raw.get("pad_token_id"))
    digest = entries = None
    added: dict[int, str] = {}
    if "tokenizer.json" in files:
        digest, entries, added = _tokenizer_digest(files["tokenizer.json"])
    return TokenizerFacts(
        label=label,
        vocab_size=vocab_size if vocab_size is not None else _int(raw.get("vocab_size")),
        bos=bos,
        eos=eos,
        pad=pad,
        vocab_digest=digest,
        vocab_entries=entries,
        added=added,
        files=tuple(sorted(files)),
    )


@dataclass(frozen=True)
class Identity:
    """The verdict: ``same`` (one tokenizer, perhaps padded to another size), ``another`` or ``unknown``,
    with the evidence read for it."""

    verdict: str
    against: tuple[str, ...] = ()
    for_same: tuple[str, ...] = ()
    sizes: tuple[int | None, int | None] = (None, None)

    @property
    def sizes_differ(self) -> bool:
        draft, target = self.sizes
        return draft is not None and target is not None and draft != target

    @property
    def evidence(self) -> str:
        return "; ".join(self.against if self.verdict == ANOTHER else self.for_same) or "no tokenizer evidence"


def _beyond(owner: TokenizerFacts, other: TokenizerFacts) -> Iterable[str]:
    if other.vocab_size is None:
        return
    for name, value in owner.special_ids().items():
        if value >= other.vocab_size:
            yield (
                f"the {owner.label}'s {name.split()[0]} {value} is not an id of the {other.label}'s "
                f"{other.vocab_size}-token vocabulary"
            )


def compare(draft: TokenizerFacts, target: TokenizerFacts, *, map_size: int | None = None) -> Identity:
    """Whether ``draft`` was trained with ``target``'s tokenizer. ``map_size`` is the length of the drafter's
    ``t2d`` (the vocabulary its map was built over), when it ships one."""
    against: list[str] = []
    same: list[str] = []
    if draft.vocab_digest is not None and target.vocab_digest is not None:
        if draft.vocab_digest == target.vocab_digest:
            same.append(f"tokenizer.json vocabularies identical ({draft.vocab_entries} tokens)")
        else:
            against.append(
                f"tokenizer.json vocabularies differ ({draft.label} {draft.vocab_entries} tokens, {target.label} "
                f"{target.vocab_entries})"
            )
    clashes = [i for i in sorted(set(draft.added) & set(target.added)) if draft.added[i] != target.added[i]]
    if clashes:
        i = clashes[0]
        against.append(
            f"added token {i} is {draft.added[i]!r} for the {draft.label} and {target.added[i]!r} for the "
            f"{target.label}"
        )
    identical_files = draft.vocab_digest is not None and draft.vocab_digest == target.vocab_digest
    if draft.bos is not None and target.bos is not None:
        if draft.bos == target.bos:
            same.append(f"bos_token_id {draft.bos} on both")
        elif not identical_files:
            # Identical tokenizer.json files outweigh a bos_token_id copied from another model's config.
            against.append(f"bos_token_id {draft.bos} ({draft.label}) vs {target.bos} ({target.label})")
    if map_size is not None and target.vocab_size is not None and map_size == target.vocab_size:
        same.append(f"the drafter's t2d covers the target's {map_size}-token vocabulary")
    # Special ids outside the other side's declared vocabulary are weaker evidence: a vocab_size edited after
    # training (which fix repairs) produces them too, so they decide only where nothing above says "same".
    beyond = [*_beyond(draft, target), *_beyond(target, draft)]
    if not against and not same:
        against.extend(beyond)
    verdict = ANOTHER if against else SAME if same else UNKNOWN
    return Identity(verdict, tuple(dict.fromkeys(against)), tuple(dict.fromkeys(same)),
                    (draft.vocab_size, target.vocab_size))


def facts_of(
    label: str, config: dict[str, Any] | None, spec: str | Path | None, vocab_size: int | None
) -> TokenizerFacts:
    """The facts of one side found through ``files_for`` ."""
    return read_facts(label, config, files_for(spec), vocab_size=vocab_size)
