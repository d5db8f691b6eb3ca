"""The call shapes other libraries taught users, on capscore's engine.

* :func:`evaluate`: aac-metrics' ``evaluate(candidates, mult_references)``: plain lists, no
  ids; returns ``(corpus_scores, sents_scores)`` keyed by aac-metrics' names (``bleu_1`` ..
  ``bleu_4``, ``meteor``, ``rouge_l``, ``cider_d``, ``spice``, ``spider``).
* :func:`compute`: HuggingFace ``evaluate``'s ``compute(predictions=..., references=...)``;
  returns the corpus scores under pycocoevalcap's keys and ``per_item`` columns.

Both score item ``i`` as ``candidates[i]`` against ``references[i]`` (ids ``0..n-1``, in that
order), with the PTB tokenizer, exactly as :func:`capscore.score` scores the same data.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _capscore
from ._errors import CapscoreError, translated

#: pycocoevalcap's output keys -> aac-metrics' names.
AAC_KEYS: Dict[str, str] = {
    "Bleu_1": "bleu_1",
    "Bleu_2": "bleu_2",
    "Bleu_3": "bleu_3",
    "Bleu_4": "bleu_4",
    "METEOR": "meteor",
    "ROUGE_L": "rouge_l",
    "CIDEr": "cider_d",
    "CIDEr_original": "cider",
    "SPICE": "spice",
    "SPIDEr": "spider",
}


def _text(value: Any, what: str) -> str:
    """One caption: a ``str`` (numpy's ``str_`` included), else a coded error."""
    if isinstance(value, str):
        return str(value)
    raise CapscoreError(f"{what} must be a string, got {type(value).__name__}", "invalid_caption")


def _lists(candidates: Sequence[Any], references: Sequence[Any], single_ok: bool) -> Tuple[List[str], List[List[str]]]:
    if isinstance(candidates, str) or isinstance(references, str):
        raise CapscoreError("candidates and references must be lists, not a string", "invalid_format")
    cands = [_text(c, f"candidates[{i}]") for i, c in enumerate(candidates)]
    refs: List[List[str]] = []
    for i, r in enumerate(references):
        if isinstance(r, str):
            if not single_ok:
                raise CapscoreError(
                    f"mult_references[{i}] must be a list of references, not a string", "invalid_format"
                )
            refs.append([str(r)])
        else:
            refs.append([_text(x, f"references[{i}][{j}]") for j, x in enumerate(r)])
    if len(cands) != len(refs):
        raise CapscoreError(f"{len(cands)} candidates but {len(refs)} reference lists", "invalid_format")
    if not cands:
        raise CapscoreError("nothing to score (empty lists)", "empty_results")
    return cands, refs


def _score(cands: List[str], refs: List[List[str]], metrics: Optional[Sequence[str]], threads: Optional[int], **kw: Any):
    aggregate, columns, _ = _capscore.score_lists(
        cands, refs, metrics=list(metrics) if metrics is not None else None, threads=threads, **kw
    )
    return aggregate, columns


@translated
def evaluate(
    candidates: Sequence[str],
    mult_references: Sequence[Sequence[str]],
    metrics: Optional[Sequence[str]] = None,
    *,
    threads: Optional[int] = None,
    cache_dir: Optional[str] = None,
    offline: bool = False,
) -> Tuple[Dict[str, float], Dict[str, Any]]:
    """aac-metrics' ``evaluate(candidates, mult_references)``: ``candidates[i]`` is scored
    against ``mult_references[i]``. ``metrics``: capscore's names (``bleu``, ``meteor``,
    ``rouge_l``, ``cider_d``, ``cider_original``, ``spice``, ``spider``; default: the first
    four). Returns ``(corpus_scores, sents_scores)``: corpus floats and per-item numpy arrays,
    keyed by aac-metrics' names (``bleu_4``, ``cider_d``, ...). Numbers are pycocoevalcap's
    (aac-metrics' own Java-backed ones agree with it)."""
    cands, refs = _lists(candidates, mult_references, single_ok=False)
    aggregate, columns = _score(cands, refs, metrics, threads, cache_dir=cache_dir, offline=offline)
    corpus = {AAC_KEYS.get(k, k): float(v) for k, v in aggregate.items()}
    sents = {AAC_KEYS.get(k, k): v for k, v in columns.items()}
    return corpus, sents


@translated
def compute(
    *,
    predictions: Sequence[str],
    references: Sequence[Union[str, Sequence[str]]],
    metrics: Optional[Sequence[str]] = None,
    threads: Optional[int] = None,
    cache_dir: Optional[str] = None,
    offline: bool = False,
) -> Dict[str, Any]:
    """HuggingFace ``evaluate``'s ``compute(predictions=..., references=...)``: each prediction
    against its references (a list, or one string). Returns the corpus scores under
    pycocoevalcap's keys (``Bleu_4``, ``CIDEr``, ...) and ``per_item``: each key's per-item
    scores as a list, item order."""
    cands, refs = _lists(predictions, references, single_ok=True)
    aggregate, columns = _score(cands, refs, metrics, threads, cache_dir=cache_dir, offline=offline)
    out: Dict[str, Any] = {k: float(v) for k, v in aggregate.items()}
    out["per_item"] = {k: [float(x) for x in v] for k, v in columns.items()}
    return out
