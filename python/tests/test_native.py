"""capscore.score (the CLI's structure), errors with codes, Evaluator merges, threads and the
GIL."""

from __future__ import annotations

import json
import os
import pickle
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

import capscore
from capscore import CapscoreError, Evaluator

from conftest import FIXTURES, golden, golden_inputs


def test_score_equals_the_cli(cli, tmp_path):
    d = FIXTURES / "coco" / "fakecap_val2017"
    refs, cands = golden_inputs("fakecap_val2017")
    (tmp_path / "r.json").write_text(json.dumps(refs))
    (tmp_path / "c.json").write_text(json.dumps(cands))
    for metrics in (None, ["bleu", "rouge_l", "cider_d", "spice"]):
        args = [str(cli), "score", "--refs", str(tmp_path / "r.json"), "--cands", str(tmp_path / "c.json")]
        if metrics:
            args += ["--metrics", ",".join(metrics)]
        expected = json.loads(subprocess.run(args, capture_output=True, check=True).stdout)
        got = capscore.score(tmp_path / "r.json", tmp_path / "c.json", metrics=metrics)
        assert got == expected
        # Python structures in, same numbers out.
        assert capscore.score(refs, cands, metrics=metrics) == expected
    g = golden("fakecap_val2017")
    assert got["aggregate"]["CIDEr"] == g["aggregate"]["CIDEr"]


def test_a_references_path_is_read_as_the_cli_reads_it(tmp_path):
    """A references path is read natively (a COCO file with its images first block by block,
    a gzip file or any other whole): the numbers of the same references given as a dict."""
    import gzip

    refs, cands = golden_inputs("fakecap_val2017")
    metrics = ["bleu", "cider_d"]
    expected = capscore.score(refs, cands, metrics=metrics)
    r = tmp_path / "r.json"
    r.write_text(json.dumps({"images": refs["images"], "annotations": refs["annotations"]}))
    assert capscore.score(str(r), cands, metrics=metrics) == expected
    assert capscore.score(r, cands, metrics=metrics) == expected
    z = tmp_path / "r.json.gz"
    z.write_bytes(gzip.compress(r.read_bytes()))
    assert capscore.score(z, cands, metrics=metrics) == expected
    with pytest.raises(CapscoreError) as e:
        capscore.score(tmp_path / "missing.json", cands, metrics=metrics)
    assert e.value.code == "file_not_found"
    bad = tmp_path / "bad.json"
    bad.write_text(r.read_text()[:-1])
    with pytest.raises(CapscoreError) as e:
        capscore.score(bad, cands, metrics=metrics)
    assert e.value.code == "invalid_json"


def test_dict_inputs_keep_integer_ids():
    refs = {1: ["a dog runs on the grass", "a dog is running"], 2: ["a cat sleeps", "a cat on a bed"]}
    cands = {1: "a dog running", 2: ["a cat sleeping"]}  # pycocoevalcap's {id: [caption]} too
    out = capscore.score(refs, cands, metrics=["bleu", "cider_d"])
    assert [p["image_id"] for p in out["per_image"]] == [1, 2]
    assert set(out["aggregate"]) == {"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "CIDEr"}


@pytest.mark.parametrize(
    "refs,cands,metrics,code",
    [
        ({1: ["a dog"]}, {2: "a dog"}, ["bleu"], "unknown_image_id"),
        ({1: ["a dog"]}, {1: "a dog"}, ["cider"], "unknown_metric"),
        ({1: ["a dog"]}, {1: 5}, ["bleu"], "invalid_caption"),
        ({1: ["a dog"]}, {1: ["a", "b"]}, ["bleu"], "invalid_format"),
        ("/nonexistent/refs.json", {1: "a"}, ["bleu"], "file_not_found"),
        ({1: ["a dog"]}, [], ["bleu"], "empty_results"),
    ],
)
def test_errors_carry_the_cli_codes(refs, cands, metrics, code):
    with pytest.raises(CapscoreError) as e:
        capscore.score(refs, cands, metrics=metrics)
    assert e.value.code == code, str(e.value)
    assert code in capscore.ERROR_CODES or code == "file_not_found"
    assert isinstance(e.value, ValueError)
    again = pickle.loads(pickle.dumps(e.value))
    assert (again.code, str(again)) == (e.value.code, str(e.value))


def test_dropin_errors_are_coded():
    from capscore.pycocoevalcap.cider.cider import Cider

    with pytest.raises(CapscoreError) as e:
        Cider().compute_score({1: ["a b"]}, {2: ["a b"]})
    assert e.value.code == "unknown_image_id"
    with pytest.raises(CapscoreError) as e:
        Cider().compute_score({1: ["a b"]}, {1: ["a b", "c"]})
    assert e.value.code == "invalid_format"


def corpus(n=60, seed=0):
    g = golden("fakecap_val2017")
    rows = g["raw"][:n]
    refs = {r["image_id"]: r["references"] for r in rows}
    cands = {r["image_id"]: r["candidate"][0] for r in rows}
    return refs, cands


@pytest.mark.parametrize("seed", range(5))
def test_evaluator_shards_merge_to_the_union(seed):
    refs, cands = corpus()
    ids = list(cands)
    rng = random.Random(seed)
    cut = sorted(rng.sample(range(1, len(ids)), 2))
    shards = [ids[: cut[0]], ids[cut[0]: cut[1]], ids[cut[1]:]]
    evs = []
    for part in shards:
        ev = Evaluator(metrics=["bleu", "meteor", "rouge_l", "cider_d"])
        ev.update({i: refs[i] for i in part}, {i: cands[i] for i in part})
        evs.append(pickle.loads(pickle.dumps(ev)))  # shipped between processes
    merged = evs[0].merge(evs[1]).merge(evs[2])
    # compute() scores the canonical order (integer ids ascending).
    canonical = sorted(ids)
    union = capscore.score({i: refs[i] for i in canonical}, {i: cands[i] for i in canonical},
                           metrics=["bleu", "meteor", "rouge_l", "cider_d"])
    assert merged.compute() == union
    # Shards arriving in another order, or split by stride (DistributedSampler), give the
    # same bytes.
    rev = Evaluator(metrics=["bleu", "meteor", "rouge_l", "cider_d"])
    for ev in reversed(evs):
        rev.merge(ev)
    assert json.dumps(rev.compute()) == json.dumps(union)
    strided = [Evaluator(metrics=["bleu", "meteor", "rouge_l", "cider_d"]) for _ in range(3)]
    for k, ev in enumerate(strided):
        part = ids[k::3]
        ev.update({i: refs[i] for i in part}, {i: cands[i] for i in part})
    assert json.dumps(strided[2].merge(strided[0]).merge(strided[1]).compute()) == json.dumps(union)


def test_evaluator_rejects_conflicting_shards():
    refs, cands = corpus(4)
    a = Evaluator().update(refs, cands)
    i = next(iter(cands))
    b = Evaluator().update({i: refs[i]}, {i: cands[i] + " extra"})
    with pytest.raises(CapscoreError) as e:
        a.merge(b)
    assert e.value.code == "duplicate_image_id"


def test_threads_give_the_same_bytes():
    refs, cands = corpus(126)
    one = capscore.score(refs, cands, metrics=["bleu", "meteor", "rouge_l", "cider_d"], threads=1)
    two = capscore.score(refs, cands, metrics=["bleu", "meteor", "rouge_l", "cider_d"], threads=2)
    assert json.dumps(one) == json.dumps(two)


def test_a_million_threads_are_refused_before_any_starts():
    """Issue 29: threads are capped at 4 per core; above it, a CapscoreError names the cap."""
    refs, cands = corpus(5)
    with pytest.raises(CapscoreError) as e:
        capscore.score(refs, cands, metrics=["bleu"], threads=1_000_000)
    assert e.value.code == "limit_exceeded"
    assert "4 x the" in str(e.value) and "cores here" in str(e.value)


FORK_SCRIPT = r"""
import json, multiprocessing, os, sys, traceback
import capscore
from capscore.pycocoevalcap.bleu.bleu import Bleu
from capscore.pycocoevalcap.cider.cider import Cider
from capscore.pycocoevalcap.rouge.rouge import Rouge
from capscore.scst import CiderD

# 2,000 images: above every size at which the library's steps go parallel.
gts = {i: [f"a man riding a horse number {i % 97} on a beach", "a person on a brown horse",
           f"two dogs {i % 13} play in the snow"] for i in range(2000)}
res = {i: [f"a man rides a horse {i % 7} on the sand"] for i in range(2000)}
refs = {str(i): v for i, v in gts.items()}
cands = [{"image_id": str(i), "caption": v[0]} for i, v in res.items()]

def everything(_=None):
    scorer = CiderD(df=refs, tokenize=True)
    scorer.set_references(refs)
    reward, _b = scorer.score([c["caption"] for c in cands], list(refs), bleu4=True)
    return [
        Bleu(4).compute_score(gts, res, verbose=0)[0],
        float(Rouge().compute_score(gts, res)[0]),
        float(Cider().compute_score(gts, res)[0]),
        capscore.score(refs, cands, metrics=["bleu", "rouge_l", "cider_d"])["aggregate"],
        capscore.tokenize(["A Man, riding!"]),
        float(reward.sum()),
    ]

# work() in a forked child: its JSON result, or the child's exit status when it failed.
def in_child(work):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            data = json.dumps(work()).encode()
            while data:
                data = data[os.write(w, data):]
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    return json.loads(b"".join(chunks)) if status == 0 and chunks else {"status": status}

parent = everything()
child, grandchild = in_child(lambda: [everything(), in_child(everything)])
with multiprocessing.get_context("fork").Pool(2) as pool:
    pooled = pool.map(everything, range(2))
print(json.dumps({"parent": parent, "child": child, "grandchild": grandchild, "pooled": pooled}))
"""


def run_isolated(script, timeout=60):
    """Runs `script` in a fresh interpreter in its own session (on a timeout, it and every
    process it forked are killed and the test fails); returns its stdout."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"a forked child (or its parent) did not finish within {timeout} s")
    assert proc.returncode == 0, stderr
    return stdout


def test_a_forked_child_scores_after_its_parent_did():
    """A child forked after the parent scored (a DataLoader's or a multiprocessing Pool's
    workers) has none of the parent's worker threads: each of its calls used to wait for them
    forever. It now starts its own and gets the parent's numbers."""
    got = json.loads(run_isolated(FORK_SCRIPT))
    assert got["child"] == got["parent"]
    assert got["grandchild"] == got["parent"]
    assert got["pooled"] == [got["parent"], got["parent"]]
    assert got["parent"][2] > 0


FORK_DURING_LOAD = r"""
import os, threading, time
import capscore
refs, cands = {1: ["a dog runs on the grass"]}, {1: "a dog runs on grass"}
def meteor():
    return capscore.score(refs, cands, metrics=["meteor"], offline=True)["aggregate"]["METEOR"]
loader = threading.Thread(target=meteor)
loader.start()
time.sleep(0.02)  # METEOR's resources take 0.1 s and more to load: fork in the middle
pid = os.fork()
if pid == 0:
    os._exit(0 if meteor() > 0 else 3)
loader.join()
_, status = os.waitpid(pid, 0)
print(status, meteor() > 0)
"""


def test_a_child_forked_while_resources_load_can_load_them():
    """A fork while another thread loads METEOR's resources: the child's own METEOR call
    loads them again (the lock that guarded the load used to stay held in the child)."""
    assert run_isolated(FORK_DURING_LOAD).split() == ["0", "True"]


def test_concurrent_python_threads():
    refs, cands = corpus(126)
    expected = capscore.score(refs, cands, metrics=["bleu", "meteor", "rouge_l", "cider_d"])
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                results.append(capscore.score(refs, cands, metrics=["bleu", "meteor", "rouge_l", "cider_d"]))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 12 and all(r == expected for r in results)


def test_the_gil_is_released_during_native_work():
    refs, cands = corpus(126)
    big_refs = {}
    big_cands = {}
    for k in range(40):  # ~5,000 images: long enough to observe
        for i, c in cands.items():
            big_refs[f"{k}-{i}"] = refs[i]
            big_cands[f"{k}-{i}"] = c
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.05)
    start = time.perf_counter()
    ids = list(big_cands)
    cand_list = [big_cands[i] for i in ids]
    ref_lists = [big_refs[i] for i in ids]
    ticks.clear()
    start = time.perf_counter()
    capscore._capscore.score_lists(cand_list, ref_lists, metrics=["meteor", "cider_d"], threads=1)
    end = time.perf_counter()
    stop.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    # The ticker ran while the call was inside native code (it would be frozen otherwise).
    assert end - start > 0.05
    assert len(during) >= 10, (len(during), end - start)


def test_bootstrap_and_df_from_equal_the_cli(cli, tmp_path):
    refs, cands = golden_inputs("fakecap_val2017")
    (tmp_path / "r.json").write_text(json.dumps(refs))
    (tmp_path / "c.json").write_text(json.dumps(cands))
    args = [str(cli), "score", "--refs", str(tmp_path / "r.json"), "--cands", str(tmp_path / "c.json"),
            "--metrics", "bleu,cider_d", "--bootstrap", "200", "--bootstrap-seed", "5",
            "--df-from", str(tmp_path / "r.json")]
    expected = json.loads(subprocess.run(args, capture_output=True, check=True).stdout)
    got = capscore.score(refs, cands, metrics=["bleu", "cider_d"],
                         bootstrap={"samples": 200, "seed": 5}, df_from=tmp_path / "r.json")
    assert got == expected
    assert got["bootstrap"]["low"]["CIDEr"] < got["aggregate"]["CIDEr"] < got["bootstrap"]["high"]["CIDEr"]
    with pytest.raises(CapscoreError) as e:
        capscore.score(refs, cands, bootstrap=0)
    assert e.value.code == "invalid_format"


def _cli_json(cli, *args):
    out = subprocess.run([str(cli), *map(str, args)], capture_output=True, check=True)
    return json.loads(out.stdout)


def test_leaderboard_options_equal_the_cli(cli, tmp_path):
    """split_by / strict / format="evalai", multi_candidate and compare(): the CLI's numbers."""
    refs, cands = golden_inputs("fakecap_val2017")
    domains = ["in-domain", "near-domain", "out-domain"]
    for k, img in enumerate(refs["images"]):
        img["domain"] = domains[k % 3]
    r, c = tmp_path / "r.json", tmp_path / "c.json"
    r.write_text(json.dumps(refs))
    c.write_text(json.dumps(cands))
    base = ["score", "--refs", r, "--cands", c, "--metrics", "bleu,cider_d"]
    expected = _cli_json(cli, *base, "--split-by", "domain", "--strict")
    got = capscore.score(refs, cands, metrics=["bleu", "cider_d"], split_by="domain", strict=True)
    assert got == expected
    assert sorted(got["splits"]) == domains
    evalai = capscore.score(r, c, metrics=["bleu", "cider_d"], split_by="domain", format="evalai")
    assert evalai == _cli_json(cli, *base, "--split-by", "domain", "--format", "evalai")
    with pytest.raises(CapscoreError) as e:
        capscore.score(refs, cands[1:], metrics=["bleu"], strict=True)
    assert e.value.code == "incomplete_results"
    # Two candidates per image: the original and a prefixed one.
    multi = []
    for x in cands:
        multi += [x, {"image_id": x["image_id"], "caption": "a photo of " + x["caption"]}]
    m = tmp_path / "m.json"
    m.write_text(json.dumps(multi))
    base_m = ["score", "--refs", r, "--cands", m, "--metrics", "bleu,cider_d", "--multi-candidate"]
    expected = _cli_json(cli, *base_m, "--select", "mean")
    got = capscore.score(refs, multi, metrics=["bleu", "cider_d"], multi_candidate="mean")
    assert got == expected
    assert got["multi_candidate"]["candidates"] == 2
    got = capscore.score(refs, multi, metrics=["bleu", "cider_d"],
                         multi_candidate={"select": "max", "by": "Bleu_4"})
    assert got == _cli_json(cli, *base_m, "--select-by", "Bleu_4")
    with pytest.raises(CapscoreError) as e:
        capscore.score(refs, multi, metrics=["bleu"])
    assert e.value.code == "duplicate_image_id"
    # compare(): B (the originals) against A (prefixed).
    a = multi[1::2]
    pa = tmp_path / "a.json"
    pa.write_text(json.dumps(a))
    expected = _cli_json(cli, "compare", "--refs", r, "--cands", pa, "--cands", c,
                         "--metrics", "bleu,cider_d", "--samples", "200", "--trials", "200", "--seed", "4")
    got = capscore.compare(refs, a, cands, metrics=["bleu", "cider_d"], samples=200, trials=200, seed=4)
    assert got == expected
    assert got["delta"]["CIDEr"] == got["b"]["CIDEr"] - got["a"]["CIDEr"]
    with pytest.raises(CapscoreError) as e:
        capscore.compare(refs, a[1:], cands, metrics=["bleu"])
    assert e.value.code == "image_sets_differ"


def test_evaluator_takes_pycocoevalcap_shapes_numpy_ids_and_column_batches():
    """Issue 25: `{id: [caption]}`, numpy integer ids and Ray Data's column batch all add the
    same images as plain dicts."""
    import numpy as np

    refs, cands = corpus(12)
    ids = sorted(cands)
    want = Evaluator(metrics=["bleu", "rouge_l", "cider_d"]).update(refs, cands).compute()
    listed = Evaluator(metrics=["bleu", "rouge_l", "cider_d"]).update(
        {np.int64(i): refs[i] for i in ids}, {np.int64(i): [cands[i]] for i in ids}
    )
    assert listed.compute() == want
    batch = {
        "image_id": np.array(ids, dtype=np.int64),
        "caption": np.array([cands[i] for i in ids], dtype=object),
        "references": np.array([np.array(refs[i], dtype=object) for i in ids], dtype=object),
    }
    cols = Evaluator(metrics=["bleu", "rouge_l", "cider_d"]).update(batch)
    assert cols.compute() == want


def test_evaluator_refuses_bad_input_and_leaves_its_state_unchanged():
    """Issue 29: wrong types are a CapscoreError naming the image; an update or a merge that
    fails part way changes nothing; evaluators for other metrics do not merge."""
    refs, cands = corpus(6)
    ids = sorted(cands)
    ev = Evaluator(metrics=["bleu"]).update({ids[0]: refs[ids[0]]}, {ids[0]: cands[ids[0]]})
    before = pickle.dumps(ev)
    bad_refs = {i: refs[i] for i in ids}
    bad_refs[ids[3]] = "a single string is not a list of references"
    with pytest.raises(CapscoreError) as e:
        ev.update(bad_refs, {i: cands[i] for i in ids})
    assert e.value.code == "invalid_format" and repr(ids[3]) in str(e.value)
    assert pickle.dumps(ev) == before
    with pytest.raises(CapscoreError) as e:
        ev.update({ids[1]: [1, 2]}, {ids[1]: cands[ids[1]]})
    assert e.value.code == "invalid_caption"
    with pytest.raises(CapscoreError) as e:
        ev.update({True: ["a"]}, {True: "a"})
    assert e.value.code == "invalid_image_id"
    # A merge whose last image conflicts adds nothing.
    other = Evaluator(metrics=["bleu"]).update({i: refs[i] for i in ids[1:]}, {i: cands[i] for i in ids[1:]})
    other._images[ids[0]] = ("something else", refs[ids[0]])
    with pytest.raises(CapscoreError) as e:
        ev.merge(other)
    assert e.value.code == "duplicate_image_id"
    assert pickle.dumps(ev) == before
    with pytest.raises(CapscoreError) as e:
        ev.merge(Evaluator(metrics=["cider_d"]))
    assert "metrics" in str(e.value)
    assert pickle.dumps(ev) == before


def test_aac_metrics_and_huggingface_call_shapes_equal_score():
    """Issue 25: `evaluate(candidates, mult_references)` (aac-metrics) and
    `compute(predictions=..., references=...)` (HuggingFace) give capscore.score's numbers on
    the same data (item i = candidates[i] against references[i])."""
    refs, cands = corpus(40)
    ids = list(cands)
    candidates = [cands[i] for i in ids]
    mult = [refs[i] for i in ids]
    metrics = ["bleu", "rouge_l", "cider_d"]
    want = capscore.score({k: mult[k] for k in range(len(ids))}, {k: candidates[k] for k in range(len(ids))}, metrics=metrics)
    corpus_scores, sents = capscore.evaluate(candidates, mult, metrics=metrics)
    assert corpus_scores["cider_d"] == want["aggregate"]["CIDEr"]
    assert corpus_scores["bleu_4"] == want["aggregate"]["Bleu_4"]
    assert corpus_scores["rouge_l"] == want["aggregate"]["ROUGE_L"]
    assert [float(x) for x in sents["cider_d"]] == [r["CIDEr"] for r in want["per_image"]]
    hf = capscore.compute(predictions=candidates, references=mult, metrics=metrics)
    assert {k: hf[k] for k in want["aggregate"]} == want["aggregate"]
    assert hf["per_item"]["Bleu_1"] == [r["Bleu_1"] for r in want["per_image"]]
    one = capscore.compute(predictions=candidates[:3], references=[m[0] for m in mult[:3]], metrics=["bleu"])
    assert one["Bleu_1"] == capscore.score({k: [mult[k][0]] for k in range(3)}, {k: candidates[k] for k in range(3)}, metrics=["bleu"])["aggregate"]["Bleu_1"]
    with pytest.raises(CapscoreError) as e:
        capscore.evaluate(candidates, mult[:-1])
    assert e.value.code == "invalid_format"
    with pytest.raises(CapscoreError):
        capscore.evaluate(candidates, [m[0] for m in mult])


def test_gzip_files_read_as_the_cli_reads_them_and_bombs_are_refused(tmp_path):
    """Issue 29: a .gz path scores as the plain file (no UnicodeDecodeError), and a small
    gzip bomb is a CapscoreError naming the limit instead of gigabytes of memory."""
    import gzip

    refs, cands = corpus(8)
    plain = tmp_path / "refs.json"
    plain.write_text(json.dumps({str(k): v for k, v in refs.items()}))
    packed = tmp_path / "refs.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    c = tmp_path / "cands.json"
    c.write_text(json.dumps({str(k): v for k, v in cands.items()}))
    assert capscore.score(packed, c, metrics=["bleu"]) == capscore.score(plain, c, metrics=["bleu"])
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        block = b" " * (1 << 20)
        for _ in range(2048):
            f.write(block)
    assert bomb.stat().st_size < 4 << 20
    with pytest.raises(CapscoreError) as e:
        capscore.score(bomb, c, metrics=["bleu"])
    assert e.value.code == "limit_exceeded"
    assert "64 times" in str(e.value)


def _nocaps_like(tmp_path):
    refs, cands = golden_inputs("fakecap_val2017")
    domains = ["in-domain", "near-domain", "out-domain"]
    for k, img in enumerate(refs["images"]):
        img["domain"] = domains[k % 3]
    return refs, cands, domains


def test_evalai_scoring_program_returns_evalai_shape(tmp_path):
    """Issue 25: capscore.evalai.evaluate has EvalAI's signature and result shape, strict by
    default, with the numbers of capscore.score."""
    from capscore import evalai

    refs, cands, domains = _nocaps_like(tmp_path)
    r, c = tmp_path / "test_annotations.json", tmp_path / "submission.json"
    r.write_text(json.dumps(refs))
    c.write_text(json.dumps(cands))
    out = evalai.evaluate(str(r), str(c), "test", split_by="domain", metrics=["bleu", "cider_d"],
                          submission_metadata={"id": 1})
    want = capscore.score(refs, cands, metrics=["bleu", "cider_d"], split_by="domain", format="evalai")
    assert out["result"] == want["result"]
    assert [list(x)[0] for x in out["result"]] == domains + ["entire"]
    assert out["submission_result"] == want["result"][-1]["entire"]
    c.write_text(json.dumps(cands[1:]))
    with pytest.raises(CapscoreError) as e:
        evalai.evaluate(str(r), str(c), "test")
    assert e.value.code == "incomplete_results"


def test_codalab_scoring_program_writes_scores_txt(tmp_path):
    """Issue 25: `python -m capscore.codalab INPUT OUTPUT` reads input/ref and input/res and
    writes output/scores.txt (one `key: value` line per column, splits prefixed)."""
    import subprocess
    import sys

    refs, cands, domains = _nocaps_like(tmp_path)
    (tmp_path / "input" / "ref").mkdir(parents=True)
    (tmp_path / "input" / "res").mkdir(parents=True)
    (tmp_path / "input" / "ref" / "captions_test.json").write_text(json.dumps(refs))
    (tmp_path / "input" / "res" / "captions_test_results.json").write_text(json.dumps(cands))
    run = subprocess.run(
        [sys.executable, "-m", "capscore.codalab", str(tmp_path / "input"), str(tmp_path / "output"),
         "--split-by", "domain", "--metrics", "bleu,cider_d"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    lines = (tmp_path / "output" / "scores.txt").read_text().splitlines()
    got = dict(line.split(": ", 1) for line in lines)
    want = capscore.score(refs, cands, metrics=["bleu", "cider_d"], split_by="domain")
    assert float(got["CIDEr"]) == want["aggregate"]["CIDEr"]
    for d in domains:
        assert float(got[f"{d}_Bleu_4"]) == want["splits"][d]["aggregate"]["Bleu_4"]
    (tmp_path / "input" / "res" / "captions_test_results.json").write_text(json.dumps(cands[1:]))
    bad = subprocess.run([sys.executable, "-m", "capscore.codalab", str(tmp_path / "input"), str(tmp_path / "out2")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "incomplete_results" in bad.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mimalloc's huge pages are a Linux matter")
def test_the_extensions_allocator_keeps_huge_pages_out():
    # Issue 27: mimalloc's arenas without transparent huge pages (first calls waited for the
    # kernel to zero and compact 2 MiB pages); the option is read back from mimalloc.
    from capscore import _capscore

    assert _capscore._allocator_huge_pages == 0


class _Interrupted(Exception):
    """What this test's SIGINT handler raises (a KeyboardInterrupt would end pytest's run)."""


def test_ctrl_c_stops_a_long_call():
    """Ctrl-C (SIGINT) during a long native call is raised within moments, not when the whole
    computation has finished: the call runs on its own thread and the caller's signal handler
    stops it. The same call uninterrupted, timed first, takes several times as long."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run on the main thread only")
    r = random.Random(7)
    words = [f"w{i}" for i in range(500)]
    n = 40_000
    refs = {i: [" ".join(r.choice(words) for _ in range(10)) for _ in range(5)] for i in range(n)}
    cands = {i: " ".join(r.choice(words) for _ in range(10)) for i in range(n)}
    refs_text, cands_text = json.dumps(refs), json.dumps(cands)  # no conversion in the timing
    call = lambda: capscore.score(refs_text, cands_text, metrics=["bleu", "cider_d"], bootstrap=1000)
    t = time.perf_counter()
    whole = call()
    full = time.perf_counter() - t
    assert whole["aggregate"]["CIDEr"] > 0

    def handler(signum, frame):
        raise _Interrupted()

    previous = signal.signal(signal.SIGINT, handler)
    delay = min(0.3, full / 8)
    timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
    try:
        t = time.perf_counter()
        timer.start()
        with pytest.raises(_Interrupted):
            call()
        stopped = time.perf_counter() - t
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert stopped < full / 2, f"interrupted after {stopped:.2f} s; the whole call takes {full:.2f} s"
    # The pool is usable after an interrupted call.
    assert capscore.score({1: ["a dog runs"]}, {1: "a dog runs"}, metrics=["bleu"])["aggregate"]["Bleu_1"] > 0
