"""CIDEr-D rewards for self-critical sequence training (SCST), with a fixed document-frequency
table, as self-critical.pytorch's ``CiderD`` scorer computes them (pycocoevalcap's CIDEr-D
arithmetic; document frequencies and ``ref_len`` from a table instead of the batch)."""

from __future__ import annotations

import os
import pickle
import threading
import weakref
from typing import Any, Dict, Hashable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _capscore
from ._errors import CapscoreError, CapscoreTypeError, translated


class _DfUnpickler(pickle.Unpickler):
    """Loads a document-frequency pickle without running code: only the types
    self-critical.pytorch's tables are made of (dict, ``collections.defaultdict`` and the
    built-in containers and numbers its default factory can name). Any other global a pickle
    asks for (a function, a class of another module: the way a pickle runs code) is refused."""

    _ALLOWED = {
        ("collections", "defaultdict"),
        ("collections", "OrderedDict"),
    } | {
        (m, n)
        for m in ("builtins", "__builtin__")
        for n in ("dict", "list", "tuple", "set", "frozenset", "int", "float", "str", "bytes", "long", "unicode")
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            mod = "builtins" if module == "__builtin__" else module
            name = {"long": "int", "unicode": "str"}.get(name, name)
            return super().find_class(mod, name)
        raise CapscoreError(
            f"df pickle refers to {module}.{name}: only dict, defaultdict, tuple, str, int and float "
            "are loaded from a pickle (anything else could run code); load trusted pickles yourself "
            "and pass the dict, or pass {image_id: [reference, ...]}",
            "invalid_format",
        )


def _load_pickle(path: Union[str, "os.PathLike[str]"]) -> Any:
    """Reads a self-critical.pytorch document-frequency pickle through :class:`_DfUnpickler`
    (Python 2 pickles as well, as self-critical.pytorch reads them)."""
    try:
        with open(path, "rb") as f:
            try:
                return _DfUnpickler(f).load()
            except UnicodeDecodeError:  # a Python 2 pickle, as self-critical.pytorch reads it
                f.seek(0)
                return _DfUnpickler(f, encoding="latin-1").load()
            except CapscoreError:
                raise
            except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as e:
                raise CapscoreError(
                    f"df: {os.fspath(path)} is not a readable pickle: {e}", "invalid_format"
                ) from None
    except FileNotFoundError:
        raise CapscoreError(f"df: no such file: {os.fspath(path)}", "file_not_found") from None


def _reference_list(image: Hashable, refs: Any) -> List[str]:
    """One image's references as a list of strings; a bare string (which ``list`` would split
    into characters) or a non-string reference is refused."""
    if isinstance(refs, (str, bytes)) or not isinstance(refs, (list, tuple)) or not all(
        isinstance(r, str) for r in refs
    ):
        raise CapscoreError(
            f"references of image {image!r} must be a list of strings, got {type(refs).__name__}"
            + (" (a bare string)" if isinstance(refs, (str, bytes)) else ""),
            "invalid_format",
        )
    return list(refs)


def _ngram_words(key: Any) -> List[str]:
    """The words of a document-frequency key: a tuple of words (strings, or integers as in
    tables built from token ids), or one word. Anything else (a nested tuple, say, whose text
    could be exponentially long) is refused."""
    words = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(w, str) or (type(w) is int and -(2**63) <= w < 2**63) for w in words):
        raise CapscoreError(
            f"a document_frequency key is a {type(key).__name__} holding "
            f"{sorted({type(w).__name__ for w in words})}: an n-gram is a tuple of words (strings)",
            "invalid_format",
        )
    return [w if isinstance(w, str) else str(w) for w in words]


def _count(key: Any, value: Any) -> float:
    """A document frequency: a number (an int, a float, a numpy number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise CapscoreError(
            f"document_frequency of {key!r:.80} is a {type(value).__name__}, not a number",
            "invalid_format",
        )
    return float(value)


def _integers(value: Any, what: str) -> np.ndarray:
    """``value`` as a C-contiguous int64 array: integers only (a float, a bool or an object
    that is not an integer is refused rather than truncated: a token id of 3.7 is a bug)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise CapscoreTypeError(f"{what} must be a (rectangular) array of integers: {e}", "invalid_format") from None
    if arr.size == 0:
        # (an empty list has numpy's default dtype, float64: no value to refuse)
        return np.zeros(arr.shape, dtype=np.int64)
    if arr.dtype.kind == "O":
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr.flat):
            raise CapscoreTypeError(f"{what} must be integers", "invalid_format")
    elif arr.dtype.kind not in "iu":
        raise CapscoreTypeError(f"{what} must be integers, got dtype {arr.dtype}", "invalid_format")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise CapscoreTypeError(f"{what}: {int(arr.max())} is out of range for int64", "invalid_format")
    try:
        return np.ascontiguousarray(arr, dtype=np.int64)
    except OverflowError as e:
        raise CapscoreTypeError(f"{what}: {e}", "invalid_format") from None


# Every scorer of this process, so that a forked child can replace their locks.
_SCORERS: "weakref.WeakSet[CiderD]" = weakref.WeakSet()


def _after_fork() -> None:
    """In a forked child: a lock that another thread of the parent held at the fork stays held
    for good (that thread is not in the child), so every scorer gets a new one. A scorer whose
    lock was held was in a call that the fork cut off part-way (its references and ids may be
    half replaced): it refuses to score until `set_references` is called again."""
    for scorer in list(_SCORERS):
        if not scorer._lock.acquire(blocking=False):
            scorer._cut = True
        scorer._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class CiderD:
    """CIDEr-D rewards with a fixed document-frequency table.

    ``df`` is either

    * a path to a pickle in self-critical.pytorch's format: ``{"document_frequency":
      {ngram_tuple: count}, "ref_len": count}`` (``ln(ref_len)`` is used, as there), read with a
      restricted unpickler that loads only dicts, defaultdicts, tuples, strings and numbers and
      refuses anything else (a pickle can run code); or an already loaded dict of that shape,
      the safe way for a pickle you trust; or
    * a dict ``{image_id: [reference, ...]}`` whose references give the table (an n-gram's
      count is the number of images with it; ``ref_len`` is the number of images).

    Text is tokenized as pycocoevalcap does (PTB tokenizer, one stream) unless
    ``tokenize=False``. Token ids (``score_ids``) are never tokenized: each id is the word of its
    decimal text, as in the tables self-critical.pytorch builds from ids.

    All scoring runs natively on capscore's thread pool with the GIL released.
    """

    @translated
    def __init__(self, df: Any, *, tokenize: bool = True, sigma: float = 6.0, n: int = 4):
        if n != 4 or sigma != 6.0:
            raise CapscoreError("CiderD: capscore computes n=4, sigma=6.0", "invalid_format")
        if isinstance(df, (str, os.PathLike)):
            df = _load_pickle(df)
        if isinstance(df, Mapping) and "document_frequency" in df and "ref_len" in df:
            # The common shapes inline (a table holds a million n-grams), the checks otherwise.
            ngrams = [
                (
                    list(k) if type(k) is tuple and all(type(w) is str for w in k) else _ngram_words(k),
                    float(v) if type(v) in (float, int) else _count(k, v),
                )
                for k, v in df["document_frequency"].items()
            ]
            self._scorer = _capscore.RewardScorer(
                ngrams=ngrams, ref_len=float(df["ref_len"]), tokenize=tokenize
            )
        elif isinstance(df, Mapping):
            refs = [_reference_list(k, v) for k, v in df.items()]
            self._scorer = _capscore.RewardScorer(references=refs, tokenize=tokenize)
        else:
            raise CapscoreError(
                "df must be a pickle path, {'document_frequency', 'ref_len'} or {image_id: [reference, ...]}",
                "invalid_format",
            )
        self._index: Dict[Hashable, int] = {}
        # One call at a time on this scorer: a score sees one whole set of references and the
        # ids that go with it, never the native references of one `set_references` with the
        # ids of another (threads waiting here release the GIL). A process forked while
        # another thread held it gets a new one (see `_after_fork`).
        self._lock = threading.RLock()
        self._cut = False
        _SCORERS.add(self)

    @property
    def ln_ref_len(self) -> float:
        """``ln(ref_len)`` of the table."""
        with self._lock:
            return self._scorer.ln_ref_len

    @translated
    def set_references(self, references: Union[Mapping[Hashable, Sequence[str]], Sequence[Sequence[str]]]) -> None:
        """Prepares the reference vectors once: ``{image_id: [reference, ...]}`` (``score``
        then takes those ids) or a list of reference lists (``score`` and ``score_ids`` take
        positions)."""
        if isinstance(references, Mapping):
            index = {k: i for i, k in enumerate(references.keys())}
            lists = [_reference_list(k, v) for k, v in references.items()]
        else:
            index = {}
            lists = [_reference_list(i, v) for i, v in enumerate(references)]
        # The ids change only with the references: a refused call leaves both as they were.
        with self._lock:
            self._scorer.set_references(lists)
            self._index = index
            self._cut = False

    def _check_whole(self) -> None:
        """Refuses to score in a child forked in the middle of a call (see `_after_fork`)."""
        if self._cut:
            raise CapscoreError(
                "this process was forked while another thread was in a call on this scorer: "
                "call set_references again before scoring",
                "invalid_format",
            )

    def _positions(self, image_ids: Sequence[Hashable]) -> List[int]:
        self._check_whole()
        if not self._index:
            # Positions: integers only (`0.7` or `True` is refused, not truncated).
            return _integers(list(image_ids), "image_ids").reshape(-1).tolist()
        try:
            return [self._index[i] for i in image_ids]
        except KeyError as e:
            raise CapscoreError(f"image id {e.args[0]!r} has no references", "unknown_image_id") from None

    @translated
    def score(
        self, candidates: Sequence[str], image_ids: Sequence[Hashable], *, bleu4: bool = False
    ) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """CIDEr-D of each candidate text against its image's references (float64 array);
        with ``bleu4=True`` also the per-image BLEU-4 (pycocoevalcap's), as a pair."""
        candidates = list(candidates)
        with self._lock:
            cider, bleu = self._scorer.score(candidates, self._positions(image_ids), bleu4=bleu4)
        return (cider, bleu) if bleu4 else cider

    @translated
    def score_ids(
        self, ids: Any, image_index: Any, eos_id: int = 0, *, bleu4: bool = False
    ) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """CIDEr-D of token-id rows (``B x T`` integers, e.g. a sampled batch). Row ``b``
        belongs to reference position ``image_index[b]``. A row ends at its first ``eos_id``,
        which stays part of the sentence (self-critical.pytorch's ``array_to_str`` keeps the
        0); a row without it is used whole."""
        arr = _integers(ids, "ids")
        if arr.ndim != 2:
            raise CapscoreError(f"ids must be a 2-D array, got {arr.ndim}-D", "invalid_format")
        index = _integers(image_index, "image_index").reshape(-1).tolist()
        eos = _integers(eos_id, "eos_id") if np.ndim(eos_id) == 0 else None
        if eos is None or isinstance(eos_id, (bool, np.bool_)):
            raise CapscoreTypeError(f"eos_id must be one integer, got {eos_id!r}", "invalid_format")
        with self._lock:
            self._check_whole()
            cider, bleu = self._scorer.score_ids(arr, index, eos_id=int(eos.reshape(-1)[0]), bleu4=bleu4)
        return (cider, bleu) if bleu4 else cider

    @translated
    def compute_score(self, gts: Mapping[Hashable, Sequence[str]], res: Sequence[Mapping[str, Any]]) -> Tuple[float, np.ndarray]:
        """self-critical.pytorch's call: ``gts`` ``{id: [reference, ...]}``, ``res`` a list of
        ``{"image_id": id, "caption": [candidate]}``; returns ``(mean, scores)``."""
        cands = []
        for r in res:
            cap = r["caption"]
            if not isinstance(cap, list) or len(cap) != 1:
                raise CapscoreError("each res caption must be a list of one string", "invalid_format")
            cands.append(cap[0])
        ids = [r["image_id"] for r in res]
        with self._lock:  # these references for these candidates, whatever other threads do
            self.set_references(gts)
            scores = self.score(cands, ids)
        return float(np.mean(scores)), scores
