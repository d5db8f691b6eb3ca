#!/usr/bin/env python3
"""Synthetic load-test data for scripts/load.sh (deterministic, seed 4).

Writes into OUT_DIR:
  refs5000.json   COCO captions annotation file: 5,000 images x 5 references, built by
                  recombining the words of tests/fixtures/coco/fakecap_val2017 references;
  single.json     a POST /v1/score body: one result against dataset "load5000";
  big.json        a POST /v1/score body: results for all 5,000 images.
"""
import gzip, json, os, random, sys

out = sys.argv[1]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
refs = json.load(gzip.open(os.path.join(root, "tests/fixtures/coco/fakecap_val2017/refs.json.gz")))
caps = [a["caption"] for a in refs["annotations"]]
rng = random.Random(4)

def caption():
    base = rng.choice(caps).split()
    other = rng.choice(caps).split()
    k = rng.randint(2, max(2, len(base) - 1))
    words = base[:k] + other[rng.randint(0, len(other) - 1):]
    s = " ".join(words[:20])
    return s[0].upper() + s[1:] + ("." if rng.random() < 0.7 else "")

images, anns = [], []
for i in range(5000):
    iid = 100000 + i
    images.append({"id": iid})
    for _ in range(5):
        anns.append({"image_id": iid, "id": len(anns), "caption": caption()})
json.dump({"images": images, "annotations": anns}, open(os.path.join(out, "refs5000.json"), "w"))
results = [{"image_id": 100000 + i, "caption": caption()} for i in range(5000)]
json.dump({"dataset": "load5000", "results": results[:1]}, open(os.path.join(out, "single.json"), "w"))
json.dump({"dataset": "load5000", "results": results}, open(os.path.join(out, "big.json"), "w"))
