"""pycocoevalcap's ``Bleu``: corpus BLEU-1..n ("closest" reference length), per-image BLEU."""

from __future__ import annotations

from typing import Hashable, List, Mapping, Tuple

from ... import _capscore
from ..._errors import CapscoreError, translated
from .._common import run


class Bleu:
    """BLEU-1..n (n <= 4) as pycocoevalcap computes it."""

    @translated
    def __init__(self, n: int = 4):
        if not 1 <= n <= 4:
            raise CapscoreError(f"Bleu(n={n}): capscore computes BLEU-1 to BLEU-4", "invalid_format")
        self._n = n
        self._hypo_for_image = {}
        self.ref_for_image = {}

    @translated
    def compute_score(
        self, gts: Mapping[Hashable, List[str]], res: Mapping[Hashable, List[str]], verbose: int = 1
    ) -> Tuple[List[float], List[List[float]]]:
        """Returns ``(score, scores)``: ``score[k]`` is corpus BLEU-(k+1), ``scores[k]`` the
        per-image BLEU-(k+1) values in ``gts`` order. Prints the pooled statistics and the
        length ratio, as pycocoevalcap does (``verbose=0`` to silence)."""
        fast = _capscore.bleu_dicts(gts, res, self._n)
        if fast is not None:
            score, scores, t = fast
        else:
            _, aggregate, columns, extras = run(["bleu"], gts, res)
            t = extras["bleu_totals"]
            keys = [f"Bleu_{k}" for k in range(1, self._n + 1)]
            score = [float(aggregate[k]) for k in keys]
            scores = [columns[k].tolist() for k in keys]
        if verbose > 0:
            print({"testlen": t["testlen"], "reflen": t["reflen"],
                   "guess": t["guess"], "correct": t["correct"]})
            print("ratio:", t["ratio"])
        return score, scores

    def method(self) -> str:
        return "Bleu"
