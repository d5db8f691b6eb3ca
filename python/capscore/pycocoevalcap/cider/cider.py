"""pycocoevalcap's ``Cider`` (which is CIDEr-D: clipping and the Gaussian length penalty),
with document frequencies over the scored images' references."""

from __future__ import annotations

from typing import Hashable, List, Mapping, Tuple

import numpy as np

from ... import _capscore
from ..._errors import CapscoreError, translated
from .._common import run


class Cider:
    """CIDEr-D (pycocoevalcap's ``CIDEr``)."""

    @translated
    def __init__(self, test=None, refs=None, n: int = 4, sigma: float = 6.0):
        if n != 4 or sigma != 6.0:
            raise CapscoreError(
                f"Cider(n={n}, sigma={sigma}): capscore computes pycocoevalcap's n=4, sigma=6.0",
                "invalid_format",
            )
        self._n = n
        self._sigma = sigma

    @translated
    def compute_score(
        self, gts: Mapping[Hashable, List[str]], res: Mapping[Hashable, List[str]]
    ) -> Tuple[np.float64, np.ndarray]:
        """Returns ``(score, scores)``: numpy's mean of the per-image CIDEr-D and the array."""
        fast = _capscore.cider_dicts(gts, res)
        if fast is not None:
            return np.float64(fast[0]), fast[1]
        _, aggregate, columns, _ = run(["cider_d"], gts, res)
        return np.float64(aggregate["CIDEr"]), np.asarray(columns["CIDEr"])

    def method(self) -> str:
        return "CIDEr"
