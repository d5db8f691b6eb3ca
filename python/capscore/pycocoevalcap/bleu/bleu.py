"""pycocoevalcap's ``Bleu``: corpus BLEU-1..n ("closest" reference length), per-image BLEU."""

from __future__ import annotations

from typing import Hashable, List, Mapping, Tuple

from ..._errors import CapscoreError
from .._common import run


class Bleu:
    """BLEU-1..n (n <= 4) as pycocoevalcap computes it."""

    def __init__(self, n: int = 4):
        if not 1 <= n <= 4:
            raise CapscoreError(f"Bleu(n={n}): capscore computes BLEU-1 to BLEU-4", "invalid_format")
        self._n = n
        self._hypo_for_image = {}
        self.ref_for_image = {}

    def compute_score(
        self, gts: Mapping[Hashable, List[str]], res: Mapping[Hashable, List[str]], verbose: int = 1
    ) -> Tuple[List[float], List[List[float]]]:
        """Returns ``(score, scores)``: ``score[k]`` is corpus BLEU-(k+1), ``scores[k]`` the
        per-image BLEU-(k+1) values in ``gts`` order. Prints the pooled statistics and the
        length ratio, as pycocoevalcap does (``verbose=0`` to silence)."""
        _, aggregate, columns, extras = run(["bleu"], gts, res)
        if verbose > 0:
            t = extras["bleu_totals"]
            print({"testlen": t["testlen"], "reflen": t["reflen"],
                   "guess": t["guess"], "correct": t["correct"]})
            print("ratio:", t["ratio"])
        keys = [f"Bleu_{k}" for k in range(1, self._n + 1)]
        score = [float(aggregate[k]) for k in keys]
        scores = [[float(x) for x in columns[k]] for k in keys]
        return score, scores

    def method(self) -> str:
        return "Bleu"
