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

``files_for(spec)`` finds a side's files: a local folder, the model's ``ModelFiles`` (a folder, or a hub
repository read through ``specprobe.modelfiles`` within its byte budget), or, for a bare hub id, the local hub
cache. Through the hub reader, config.json, generation_config.json and tokenizer_config.json (kB) are read;
tokenizer.json (7-30 MB when published) only when it is on this machine already (a folder, the Hugging Face
cache, specprobe's hub cache) or listed at most ``MAX_HUB_TOKENIZER_JSON_BYTES``: reading it whole would take
the whole per-repository budget ten times over, and bos_token_id, the special ids and the added tokens of
tokenizer_config.json decide most pairs without it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specprobe.hfconfig import cached_file, looks_like_hub_id
from specprobe.modelfiles import ModelFiles
from specprobe.untrusted.files import UntrustedInputError, expand_user, is_dir, is_file, load_json_file, parse_json

TOKENIZER_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json")
# Published tokenizer.json files reach ~30 MB (large multilingual vocabularies); anything larger is not read.
MAX_TOKENIZER_JSON_BYTES = 64 * 1024 * 1024
MAX_SMALL_JSON_BYTES = 8 * 1024 * 1024
# A tokenizer.json read from the hub: a third of the 3 MiB a repository may cost, so that config.json, the
# shard index and the drafter's headers and vocabulary maps keep their share. Published ones are larger and
# are read only from a copy on this machine.
MAX_HUB_TOKENIZER_JSON_BYTES = 1024 * 1024

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


# Where one side's files are: paths on this machine, or a hub repository read through its ModelFiles.
Files = Mapping[str, Path] | ModelFiles


def files_for(spec: str | Path | ModelFiles | None) -> Files:
    """The tokenizer-bearing files of a drafter or target: a folder's own, the ``ModelFiles`` of a model
    located already (a hub repository stays behind its reader), or a bare hub id's in the local hub cache
    (nothing is downloaded for a bare id)."""
    if spec is None:
        return {}
    if isinstance(spec, ModelFiles):
        return _model_files(spec)
    path = expand_user(spec)
    if is_dir(path):
        return {name: path / name for name in TOKENIZER_FILES if is_file(path / name)}
    if is_file(path):
        # A config.json given on its own: its siblings are the model's other files.
        return files_for(path.parent) if path.name == "config.json" else {}
    if isinstance(spec, str) and looks_like_hub_id(spec):
        return {name: found for name in TOKENIZER_FILES if (found := cached_file(spec, name)) is not None}
    return {}


def _model_files(model: ModelFiles) -> Files:
    if model.folder is not None:
        return files_for(model.folder)
    return model


def _names(files: Files) -> tuple[str, ...]:
    """The tokenizer files a side has that are read: every one of a folder; of a hub repository, tokenizer.json
    only when a copy is on this machine or it is small enough for the repository's budget."""
    if not isinstance(files, ModelFiles):
        return tuple(name for name in TOKENIZER_FILES if name in files)
    listing = files.listing()
    found = []
    for name in TOKENIZER_FILES:
        if name not in listing:
            continue
        if name == "tokenizer.json" and files.local_path(name) is None:
            size = listing[name]
            if size is None or size > MAX_HUB_TOKENIZER_JSON_BYTES:
                continue
        found.append(name)
    return tuple(found)


def _read(files: Files, name: str, limit: int) -> Any:
    """One JSON file of a side, parsed; None when it cannot be read (an unreadable side file, or one the hub
    budget does not reach, is no evidence either way)."""
    if not isinstance(files, ModelFiles):
        return _load(files[name], limit) if name in files else None
    try:
        return parse_json(files.read_file(name, max_bytes=limit), what=name).value
    except (OSError, UntrustedInputError, ValueError):
        return None


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


def _hub_tokenizer_digest(model: ModelFiles) -> tuple[str | None, int | None, dict[int, str]]:
    """The vocabulary digest of a hub repository's tokenizer.json: from its copy on this machine when there
    is one (computed once per run), else read through the reader within ``MAX_HUB_TOKENIZER_JSON_BYTES``."""
    path = model.local_path("tokenizer.json")
    if path is None:
        tokenizer = _read(model, "tokenizer.json", MAX_HUB_TOKENIZER_JSON_BYTES)
        # The reader keeps what it read in specprobe's hub cache: the other family asking reads that copy.
        path = model.local_path("tokenizer.json")
        if path is None:
            return _vocab_digest(tokenizer) if isinstance(tokenizer, dict) else (None, None, {})
    return _tokenizer_digest(path)


def _config_added(tokenizer_config: object) -> dict[int, str]:
    """The added tokens tokenizer_config.json lists (``added_tokens_decoder``: id -> {content: ...}), the
    same tokens tokenizer.json's ``added_tokens`` holds, in a file of kB rather than MB."""
    decoder = tokenizer_config.get("added_tokens_decoder") if isinstance(tokenizer_config, dict) else None
    if not isinstance(decoder, dict):
        return {}
    added: dict[int, str] = {}
    for key, entry in decoder.items():
        if isinstance(key, str) and key.isdigit() and isinstance(entry, dict) and isinstance(entry.get("content"), str):
            added[int(key)] = entry["content"]
    return added


def read_facts(
    label: str, config: dict[str, Any] | None, files: Files, *, vocab_size: int | None = None
) -> TokenizerFacts:
    """The tokenizer facts of one side from its parsed config.json (``config``) and its other files."""
    names = _names(files)
    raw: dict[str, Any] = dict(config or {})
    text = raw.get("text_config")
    if isinstance(text, dict):
        raw = {**text, **{k: v for k, v in raw.items() if k.endswith("_token_id")}}
    if not raw and "config.json" in names:
        loaded = _read(files, "config.json", MAX_SMALL_JSON_BYTES)
        raw = loaded if isinstance(loaded, dict) else {}
    loaded_generation = (
        _read(files, "generation_config.json", MAX_SMALL_JSON_BYTES) if "generation_config.json" in names else None
    )
    generation: dict[str, Any] = loaded_generation if isinstance(loaded_generation, dict) else {}
    bos = _int(raw.get("bos_token_id"))
    if bos is None:
        bos = _int(generation.get("bos_token_id"))
    eos = _ids(raw.get("eos_token_id")) or _ids(generation.get("eos_token_id"))
    pad = _int(raw.get("pad_token_id"))
    digest = entries = None
    added: dict[int, str] = {}
    if "tokenizer.json" in names:
        if isinstance(files, ModelFiles):
            digest, entries, added = _hub_tokenizer_digest(files)
        else:
            digest, entries, added = _tokenizer_digest(files["tokenizer.json"])
    if not added and "tokenizer_config.json" in names:
        added = _config_added(_read(files, "tokenizer_config.json", MAX_SMALL_JSON_BYTES))
    return TokenizerFacts(
        label=label,
        vocab_size=vocab_size if vocab_size is not None else _int(raw.get("vocab_size")),
        bos=bos,
        eos=eos,
        pad=pad,
        vocab_digest=digest,
        vocab_entries=entries,
        added=added,
        files=names,
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
    label: str, config: dict[str, Any] | None, spec: str | Path | ModelFiles | None, vocab_size: int | None
) -> TokenizerFacts:
    """The facts of one side found through ``files_for`` ."""
    return read_facts(label, config, files_for(spec), vocab_size=vocab_size)
