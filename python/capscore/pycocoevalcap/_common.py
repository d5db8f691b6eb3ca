"""What the drop-in scorers share: pycocoevalcap's input checks and one call into the engine."""

from __future__ import annotations

import warnings
from typing import Any, Dict, Hashable, List, Mapping, Sequence, Tuple

from .. import _capscore
from .._errors import CapscoreError


class NativeSpiceWarning(UserWarning):
    """SPICE was computed with capscore's native parser, not Stanford CoreNLP's."""


_SPICE_WARNED = False


def warn_native_spice() -> None:
    """Says once per process that the drop-in's SPICE comes from the native parser: its scoring
    half is exact, its parses are not CoreNLP's (agreement figures: docs/fidelity.md, SPICE)."""
    global _SPICE_WARNED
    if _SPICE_WARNED:
        return
    _SPICE_WARNED = True
    warnings.warn(
        "capscore computes SPICE with its native parser, not Stanford CoreNLP 3.6.0: the scoring "
        "half is exact, the parses differ on some captions, so SPICE approximates the official "
        "number (agreement figures in capscore's docs/fidelity.md, section SPICE). BLEU, METEOR, "
        "ROUGE-L and CIDEr are exact.",
        NativeSpiceWarning,
        stacklevel=3,
    )


def aligned(
    gts: Mapping[Hashable, List[str]], res: Mapping[Hashable, List[str]]
) -> Tuple[List[Hashable], List[str], List[List[str]]]:
    """Image ids in ``gts`` order, one candidate each, their references (pycocoevalcap's
    asserts, as errors with codes)."""
    if gts.keys() != res.keys():
        missing = [k for k in res.keys() if k not in gts][:5]
        extra = [k for k in gts.keys() if k not in res][:5]
        raise CapscoreError(
            f"gts and res must have the same image ids (only in res: {missing}, only in gts: {extra})",
            "unknown_image_id" if missing else "missing_references",
        )
    ids = list(gts.keys())
    cands: List[str] = []
    refs: List[List[str]] = []
    for i in ids:
        hypo, ref = res[i], gts[i]
        if not isinstance(hypo, list) or len(hypo) != 1:
            raise CapscoreError(
                f"image {i!r}: res must hold a list of exactly one caption", "invalid_format"
            )
        if not isinstance(ref, list) or len(ref) < 1:
            raise CapscoreError(
                f"image {i!r}: gts must hold a list of at least one caption", "missing_references"
            )
        cands.append(hypo[0])
        refs.append(ref)
    return ids, cands, refs


def run(
    metrics: Sequence[str], gts: Mapping, res: Mapping, full: bool = False
) -> Tuple[List[Hashable], Dict[str, float], Dict[str, Any], Dict[str, Any]]:
    """Scores tokenized ``gts`` / ``res`` with the named metrics: (ids, aggregate, per-image
    columns as numpy arrays, extras)."""
    ids, cands, refs = aligned(gts, res)
    aggregate, columns, extras = _capscore.score_lists(
        cands, refs, metrics=list(metrics), pretokenized=True, full=full
    )
    return ids, aggregate, columns, extras


SPICE_CATEGORIES = ("All", "Object", "Attribute", "Relation", "Cardinality", "Color", "Size")


def spice_image(categories: Mapping[str, Any]) -> Dict[str, Dict[str, float]]:
    """One image's SPICE categories in pycocoevalcap's shape: ``pr``, ``re``, ``f``, ``fn``,
    ``fp``, ``tp``, ``numImages`` as floats, NaN where undefined."""
    nan = float("nan")
    out: Dict[str, Dict[str, float]] = {}
    for cat in SPICE_CATEGORIES:
        c = categories[cat]
        out[cat] = {
            "pr": nan if c["precision"] is None else float(c["precision"]),
            "re": nan if c["recall"] is None else float(c["recall"]),
            "f": nan if c["f"] is None else float(c["f"]),
            "fn": float(c["fn"]),
            "numImages": 1.0,
            "fp": float(c["fp"]),
            "tp": float(c["tp"]),
        }
    return out
