"""The drop-in pycocoevalcap classes against pycocoevalcap 1.2's golden outputs: the same
values to the last bit, the same types and shapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from capscore.pycocoevalcap.bleu.bleu import Bleu
from capscore.pycocoevalcap.cider.cider import Cider
from capscore.pycocoevalcap.eval import COCOEvalCap
from capscore.pycocoevalcap.meteor.meteor import Meteor
from capscore.pycocoevalcap.rouge.rouge import Rouge
from capscore.pycocoevalcap.spice.spice import Spice
from capscore.pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

from conftest import FIXTURES, GOLDEN_SETS, golden, golden_inputs

KEYS = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"]


def tokenized_inputs(g):
    gts = {t["image_id"]: t["references"] for t in g["tokenized"]}
    res = {t["image_id"]: t["candidate"] for t in g["tokenized"]}
    return gts, res


@pytest.mark.parametrize("name", GOLDEN_SETS)
def test_tokenizer_equals_golden(name):
    g = golden(name)
    gts_raw = {r["image_id"]: [{"caption": c} for c in r["references"]] for r in g["raw"]}
    res_raw = {r["image_id"]: [{"caption": c} for c in r["candidate"]] for r in g["raw"]}
    tok = PTBTokenizer()
    gts, res = tokenized_inputs(g)
    assert tok.tokenize(gts_raw) == gts
    assert tok.tokenize(res_raw) == res


@pytest.mark.parametrize("name", GOLDEN_SETS)
def test_scorers_are_bit_identical(name, capsys):
    g = golden(name)
    gts, res = tokenized_inputs(g)
    per = {p["image_id"]: p for p in g["per_image"]}
    ids = list(gts.keys())

    score, scores = Bleu(4).compute_score(gts, res)
    assert isinstance(score, list) and all(type(x) is float for x in score)
    assert len(scores) == 4 and all(type(x) is float for x in scores[0])
    for k in range(4):
        key = f"Bleu_{k + 1}"
        assert score[k] == g["aggregate"][key], key
        assert scores[k] == [per[i][key] for i in ids], key
    printed = capsys.readouterr().out
    t = g["bleu_totals"]
    assert f"'testlen': {t['testlen']}, 'reflen': {t['reflen']}" in printed
    assert f"ratio: {t['ratio']}" in printed

    score, scores = Meteor().compute_score(gts, res)
    assert type(score) is float and score == g["aggregate"]["METEOR"]
    assert scores == [per[i]["METEOR"] for i in ids]

    for scorer, key in [(Rouge(), "ROUGE_L"), (Cider(), "CIDEr")]:
        score, scores = scorer.compute_score(gts, res)
        assert isinstance(score, np.float64) and isinstance(scores, np.ndarray), key
        assert scores.dtype == np.float64
        assert score == g["aggregate"][key], key
        assert scores.tolist() == [per[i][key] for i in ids], key


def test_method_names():
    assert [s.method() for s in (Bleu(), Meteor(), Rouge(), Cider(), Spice())] == [
        "Bleu", "METEOR", "Rouge", "CIDEr", "SPICE"]


def test_cocoevalcap_fields_with_pycocotools():
    from pycocotools.coco import COCO

    d = FIXTURES / "coco" / "fakecap_val2017"
    refs, cands = golden_inputs("fakecap_val2017")
    g = golden("fakecap_val2017")
    coco = COCO()
    coco.dataset = refs
    coco.createIndex()
    res = coco.loadRes(cands)
    ev = COCOEvalCap(coco, res, metrics=["bleu", "meteor", "rouge_l", "cider_d"])
    ev.params["image_id"] = res.getImgIds()
    ev.evaluate()
    assert ev.eval == {k: g["aggregate"][k] for k in KEYS}
    assert list(ev.eval) == KEYS
    per = {p["image_id"]: p for p in g["per_image"]}
    assert len(ev.evalImgs) == len(per)
    for e in ev.evalImgs:
        assert e == per[e["image_id"]]
        assert ev.imgToEval[e["image_id"]] is e


def test_spice_per_image_belongs_to_its_image():
    """pycocoevalcap zips sorted-order SPICE results with insertion-order ids; capscore keys
    each result by its own image, and the drop-in Spice returns sorted order as pycocoevalcap."""
    g = golden("fakecap_val2017")
    gts, res = tokenized_inputs(g)
    ids = list(gts.keys())[:12]
    ids = ids[::-1]  # not sorted
    gts = {i: gts[i] for i in ids}
    res = {i: res[i] for i in ids}
    sp = Spice()
    by_id = sp.scores_by_id(gts, res)
    avg, scores = sp.compute_score(gts, res)
    same = lambda a, b: json.dumps(a) == json.dumps(b)  # NaN-aware (undefined categories)
    assert same(scores, [by_id[i] for i in sorted(ids)])
    assert avg == np.mean([s["All"]["f"] for s in scores])
    one = {ids[3]: gts[ids[3]]}
    alone = sp.scores_by_id(one, {ids[3]: res[ids[3]]})
    assert same(alone[ids[3]], by_id[ids[3]])
    cats = set(scores[0])
    assert cats == {"All", "Object", "Attribute", "Relation", "Cardinality", "Color", "Size"}
    assert set(scores[0]["All"]) == {"pr", "re", "f", "fn", "fp", "tp", "numImages"}


def test_example_script_runs_with_one_changed_import(pycocoevalcap_src, tmp_path):
    """pycocoevalcap's own example, unchanged but for its import line, on the golden set."""
    src = (pycocoevalcap_src / "example" / "coco_eval_example.py").read_text()
    old = "from pycocoevalcap.eval import COCOEvalCap"
    assert src.count(old) == 1
    script = tmp_path / "coco_eval_example.py"
    script.write_text(src.replace(old, "from capscore.pycocoevalcap.eval import COCOEvalCap"))
    refs, cands = golden_inputs("fakecap_val2017")
    (tmp_path / "captions_val2014.json").write_text(json.dumps(refs))
    (tmp_path / "captions_val2014_fakecap_results.json").write_text(json.dumps(cands))
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    g = golden("fakecap_val2017")
    for k in KEYS:
        assert f"{k}: {g['aggregate'][k]:.3f}\n" in out, (k, out[-500:])
    assert "SPICE: " in out


def test_alias_makes_pycocoevalcap_imports_resolve_to_capscore():
    code = (
        "import capscore; capscore.install_pycocoevalcap_alias()\n"
        "from pycocoevalcap.cider.cider import Cider\n"
        "from pycocoevalcap.eval import COCOEvalCap\n"
        "import capscore.pycocoevalcap.cider.cider as c\n"
        "assert Cider is c.Cider, Cider\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    env = dict(os.environ, CAPSCORE_ALIAS_PYCOCOEVALCAP="1")
    code2 = "import capscore\nimport pycocoevalcap.bleu.bleu as b\nprint(b.__name__)\n"
    out = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "capscore.pycocoevalcap.bleu.bleu"


def test_native_spice_warns_once_naming_the_agreement_figures():
    """Issue 25: the drop-in SPICE says what it is (native parser, approximate), once per
    process, with Python's warnings; the exact metrics say nothing."""
    import warnings

    from capscore.pycocoevalcap import _common

    g = golden("fakecap_val2017")
    gts, res = tokenized_inputs(g)
    ids = list(gts.keys())[:3]
    gts = {i: gts[i] for i in ids}
    res = {i: res[i] for i in ids}
    _common._SPICE_WARNED = False
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        Cider().compute_score(gts, res)
        assert not [w for w in seen if issubclass(w.category, _common.NativeSpiceWarning)]
        Spice().compute_score(gts, res)
        Spice().compute_score(gts, res)
    spice = [w for w in seen if issubclass(w.category, _common.NativeSpiceWarning)]
    assert len(spice) == 1, [str(w.message) for w in seen]
    assert "docs/fidelity.md" in str(spice[0].message)


class _MutatingKey:
    """An image id whose ``__hash__`` adds images to ``target`` while armed: hostile input that
    changes a dict the scorer is reading."""

    armed = False

    def __init__(self, i, target=None):
        self.i, self.target = i, target

    def __hash__(self):
        if _MutatingKey.armed and self.target is not None:
            for j in range(20):
                self.target[("added", self.i, j)] = ["a b"]
        return hash(self.i)

    def __eq__(self, other):
        return isinstance(other, _MutatingKey) and other.i == self.i


@pytest.mark.parametrize("scorer", [lambda: Bleu(4), Rouge, Cider])
def test_dict_changed_by_a_key_is_an_error_not_a_panic(scorer):
    """A key whose hash changes ``gts`` while the scorer reads it gets a Python error (or a
    score of the dict as it was), never a PanicException from the native side."""
    from capscore import CapscoreError

    gts, res = {}, {}
    for i in range(10):
        gts[_MutatingKey(i, gts)] = ["a cat sits", "a dog"]
        res[_MutatingKey(i)] = ["a cat"]
    _MutatingKey.armed = True
    try:
        scorer().compute_score(gts, res)
    except (CapscoreError, RuntimeError) as e:
        assert type(e).__name__ != "PanicException"
    finally:
        _MutatingKey.armed = False


@pytest.mark.parametrize("scorer", [lambda: Bleu(4), Rouge, Cider])
def test_text_that_is_not_unicode_is_a_coded_error(scorer):
    """A caption with an unpaired surrogate (no UTF-8 form) is a CapscoreError with a code."""
    from capscore import CapscoreError

    with pytest.raises(CapscoreError) as e:
        scorer().compute_score({1: ["a \udc80 b", "a b"]}, {1: ["a b"]})
    assert e.value.code == "invalid_format" and "surrogate" in str(e.value)
