"""Type stubs of the native module (see capscore/__init__.py for the public API)."""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

__version__: str

def score_json(
    references: Optional[str],
    candidates: str,
    metrics: Optional[List[str]] = None,
    threads: Optional[int] = None,
    explain: bool = False,
    tokenized: bool = False,
    cache_dir: Optional[str] = None,
    offline: bool = False,
    bootstrap: Optional[Tuple[int, int, float]] = None,
    df_from: Optional[Tuple[str, str]] = None,
    split_by: Optional[str] = None,
    strict: bool = False,
    multi_candidate: Optional[Tuple[str, Optional[str]]] = None,
    evalai: bool = False,
    references_path: Optional[str] = None,
) -> str: ...
def compare_json(
    references: str,
    a: str,
    b: str,
    metrics: Optional[List[str]] = None,
    samples: int = 1000,
    trials: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    threads: Optional[int] = None,
    cache_dir: Optional[str] = None,
    offline: bool = False,
) -> str: ...
def score_lists(
    candidates: List[str],
    references: List[List[str]],
    metrics: Optional[List[str]] = None,
    pretokenized: bool = False,
    threads: Optional[int] = None,
    full: bool = False,
    cache_dir: Optional[str] = None,
    offline: bool = False,
) -> Tuple[Dict[str, float], Dict[str, npt.NDArray[np.float64]], Dict[str, object]]: ...
def bleu_dicts(
    gts: Any, res: Any, n: int
) -> Optional[Tuple[List[float], List[List[float]], Dict[str, object]]]: ...
def rouge_dicts(gts: Any, res: Any) -> Optional[Tuple[float, npt.NDArray[np.float64]]]: ...
def cider_dicts(gts: Any, res: Any) -> Optional[Tuple[float, npt.NDArray[np.float64]]]: ...
def tokenize(captions: List[str]) -> List[str]: ...
def fetch(cache_dir: Optional[str] = None) -> str: ...
def error_codes() -> List[Tuple[str, int]]: ...

class RewardScorer:
    def __init__(
        self,
        ngrams: Optional[List[Tuple[List[str], float]]] = None,
        ref_len: Optional[float] = None,
        references: Optional[List[List[str]]] = None,
        tokenize: bool = True,
    ) -> None: ...
    def set_references(self, references: List[List[str]]) -> None: ...
    @property
    def image_count(self) -> int: ...
    @property
    def table_size(self) -> int: ...
    @property
    def ln_ref_len(self) -> float: ...
    def score(
        self, candidates: List[str], image_index: List[int], bleu4: bool = False
    ) -> Tuple[npt.NDArray[np.float64], Optional[npt.NDArray[np.float64]]]: ...
    def score_ids(
        self, ids: npt.NDArray[np.int64], image_index: List[int], eos_id: int = 0, bleu4: bool = False
    ) -> Tuple[npt.NDArray[np.float64], Optional[npt.NDArray[np.float64]]]: ...
def read_text(path: str, what: str) -> str: ...
