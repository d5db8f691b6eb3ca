"""pycocoevalcap's ``COCOEvalCap``: tokenizes, scores BLEU-1..4, METEOR, ROUGE-L, CIDEr(-D) and
SPICE, and fills ``eval``, ``imgToEval`` and ``evalImgs`` as pycocoevalcap does.

It takes pycocotools ``COCO`` objects (anything with ``imgToAnns`` and ``getImgIds()``). All
metrics are computed in one native call. Per-image SPICE results are attached to their own
images (pycocoevalcap's zip of sorted-order results with insertion-order ids is not copied)."""

from __future__ import annotations

from typing import Any, Dict, Hashable, List, Optional, Sequence

from .. import _capscore
from .._errors import CapscoreError, translated
from ._common import aligned, spice_image, warn_native_spice
from .tokenizer.ptbtokenizer import PTBTokenizer

# pycocoevalcap's scorers, in its order: (capscore metric, output keys, printed name).
_SCORERS = [
    ("bleu", ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"], "Bleu"),
    ("meteor", ["METEOR"], "METEOR"),
    ("rouge_l", ["ROUGE_L"], "Rouge"),
    ("cider_d", ["CIDEr"], "CIDEr"),
    ("spice", ["SPICE"], "SPICE"),
]


class COCOEvalCap:
    @translated
    def __init__(self, coco, cocoRes, metrics: Optional[Sequence[str]] = None):
        """``metrics`` (capscore's addition) limits the scorers, e.g. ``["bleu", "meteor",
        "rouge_l", "cider_d"]``; by default all five run, as in pycocoevalcap."""
        self.evalImgs: List[Dict[str, Any]] = []
        self.eval: Dict[str, Any] = {}
        self.imgToEval: Dict[Hashable, Dict[str, Any]] = {}
        self.coco = coco
        self.cocoRes = cocoRes
        self.params = {"image_id": coco.getImgIds()}
        known = [m for m, _, _ in _SCORERS]
        if metrics is not None:
            unknown = [m for m in metrics if m not in known]
            if unknown:
                raise CapscoreError(f"unknown metrics {unknown}; known: {known}", "unknown_metric")
        self.metrics = list(metrics) if metrics is not None else known

    @translated
    def evaluate(self) -> None:
        imgIds = self.params["image_id"]
        gts = {}
        res = {}
        for imgId in imgIds:
            gts[imgId] = self.coco.imgToAnns[imgId]
            res[imgId] = self.cocoRes.imgToAnns[imgId]

        print("tokenization...")
        tokenizer = PTBTokenizer()
        gts = tokenizer.tokenize(gts)
        res = tokenizer.tokenize(res)

        # One native call computes every metric.
        print("setting up scorers...")
        scorers = [s for s in _SCORERS if s[0] in self.metrics]
        ids, cands, refs = aligned(gts, res)
        want_spice = "spice" in self.metrics
        if want_spice:
            warn_native_spice()
        aggregate, columns, extras = _capscore.score_lists(
            cands, refs, metrics=[m for m, _, _ in scorers], pretokenized=True, full=want_spice
        )
        for metric, keys, name in scorers:
            print("computing %s score..." % name)
            if metric == "bleu":
                t = extras["bleu_totals"]
                print({"testlen": t["testlen"], "reflen": t["reflen"],
                       "guess": t["guess"], "correct": t["correct"]})
                print("ratio:", t["ratio"])
            if metric == "spice":
                import json

                report = json.loads(extras["report"])
                per_image = [spice_image(im) for im in report["spice"]["per_image"]]
                self.setEval(float(aggregate["SPICE"]), "SPICE")
                self.setImgToEvalImgs(per_image, ids, "SPICE")
                print("%s: %0.3f" % ("SPICE", aggregate["SPICE"]))
                continue
            for key in keys:
                self.setEval(float(aggregate[key]), key)
                self.setImgToEvalImgs([float(x) for x in columns[key]], ids, key)
                print("%s: %0.3f" % (key, aggregate[key]))
        self.setEvalImgs()

    def setEval(self, score, method):
        self.eval[method] = score

    def setImgToEvalImgs(self, scores, imgIds, method):
        for imgId, score in zip(imgIds, scores):
            if imgId not in self.imgToEval:
                self.imgToEval[imgId] = {}
                self.imgToEval[imgId]["image_id"] = imgId
            self.imgToEval[imgId][method] = score

    def setEvalImgs(self):
        self.evalImgs = [eval for imgId, eval in self.imgToEval.items()]
