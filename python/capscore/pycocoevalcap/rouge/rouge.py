"""pycocoevalcap's ``Rouge``: ROUGE-L (LCS F-measure, beta 1.2)."""

from __future__ import annotations

from typing import Hashable, List, Mapping, Tuple

import numpy as np

from ... import _capscore
from .._common import run
from ..._errors import translated


class Rouge:
    """ROUGE-L as pycocoevalcap computes it (beta 1.2)."""

    def __init__(self):
        self.beta = 1.2

    @translated
    def calc_score(self, candidate: List[str], refs: List[str]) -> float:
        """ROUGE-L of one candidate (a list of one sentence) against its references."""
        _, _, columns, _ = run(["rouge_l"], {0: list(refs)}, {0: list(candidate)})
        return float(columns["ROUGE_L"][0])

    @translated
    def compute_score(
        self, gts: Mapping[Hashable, List[str]], res: Mapping[Hashable, List[str]]
    ) -> Tuple[np.float64, np.ndarray]:
        """Returns ``(average_score, scores)``: numpy's mean and the per-image array."""
        fast = _capscore.rouge_dicts(gts, res)
        if fast is not None:
            return np.float64(fast[0]), fast[1]
        _, aggregate, columns, _ = run(["rouge_l"], gts, res)
        return np.float64(aggregate["ROUGE_L"]), np.asarray(columns["ROUGE_L"])

    def method(self) -> str:
        return "Rouge"
