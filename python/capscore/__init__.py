"""capscore: pycocoevalcap's caption metrics (BLEU, METEOR, ROUGE-L, CIDEr-D, SPICE), native.

Three ways in:

* ``capscore.score(references, candidates)``: the structure ``capscore score`` prints.
* ``capscore.pycocoevalcap``: pycocoevalcap 1.2's modules and classes, same numbers, no Java.
  ``capscore.install_pycocoevalcap_alias()`` makes ``import pycocoevalcap...`` load them.
* ``capscore.CiderD``: CIDEr-D (and BLEU-4) rewards for self-critical training, and
  ``capscore.Evaluator`` for sharded evaluation with ``merge``.
* ``capscore.evaluate(candidates, mult_references)`` (aac-metrics' call) and
  ``capscore.compute(predictions=..., references=...)`` (HuggingFace ``evaluate``'s call).

Errors are :class:`CapscoreError` (a ``ValueError``) with ``err.code`` set to the stable code
of the CLI and the HTTP API (for example ``"unknown_image_id"``); a value of the wrong type is a
:class:`CapscoreTypeError`, also a ``TypeError``. Nothing else escapes the public calls.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _capscore
from ._errors import CapscoreError, CapscoreTypeError, translated
from .compat import compute, evaluate
from .evaluator import Evaluator

if TYPE_CHECKING:  # imported on first use: it needs numpy, which `import capscore` does not
    from .scst import CiderD


def __getattr__(name: str) -> Any:
    if name == "CiderD":
        from .scst import CiderD

        return CiderD
    raise AttributeError(f"module 'capscore' has no attribute {name!r}")


__all__ = [
    "CapscoreError",
    "CapscoreTypeError",
    "CiderD",
    "Evaluator",
    "compare",
    "compute",
    "evaluate",
    "ERROR_CODES",
    "fetch",
    "install_pycocoevalcap_alias",
    "score",
    "tokenize",
    "__version__",
]

__version__: str = _capscore.__version__

#: Every stable error code with its HTTP status.
ERROR_CODES: Dict[str, int] = dict(_capscore.error_codes())

PathLike = Union[str, "os.PathLike[str]"]


def _coco_references(refs: Mapping[Any, Any]) -> Dict[str, Any]:
    """``{image_id: [caption, ...]}`` as a COCO annotation dict (ids keep their type)."""
    images: List[Dict[str, Any]] = []
    annotations: List[Dict[str, Any]] = []
    for image_id, captions in refs.items():
        images.append({"id": image_id})
        if isinstance(captions, str) or not isinstance(captions, Sequence):
            raise CapscoreError(
                f"references: image {image_id!r} must map to a list of captions", "invalid_format"
            )
        for c in captions:
            annotations.append({"image_id": image_id, "id": len(annotations), "caption": c})
    return {"images": images, "annotations": annotations}


def _coco_results(cands: Mapping[Any, Any]) -> List[Dict[str, Any]]:
    """``{image_id: caption}`` (or pycocoevalcap's ``{image_id: [caption]}``) as a COCO
    results list."""
    out = []
    for image_id, caption in cands.items():
        if isinstance(caption, list):
            if len(caption) != 1:
                raise CapscoreError(
                    f"candidates: image {image_id!r} has {len(caption)} captions; exactly one is scored",
                    "invalid_format",
                )
            caption = caption[0]
        out.append({"image_id": image_id, "caption": caption})
    return out


def _is_path(value: Any) -> bool:
    """A file path: a path object, or a string that is not JSON text (which starts with
    ``{`` or ``[``)."""
    return isinstance(value, os.PathLike) or (
        isinstance(value, str) and value.lstrip()[:1] not in ("{", "[")
    )


def _as_json_text(value: Any, what: str) -> str:
    """JSON text for a path, a JSON string, or a Python structure (dict / list)."""
    if isinstance(value, Mapping) and what == "references" and "annotations" not in value:
        value = _coco_references(value)
    elif isinstance(value, Mapping) and what == "candidates":
        value = _coco_results(value)
    if _is_path(value):
        # Read as the CLI reads it: plain or gzip (bounded expansion), UTF-8, coded errors.
        return _capscore.read_text(os.fspath(value), what)
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise CapscoreError(f"{what}: not JSON-serializable: {e}", "invalid_format") from None


@translated
def score(
    references: Any,
    candidates: Any,
    metrics: Optional[Sequence[str]] = None,
    threads: Optional[int] = None,
    *,
    explain: bool = False,
    tokenized: bool = False,
    cache_dir: Optional[PathLike] = None,
    offline: bool = False,
    bootstrap: Union[None, int, Mapping[str, Any]] = None,
    df_from: Any = None,
    split_by: Optional[str] = None,
    strict: bool = False,
    multi_candidate: Union[None, bool, str, Mapping[str, Any]] = None,
    format: str = "json",
) -> Dict[str, Any]:
    """Scores candidates against references; returns what ``capscore score`` prints.

    ``references``: a COCO annotation file (path or dict) or ``{image_id: [caption, ...]}``.
    ``candidates``: a COCO results file (path or list of ``{"image_id", "caption"}``) or
    ``{image_id: caption}``. ``metrics``: names among ``bleu``, ``meteor``, ``rouge_l``,
    ``cider_d``, ``cider_original``, ``spice`` (default: the first four). ``threads``: worker
    threads (default: all cores). METEOR and SPICE data are fetched into the cache on first use
    unless ``offline``.

    ``bootstrap``: a number of resamples, or ``{"samples": N, "seed": S, "level": L}``: adds
    percentile intervals of every aggregate (``bootstrap.low`` / ``bootstrap.high``), as the
    CLI's ``--bootstrap``. ``df_from``: references (path, COCO dict or ``{image_id: [...]}``)
    whose document frequencies CIDEr uses instead of the scored images' (CLI ``--df-from``).

    Leaderboard options, as the CLI's: ``split_by``: a label field of the references' COCO
    ``images[]`` (e.g. nocaps' ``"domain"``): each split is also scored as its own corpus
    (``splits``). ``strict``: every image of the references needs a result (else
    ``incomplete_results``). ``multi_candidate``: several candidates per image (``candidates``
    repeats image ids): ``True`` / ``"max"`` / ``"mean"`` or ``{"select": "max", "by": "SPIDEr"}``
    (output ``multi_candidate``; the aggregate is the mean of the selected per-image values).
    ``format="evalai"``: EvalAI's result shape instead of the report.

    Returns a dict with ``aggregate``, ``per_image`` (candidate order), ``signature``,
    ``warnings`` and, when computed, ``bleu_totals``, ``spice``, ``bootstrap``, ``splits`` and
    ``multi_candidate``.
    """
    # A references path goes to the native side as a path: a COCO annotation file is parsed
    # block by block as it is read, its text never held whole (as the CLI reads it).
    refs, refs_path = None, None
    if _is_path(references):
        refs_path = os.fspath(references)
    else:
        refs = _as_json_text(references, "references")
    cands = _as_json_text(candidates, "candidates")
    boot = None
    if bootstrap is not None:
        spec = {"samples": bootstrap} if isinstance(bootstrap, int) else dict(bootstrap)
        unknown = set(spec) - {"samples", "seed", "level"}
        if unknown or "samples" not in spec:
            raise CapscoreError(f"bootstrap: expected samples, seed, level; got {sorted(spec)}", "invalid_format")
        boot = (int(spec["samples"]), int(spec.get("seed", 0)), float(spec.get("level", 0.95)))
    df = None
    if df_from is not None:
        name = os.path.basename(os.fspath(df_from)) if isinstance(df_from, (str, os.PathLike)) and not str(df_from).lstrip().startswith(("{", "[")) else "df_from"
        df = (name, _as_json_text(df_from, "references"))
    multi = None
    if multi_candidate is not None and multi_candidate is not False:
        if multi_candidate is True:
            multi = ("max", None)
        elif isinstance(multi_candidate, str):
            multi = (multi_candidate, None)
        else:
            spec = dict(multi_candidate)
            unknown = set(spec) - {"select", "by"}
            if unknown:
                raise CapscoreError(f"multi_candidate: expected select, by; got {sorted(spec)}", "invalid_format")
            multi = (str(spec.get("select", "max")), spec.get("by"))
    if format not in ("json", "evalai"):
        raise CapscoreError(f"format: {format!r}; expected 'json' or 'evalai'", "invalid_format")
    text = _capscore.score_json(
        refs,
        cands,
        metrics=list(metrics) if metrics is not None else None,
        threads=threads,
        explain=explain,
        tokenized=tokenized,
        cache_dir=os.fspath(cache_dir) if cache_dir is not None else None,
        offline=offline,
        bootstrap=boot,
        df_from=df,
        split_by=split_by,
        strict=strict,
        multi_candidate=multi,
        evalai=format == "evalai",
        references_path=refs_path,
    )
    return json.loads(text)


@translated
def compare(
    references: Any,
    a: Any,
    b: Any,
    metrics: Optional[Sequence[str]] = None,
    *,
    samples: int = 1000,
    trials: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    threads: Optional[int] = None,
    cache_dir: Optional[PathLike] = None,
    offline: bool = False,
) -> Dict[str, Any]:
    """Is system B better than system A on the same images? (``capscore compare``)

    ``references`` as for :func:`score`; ``a`` and ``b``: two result sets on the same images.
    Returns ``images``, ``a`` and ``b`` (each system's aggregates), ``delta`` (B - A),
    ``paired_bootstrap`` (interval and p-value) and ``randomization`` (p-value), the same seed
    giving the same numbers whatever the thread count.
    """
    text = _capscore.compare_json(
        _as_json_text(references, "references"),
        _as_json_text(a, "candidates"),
        _as_json_text(b, "candidates"),
        metrics=list(metrics) if metrics is not None else None,
        samples=samples,
        trials=trials,
        seed=seed,
        level=level,
        threads=threads,
        cache_dir=os.fspath(cache_dir) if cache_dir is not None else None,
        offline=offline,
    )
    return json.loads(text)


@translated
def tokenize(captions: Iterable[str]) -> List[str]:
    """Tokenizes captions as one stream, as pycocoevalcap's PTBTokenizer step does."""
    return _capscore.tokenize(list(captions))


def fetch(cache_dir: Optional[PathLike] = None) -> str:
    """Fetches, verifies and caches METEOR's and SPICE's data; returns the cache folder."""
    return _capscore.fetch(os.fspath(cache_dir) if cache_dir is not None else None)


def install_pycocoevalcap_alias() -> None:
    """Makes ``import pycocoevalcap`` (and its submodules) load ``capscore.pycocoevalcap``.

    For code you cannot edit: call it (or set ``CAPSCORE_ALIAS_PYCOCOEVALCAP=1`` and
    ``import capscore``) before that code imports pycocoevalcap.
    """
    from .pycocoevalcap import _alias

    _alias.install()


if os.environ.get("CAPSCORE_ALIAS_PYCOCOEVALCAP") == "1":
    install_pycocoevalcap_alias()
