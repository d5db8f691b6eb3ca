"""pycocoevalcap's ``Meteor``: METEOR 1.5 (``-l en -norm``), natively; no Java process."""

from __future__ import annotations

from typing import Hashable, List, Mapping, Tuple

from .._common import run
from ..._errors import translated


class Meteor:
    def __init__(self):
        # Resources (paraphrase table, synonyms) load on first use, from capscore's cache
        # (fetched on first use unless CAPSCORE_OFFLINE is set).
        pass

    @translated
    def compute_score(
        self, gts: Mapping[Hashable, List[str]], res: Mapping[Hashable, List[str]]
    ) -> Tuple[float, List[float]]:
        """Returns ``(score, scores)``: the pooled corpus METEOR (not a mean) and the
        per-image values in ``gts`` order."""
        _, aggregate, columns, _ = run(["meteor"], gts, res)
        return float(aggregate["METEOR"]), [float(x) for x in columns["METEOR"]]

    def method(self) -> str:
        return "METEOR"

    def close(self) -> None:
        """No process to stop (pycocoevalcap closes its Java subprocess here)."""
