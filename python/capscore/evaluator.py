"""Sharded evaluation: collect on each worker, merge, compute once."""

from __future__ import annotations

from typing import Any, Dict, Hashable, List, Mapping, Optional, Sequence, Tuple

from ._errors import CapscoreError


class Evaluator:
    """Collects (references, candidate) per image on a shard; ``merge`` joins shards;
    ``compute()`` scores the union in one call.

    The state is the captions themselves, because CIDEr-D's document frequencies are taken
    over the union's references and the tokenizer reads each caption with what follows it:
    so merging shards gives exactly the numbers of scoring the union in one call (images in
    the order they were added, a merged shard's after this one's). The state is picklable
    (``torch.distributed.all_gather_object``, Ray object refs).
    """

    def __init__(self, metrics: Optional[Sequence[str]] = None, threads: Optional[int] = None):
        self.metrics = list(metrics) if metrics is not None else None
        self.threads = threads
        self._images: Dict[Hashable, Tuple[str, List[str]]] = {}

    def __len__(self) -> int:
        return len(self._images)

    def _add(self, image_id: Hashable, candidate: str, references: List[str]) -> None:
        if not isinstance(image_id, (int, str)) or isinstance(image_id, bool):
            raise CapscoreError(f"image id {image_id!r} must be an int or a str", "invalid_image_id")
        old = self._images.get(image_id)
        if old is not None and old != (candidate, references):
            raise CapscoreError(f"image {image_id!r} was added twice with different captions", "duplicate_image_id")
        self._images[image_id] = (candidate, references)

    def update(self, references: Mapping[Hashable, Sequence[str]], candidates: Any) -> "Evaluator":
        """Adds images: ``references`` ``{image_id: [reference, ...]}``; ``candidates``
        ``{image_id: caption}`` or a COCO results list ``[{"image_id", "caption"}]``. Every
        candidate needs references."""
        if isinstance(candidates, Mapping):
            pairs = list(candidates.items())
        else:
            pairs = [(c["image_id"], c["caption"]) for c in candidates]
        for image_id, caption in pairs:
            if image_id not in references:
                raise CapscoreError(f"image {image_id!r} has a candidate but no references", "unknown_image_id")
            if not isinstance(caption, str):
                raise CapscoreError(f"image {image_id!r}: the caption must be a string", "invalid_caption")
            self._add(image_id, caption, [str(r) for r in references[image_id]])
        return self

    def merge(self, other: "Evaluator") -> "Evaluator":
        """Adds another shard's images (after this one's); returns self."""
        for image_id, (cand, refs) in other._images.items():
            self._add(image_id, cand, refs)
        return self

    def inputs(self) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
        """The union as a COCO annotation dict and a COCO results list (what ``compute``
        scores)."""
        images, annotations, results = [], [], []
        for image_id, (cand, refs) in self._images.items():
            images.append({"id": image_id})
            for r in refs:
                annotations.append({"image_id": image_id, "id": len(annotations), "caption": r})
            results.append({"image_id": image_id, "caption": cand})
        return {"images": images, "annotations": annotations}, results

    def compute(self, **options: Any) -> Dict[str, Any]:
        """Scores the union: the structure of ``capscore.score``."""
        from . import score

        if not self._images:
            raise CapscoreError("nothing to score", "empty_results")
        refs, cands = self.inputs()
        return score(refs, cands, metrics=self.metrics, threads=self.threads, **options)

    def __getstate__(self) -> Dict[str, Any]:
        return {"metrics": self.metrics, "threads": self.threads, "images": list(self._images.items())}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.metrics = state["metrics"]
        self.threads = state["threads"]
        self._images = {k: (c, list(r)) for k, (c, r) in state["images"]}
