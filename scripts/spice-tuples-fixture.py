#!/usr/bin/env python3
"""Builds tests/fixtures/spice/oracle_items.json.gz: tuple-level SPICE cases (candidate
tuples, reference tuple lists) scored by the official SPICE 1.0 classes through
`spice-oracle.sh score` -- random items over a vocabulary full of synonyms and collisions,
and items recombined from the official parser's Visual Genome phrase tuples. Each item is
scored by two separate oracle runs; `stable` says whether they agreed (the official tool
breaks some merge ties by Java identity-hash order, which varies between runs). A last
set is built around merge ties on purpose (a string equally similar to two nodes, an
attribute similar to two attributes); it is scored by five oracle runs and keeps every
distinct official outcome in `outcomes`.

  scripts/spice-tuples-fixture.py SHARED_DIR OUT.json.gz [SEED]
"""
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile

shared, out_path = sys.argv[1], sys.argv[2]
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
oracle = os.path.join(shared, "tools/spice-oracle/spice-oracle.sh")
rng = random.Random(seed)

OBJECTS = ("man world homo person people guy car auto automobile motorcar dog dogs puppy "
           "tail bicycle wheel pitcher mound grass lawn shirt shorts short glass glasses "
           "boy child woman men table desk plant planter horse pony hair field it lot top "
           "front bench street water sky tree trees kite ball bat player").split()
ATTRIBUTES = ("red crimson blue two 2 three small little big large black dark white grey "
              "gray young new news many a lot one ten tall short brown green some several "
              "standing smile sit wooden empty old").split()
RELATIONS = ["hold", "have", "get", "on", "in", "ride", "sit on", "sit", "be in", "wear",
             "of", "with", "next to", "near", " up", "run", "be on", "carry", "take",
             "on top of", "in front of", "stand in front of", "be", "throw", "play with",
             "look at", "walk tmod", "by", "ride by"]


def random_item(i):
    def one():
        k = rng.random()
        if k < 0.35:
            return [rng.choice(OBJECTS)]
        if k < 0.65:
            return [rng.choice(OBJECTS), rng.choice(ATTRIBUTES)]
        return [rng.choice(OBJECTS), rng.choice(OBJECTS), rng.choice(RELATIONS)]
    return {"image_id": "random-%d-%d" % (seed, i),
            "test": [one() for _ in range(rng.randint(0, 9))],
            "refs": [[one() for _ in range(rng.randint(0, 8))]
                     for _ in range(rng.randint(1, 5))]}


phrases = []
with open(os.path.join(shared, "golden/spice/vg_phrases_spice_tuples.jsonl")) as f:
    for line in f:
        d = json.loads(line)
        tuples = [[s, o, r] for s, r, o in d["relations"]]
        tuples += [list(a) for a in d["attributes"]]
        tuples += [[o] for o in d["objects"]]
        for s, r, o in d["relations"]:
            tuples += [[s], [o]]
        for o, a in d["attributes"]:
            tuples.append([o])
        if tuples:
            phrases.append(tuples)
by_word = {}
for i, p in enumerate(phrases):
    for t in p:
        by_word.setdefault(t[0], []).append(i)
topics = [w for w, ids in by_word.items() if len(ids) >= 3]


def mutate(tuples):
    out = []
    for t in tuples:
        t = list(t)
        if rng.random() < 0.2:
            j = rng.randrange(len(t))
            pool = RELATIONS if (len(t) == 3 and j == 2) else (
                ATTRIBUTES if (len(t) == 2 and j == 1) else OBJECTS)
            t[j] = rng.choice(pool)
        if rng.random() < 0.1:
            continue
        out.append(t)
    rng.shuffle(out) if rng.random() < 0.3 else None
    return out


def vg_item(i):
    topic = rng.choice(topics)
    pool = by_word[topic]
    cand = []
    for _ in range(rng.randint(1, 2)):
        cand += mutate(phrases[rng.choice(pool)])
    refs = []
    for _ in range(rng.randint(1, 5)):
        ref = []
        for _ in range(rng.randint(1, 3)):
            src = rng.choice(pool) if rng.random() < 0.7 else rng.randrange(len(phrases))
            ref += mutate(phrases[src])
        refs.append(ref)
    return {"image_id": "vg-%d-%d" % (seed, i), "test": cand, "refs": refs}


def canon(g):
    names = {n["id"]: n["object"] for n in g["nodes"]}
    nodes = sorted([n["object"], sorted(n["attributes"])] for n in g["nodes"])
    rels = sorted([names[r["source"]], r["relation"], names[r["target"]]] for r in g["relations"])
    return {"nodes": nodes, "relations": rels}


def run(items, no_synsets):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(items, f)
        path = f.name
    try:
        cmd = [oracle, "score", path] + (["--no-synsets"] if no_synsets else [])
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    finally:
        os.unlink(path)


def tie_triples():
    """(x, y, z): x similar to y and to z, y and z not similar; node ties also need equal
    Jaccard similarity. Found with check/spec_model.py on the caption vocabulary."""
    sys.path.insert(0, os.path.join(shared, "tools/spice-oracle/check"))
    sys.dont_write_bytecode = True
    import spec_model
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([oracle, "extract-synonyms", tmp], check=True, stdout=subprocess.DEVNULL)
        syn = spec_model.Synonyms(tmp)
    vocab = sorted({w for p in phrases for t in p for w in t if w.isalpha()} | set(OBJECTS)
                   | set(ATTRIBUTES))
    S = {w: frozenset(syn.concept_synsets(w)) for w in vocab}
    S = {w: s for w, s in S.items() if s}
    index = {}
    for w, s in S.items():
        for i in s:
            index.setdefault(i, []).append(w)
    attr, node = [], []
    for x in sorted(S):
        near = sorted({w for i in S[x] for w in index[i]} - {x})
        for a in range(len(near)):
            for b in range(a + 1, len(near)):
                y, z = near[a], near[b]
                if S[y] & S[z]:
                    continue
                attr.append((x, y, z))
                jy = len(S[x] & S[y]) / len(S[x] | S[y])
                jz = len(S[x] & S[z]) / len(S[x] | S[z])
                if jy == jz:
                    node.append((x, y, z))
    return attr, node


def tie_items(n):
    attr, node = tie_triples()
    items = []
    for i in range(n):
        filler = random_item(10_000 + i)
        if i % 2 == 0:
            x, y, z = rng.choice(attr)
            o = rng.choice(OBJECTS)
            ref = [[o, y], [o, z], [o, x]]
            cand = [[o, rng.choice([x, y, z])], [o, rng.choice([x, y, z])]]
        else:
            x, y, z = rng.choice(node)
            o = rng.choice(OBJECTS)
            ref = [[y], [z], [x], [x, rng.choice(ATTRIBUTES)], [o, x, rng.choice(RELATIONS)]]
            cand = [[rng.choice([x, y, z])], [rng.choice([y, z]), rng.choice(ATTRIBUTES)],
                    [o, rng.choice([x, y, z]), rng.choice(RELATIONS)]]
        refs = filler["refs"]
        refs.insert(rng.randrange(len(refs) + 1), ref)
        items.append({"image_id": "tie-%d-%d" % (seed, i),
                      "test": cand + filler["test"][:3], "refs": refs})
    return items


sets = [("random", [random_item(i) for i in range(1400)], False),
        ("random-nosyn", [random_item(1400 + i) for i in range(400)], True),
        ("vg", [vg_item(i) for i in range(1400)], False),
        ("vg-nosyn", [vg_item(1400 + i) for i in range(200)], True),
        ("ties", tie_items(300), False)]
cases = []
for name, items, no_syn in sets:
    runs = [run(items, no_syn) for _ in range(5 if name == "ties" else 2)]
    for k, item in enumerate(items):
        outs = []
        for r in runs:
            x = r["images"][k]
            assert x["image_id"] == item["image_id"]
            o = {"scores": x["scores"], "candidate_graph": canon(x["candidate_graph"]),
                 "reference_graph": canon(x["reference_graph"])}
            if o not in outs:
                outs.append(o)
        case = {"image_id": item["image_id"], "use_synsets": not no_syn,
                "test": item["test"], "refs": item["refs"], "stable": len(outs) == 1}
        case.update(outs[0])
        if name == "ties":
            case["outcomes"] = outs
        cases.append(case)
    print("%s: %d items, %d unstable" % (name, len(items),
                                        sum(not c["stable"] for c in cases[-len(items):])),
          file=sys.stderr)

with gzip.open(out_path, "wt") as f:
    json.dump({"provenance": "official SPICE 1.0 scoring classes via "
               "shared/tools/spice-oracle/spice-oracle.sh score (pycocoevalcap 1.2 wheel, "
               "Meteor-1.5 synonym data); inputs: seeded random tuples and recombined "
               "golden/spice/vg_phrases_spice_tuples.jsonl; generated by "
               "scripts/spice-tuples-fixture.py (seed %d); graphs canonicalised "
               "(sorted strings, sorted nodes and relations)" % seed,
               "cases": cases}, f, separators=(",", ":"))
print("wrote %d cases" % len(cases), file=sys.stderr)
