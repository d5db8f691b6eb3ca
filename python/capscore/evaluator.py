"""Sharded evaluation: collect on each worker, merge, compute once."""

from __future__ import annotations

import numbers
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._errors import CapscoreError, translated

ImageId = Union[int, str]

#: The columns of a column batch (Ray Data's ``map_batches`` hands these to a function).
BATCH_COLUMNS = ("image_id", "caption", "references")


def _image_id(value: Any) -> ImageId:
    """An image id as an ``int`` or a ``str``: numpy integers (and any integral number that is
    not a bool) become ``int``; numpy strings become ``str``."""
    if isinstance(value, bool):
        raise CapscoreError(f"image id {value!r} must be an int or a str", "invalid_image_id")
    if isinstance(value, str):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    raise CapscoreError(f"image id {value!r} must be an int or a str", "invalid_image_id")


def _canonical(image_id: ImageId) -> Tuple[int, Any]:
    """The canonical image order: integer ids ascending, then string ids in code-point order."""
    return (0, image_id) if isinstance(image_id, int) else (1, image_id)


def _caption(value: Any, what: str) -> str:
    if isinstance(value, str):
        return str(value)
    raise CapscoreError(f"{what} must be a string, got {type(value).__name__}", "invalid_caption")


def _references(value: Any, image_id: ImageId) -> List[str]:
    """An image's references: a list (or tuple, or array) of strings, at least one."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise CapscoreError(
            f"image {image_id!r}: references must be a list of strings, got {type(value).__name__}",
            "invalid_format",
        )
    refs = [_caption(r, f"image {image_id!r}: reference #{j}") for j, r in enumerate(value)]
    if not refs:
        raise CapscoreError(f"image {image_id!r} has no references", "missing_references")
    return refs


class Evaluator:
    """Collects (references, candidate) per image on a shard; ``merge`` joins shards;
    ``compute()`` scores the union in one call.

    The state is the captions themselves, because CIDEr-D's document frequencies are taken
    over the union's references and the tokenizer reads each caption with what follows it.
    ``compute()`` scores the images in a canonical order (integer ids ascending, then string
    ids), so the result depends neither on the order in which shards arrive nor on how the
    images were split among them: it equals ``capscore.score`` on the union given in that
    order, bit for bit. The state is picklable (``torch.distributed.all_gather_object``, Ray
    object refs).
    """

    @translated
    def __init__(self, metrics: Optional[Sequence[str]] = None, threads: Optional[int] = None):
        self.metrics = list(metrics) if metrics is not None else None
        self.threads = threads
        self._images: Dict[ImageId, Tuple[str, List[str]]] = {}

    def __len__(self) -> int:
        return len(self._images)

    def _check_new(self, pending: Dict[ImageId, Tuple[str, List[str]]]) -> None:
        for image_id, entry in pending.items():
            old = self._images.get(image_id)
            if old is not None and old != entry:
                raise CapscoreError(
                    f"image {image_id!r} was added twice with different captions", "duplicate_image_id"
                )

    def _apply(self, pending: Dict[ImageId, Tuple[str, List[str]]]) -> "Evaluator":
        """Adds every pending image or none (state unchanged on any error)."""
        self._check_new(pending)
        self._images.update(pending)
        return self

    @translated
    def update(self, references: Any, candidates: Any = None) -> "Evaluator":
        """Adds images, all or none (on an error the evaluator is unchanged). Accepted shapes:

        * ``update(references, candidates)`` with ``references`` ``{image_id: [reference, ...]}``
          and ``candidates`` ``{image_id: caption}``, pycocoevalcap's ``{image_id: [caption]}``
          or a COCO results list ``[{"image_id", "caption"}]``;
        * ``update(batch)`` with a column batch ``{"image_id": [...], "caption": [...],
          "references": [[...], ...]}`` (lists or numpy arrays, as Ray Data hands them).

        Ids may be ``int``, ``str`` or numpy integers. Every candidate needs references."""
        pending: Dict[ImageId, Tuple[str, List[str]]] = {}

        def add(image_id: Any, caption: Any, refs: Any) -> None:
            i = _image_id(image_id)
            entry = (_caption(caption, f"image {i!r}: the caption"), _references(refs, i))
            old = pending.get(i)
            if old is not None and old != entry:
                raise CapscoreError(f"image {i!r} appears twice with different captions", "duplicate_image_id")
            pending[i] = entry

        if candidates is None:
            if not isinstance(references, Mapping) or set(BATCH_COLUMNS) - set(references.keys()):
                raise CapscoreError(
                    "update(batch) takes a column batch with the columns image_id, caption and references",
                    "invalid_format",
                )
            cols = [list(references[c]) for c in BATCH_COLUMNS]
            if len({len(c) for c in cols}) != 1:
                raise CapscoreError(
                    "the batch's columns image_id, caption and references differ in length", "invalid_format"
                )
            for image_id, caption, refs in zip(*cols):
                add(image_id, caption, refs)
            return self._apply(pending)

        if not isinstance(references, Mapping):
            raise CapscoreError("references must be a dict {image_id: [reference, ...]}", "invalid_format")
        by_id = {}
        for k, v in references.items():
            by_id[_image_id(k)] = v
        if isinstance(candidates, Mapping):
            pairs = list(candidates.items())
        elif isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
            raise CapscoreError(
                "candidates must be a dict {image_id: caption} or a list of {image_id, caption}",
                "invalid_format",
            )
        else:
            pairs = []
            for j, c in enumerate(candidates):
                if not isinstance(c, Mapping) or "image_id" not in c or "caption" not in c:
                    raise CapscoreError(f"candidates[{j}] must be a dict with image_id and caption", "invalid_format")
                pairs.append((c["image_id"], c["caption"]))
        for image_id, caption in pairs:
            i = _image_id(image_id)
            if isinstance(caption, (list, tuple)):
                if len(caption) != 1:
                    raise CapscoreError(
                        f"image {i!r} has {len(caption)} candidate captions; exactly one is scored",
                        "invalid_format",
                    )
                caption = caption[0]
            if i not in by_id:
                raise CapscoreError(f"image {i!r} has a candidate but no references", "unknown_image_id")
            add(i, caption, by_id[i])
        return self._apply(pending)

    @translated
    def merge(self, other: "Evaluator") -> "Evaluator":
        """Adds another shard's images, all or none; returns self. Shards built for other
        metrics or thread counts are refused (their results could not be one computation)."""
        if not isinstance(other, Evaluator):
            raise CapscoreError(f"merge takes an Evaluator, got {type(other).__name__}", "invalid_format")
        if other.metrics != self.metrics:
            raise CapscoreError(
                f"cannot merge an evaluator for metrics {other.metrics} into one for {self.metrics}",
                "invalid_format",
            )
        return self._apply(dict(other._images))

    def image_ids(self) -> List[ImageId]:
        """The images in the canonical order ``compute`` scores them in."""
        return sorted(self._images, key=_canonical)

    def inputs(self) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
        """The union as a COCO annotation dict and a COCO results list, in the canonical image
        order (what ``compute`` scores)."""
        images, annotations, results = [], [], []
        for image_id in self.image_ids():
            cand, refs = self._images[image_id]
            images.append({"id": image_id})
            for r in refs:
                annotations.append({"image_id": image_id, "id": len(annotations), "caption": r})
            results.append({"image_id": image_id, "caption": cand})
        return {"images": images, "annotations": annotations}, results

    @translated
    def compute(self, **options: Any) -> Dict[str, Any]:
        """Scores the union (canonical image order): the structure of ``capscore.score``."""
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
