"""pycocoevalcap's ``Spice``: scene-graph F-score, with capscore's native parser (no Java, no
Stanford CoreNLP download). Numbers follow capscore's SPICE (see docs/fidelity.md: the
scoring half is exact, the parser differs from CoreNLP on some captions); the first call warns
once (``NativeSpiceWarning``)."""

from __future__ import annotations

import json
from typing import Any, Dict, Hashable, List, Mapping, Tuple

import numpy as np

from .._common import run, spice_image, warn_native_spice
from ..._errors import translated


class Spice:
    """SPICE with capscore's native parser."""

    def float_convert(self, obj: Any) -> float:
        try:
            return float(obj)
        except (TypeError, ValueError):
            return np.nan

    @translated
    def compute_score(
        self, gts: Mapping[Hashable, List[str]], res: Mapping[Hashable, List[str]]
    ) -> Tuple[np.float64, List[Dict[str, Dict[str, float]]]]:
        """Returns ``(average_score, scores)``: numpy's mean of the per-image ``All`` F, and
        the per-image category dicts in **sorted image id** order, as pycocoevalcap returns
        them."""
        scores_by_id = self.scores_by_id(gts, res)
        order = sorted(gts.keys())
        scores = [scores_by_id[i] for i in order]
        average = np.mean(np.array([s["All"]["f"] for s in scores]))
        return np.float64(average), scores

    def scores_by_id(
        self, gts: Mapping[Hashable, List[str]], res: Mapping[Hashable, List[str]]
    ) -> Dict[Hashable, Dict[str, Dict[str, float]]]:
        """Each image's category dict, keyed by its own id (capscore's addition)."""
        warn_native_spice()
        ids, _, _, extras = run(["spice"], gts, res, full=True)
        report = json.loads(extras["report"])
        return {i: spice_image(im) for i, im in zip(ids, report["spice"]["per_image"])}

    def method(self) -> str:
        return "SPICE"
