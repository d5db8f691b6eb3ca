"""capscore.CiderD (SCST rewards) against pycocoevalcap's own pure-Python CIDEr-D and BLEU code
with the same fixed document-frequency table."""

from __future__ import annotations

import os
import pickle
import random
import time
from collections import defaultdict

import numpy as np
import pytest

import capscore
from capscore import CapscoreError, CiderD

from conftest import golden


def oracle_table(oracle_cider, ref_lists):
    """Document frequencies and ref_len as pycocoevalcap computes them from references."""
    s = oracle_cider.CiderScorer(n=4, sigma=6.0)
    for refs in ref_lists:
        s.cook_append(None, refs)
    s.compute_doc_freq()
    return dict(s.document_frequency), len(s.crefs)


def oracle_cider_d(oracle_cider, table, ref_len, cands, ref_lists):
    """pycocoevalcap's compute_cider with a fixed table (self-critical.pytorch's CiderD)."""

    class Fixed(oracle_cider.CiderScorer):
        @property
        def ref_len(self):
            return self._fixed

        @ref_len.setter
        def ref_len(self, _):  # compute_cider's ln(len(crefs)) is replaced by the table's
            pass

    s = Fixed(n=4, sigma=6.0)
    s._fixed = np.log(float(ref_len))
    for c, r in zip(cands, ref_lists):
        s.cook_append(c, r)
    s.document_frequency = defaultdict(float, table)
    return np.array(s.compute_cider())


def oracle_bleu4(oracle_bleu, cands, ref_lists):
    b = oracle_bleu.BleuScorer(n=4)
    for c, r in zip(cands, ref_lists):
        b += (c, r)
    _, scores = b.compute_score(option="closest", verbose=0)
    return np.array(scores[3])


def batch(n_images=50, per_image=6, seed=1):
    g = golden("fakecap_val2017")
    rows = g["tokenized"]
    rng = random.Random(seed)
    images = rows[:n_images]
    words = sorted({w for r in rows for c in r["references"] + r["candidate"] for w in c.split()})
    cands, index = [], []
    for k, im in enumerate(images):
        for j in range(per_image):
            if j == 0:
                c = im["candidate"][0]
            elif j == 1:
                c = im["references"][0]
            else:
                c = " ".join(rng.choice(words) for _ in range(rng.randint(0, 14)))
            cands.append(c)
            index.append(k)
    return rows, images, cands, index


def test_text_rewards_equal_the_oracle(oracle_cider, oracle_bleu):
    rows, images, cands, index = batch()
    df_refs = {r["image_id"]: r["references"] for r in rows}
    table, ref_len = oracle_table(oracle_cider, list(df_refs.values()))
    scorer = CiderD(df=df_refs, tokenize=False)
    assert scorer.ln_ref_len == np.log(float(ref_len))
    scorer.set_references({im["image_id"]: im["references"] for im in images})
    ids = [images[k]["image_id"] for k in index]
    cider, bleu = scorer.score(cands, ids, bleu4=True)
    ref_lists = [images[k]["references"] for k in index]
    want = oracle_cider_d(oracle_cider, table, ref_len, cands, ref_lists)
    assert cider.dtype == np.float64 and cider.shape == (len(cands),)
    assert np.max(np.abs(cider - want)) <= 1e-12
    assert np.max(np.abs(bleu - oracle_bleu4(oracle_bleu, cands, ref_lists))) <= 1e-12
    assert (cider > 0).sum() > len(cands) // 3  # not a degenerate test


def test_pickle_table_and_token_ids_equal_the_oracle(oracle_cider, tmp_path):
    rows, images, cands, index = batch(seed=2)
    vocab = {}
    for r in rows:
        for c in r["references"] + r["candidate"]:
            for w in c.split():
                vocab.setdefault(w, len(vocab) + 1)  # 0 is <eos>

    def ids_text(sentence):
        return " ".join(str(vocab[w]) for w in sentence.split()) + " 0"

    train = [[ids_text(c) for c in r["references"]] for r in rows]
    table, ref_len = oracle_table(oracle_cider, train)
    path = tmp_path / "coco-train-idxs.p"
    with open(path, "wb") as f:
        pickle.dump({"document_frequency": table, "ref_len": ref_len}, f)
    scorer = CiderD(df=str(path))
    refs_ids = [[ids_text(c) for c in im["references"]] for im in images]
    scorer.set_references(refs_ids)

    rng = np.random.default_rng(3)
    width = 18
    arr = rng.integers(1, len(vocab) + 1, size=(len(cands), width), dtype=np.int64)
    texts = []
    for b, c in enumerate(cands):
        toks = [vocab[w] for w in c.split()][: width - 1]
        arr[b, : len(toks)] = toks
        if b % 7 == 3:  # no EOS: the whole row is the sentence
            texts.append(" ".join(str(t) for t in arr[b]))
            continue
        arr[b, len(toks)] = 0  # EOS, then junk that must be ignored
        texts.append(" ".join(str(t) for t in arr[b, : len(toks) + 1]))
    got = scorer.score_ids(arr, index, eos_id=0)
    want = oracle_cider_d(oracle_cider, table, ref_len, texts, [refs_ids[k] for k in index])
    assert np.max(np.abs(got - want)) <= 1e-12
    # int32 input (as in the issue) gives the same.
    assert np.array_equal(scorer.score_ids(arr.astype(np.int32), np.array(index)), got)
    # The same table given as a loaded dict.
    same = CiderD(df={"document_frequency": table, "ref_len": ref_len})
    same.set_references(refs_ids)
    assert np.array_equal(same.score_ids(arr, index), got)


def test_text_is_ptb_tokenized_by_default(oracle_cider):
    g = golden("fakecap_val2017")
    raw = g["raw"][:30]
    refs = {r["image_id"]: r["references"] for r in raw}
    scorer = CiderD(df=refs)
    scorer.set_references(refs)
    cands = [r["candidate"][0].upper() + "." for r in raw]
    got = scorer.score(cands, [r["image_id"] for r in raw])
    tok_refs = capscore.tokenize([c for r in raw for c in r["references"]])
    it = iter(tok_refs)
    ref_lists = [[next(it) for _ in r["references"]] for r in raw]
    table, ref_len = oracle_table(oracle_cider, ref_lists)
    want = oracle_cider_d(oracle_cider, table, ref_len, capscore.tokenize(cands), ref_lists)
    assert np.max(np.abs(got - want)) <= 1e-12


def test_compute_score_and_errors():
    refs = {1: ["a dog runs", "a dog is running"], 2: ["a cat sleeps"]}
    scorer = CiderD(df=refs, tokenize=False)
    mean, scores = scorer.compute_score(refs, [{"image_id": 1, "caption": ["a dog runs"]},
                                                {"image_id": 2, "caption": ["a cat"]}])
    assert scores.shape == (2,) and mean == np.mean(scores)
    with pytest.raises(CapscoreError) as e:
        scorer.score(["a"], [3])
    assert e.value.code == "unknown_image_id"
    with pytest.raises(CapscoreError):
        scorer.score_ids(np.zeros((2, 3), dtype=np.int64), [0])
    with pytest.raises(CapscoreError):
        CiderD(df=42)
    with pytest.raises(CapscoreError) as e:
        CiderD(df="/nonexistent.p")
    assert e.value.code == "file_not_found"


class _RunsCode:
    """A pickle that calls open(marker, "w") when loaded: what a hostile df file looks like."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_df_pickles_load_through_a_restricted_unpickler(tmp_path):
    """Issue 29: a df pickle is read without running code; self-critical's shape still loads
    (defaultdict of tuples, every protocol, numbers as int or float)."""
    table = defaultdict(float)
    table[("a",)] = 2.0
    table[("a", "dog")] = 1
    for proto in (0, 2, pickle.HIGHEST_PROTOCOL):
        path = tmp_path / f"ok{proto}.p"
        with open(path, "wb") as f:
            pickle.dump({"document_frequency": table, "ref_len": 3.0}, f, protocol=proto)
        scorer = CiderD(df=str(path))
        assert scorer.ln_ref_len == pytest.approx(np.log(3.0))
    marker = tmp_path / "ran"
    hostile = tmp_path / "hostile.p"
    with open(hostile, "wb") as f:
        pickle.dump({"document_frequency": {("a",): _RunsCode(str(marker))}, "ref_len": 1}, f)
    with pytest.raises(CapscoreError) as e:
        CiderD(df=str(hostile))
    assert e.value.code == "invalid_format"
    assert "builtins.open" in str(e.value) or "io.open" in str(e.value)
    assert not marker.exists(), "the pickle ran code"
    junk = tmp_path / "junk.p"
    junk.write_bytes(b"not a pickle at all")
    with pytest.raises(CapscoreError, match="not a readable pickle"):
        CiderD(df=str(junk))


def test_wrong_types_are_capscore_errors_and_type_errors():
    """Issue 29: the public calls raise CapscoreError only; a wrong type is also a TypeError
    (what pycocoevalcap users catch)."""
    from capscore import CapscoreTypeError
    from capscore.pycocoevalcap.cider.cider import Cider
    from capscore.pycocoevalcap.bleu.bleu import Bleu

    for call in (
        lambda: Cider().compute_score({1: ["a dog"]}, {1: [5]}),
        lambda: Bleu(4).compute_score({1: ["a dog"]}, {1: [b"a dog"]}),
        lambda: capscore.tokenize([1, 2]),
        lambda: CiderD(df={1: ["a dog"]}).score(["a dog"], [object()]),
    ):
        with pytest.raises(CapscoreError) as e:
            call()
        assert isinstance(e.value, (CapscoreTypeError, CapscoreError))
    with pytest.raises(TypeError):
        Cider().compute_score({1: ["a dog"]}, {1: [5]})
    with pytest.raises(CapscoreError):
        capscore.score({1: ["a dog"]}, {1: "a dog"}, threads=2**70)


def test_a_refused_set_references_keeps_the_previous_images():
    """A refused `set_references` leaves the scorer as it was: its ids still name the images
    whose references it holds (the ids used to change before the references were checked, so
    each candidate was scored against another image's references)."""
    scorer = CiderD(df={0: ["a dog runs"], 1: ["a red car"], 2: ["x"]}, tokenize=False)
    scorer.set_references({"dog": ["a dog runs"], "car": ["a red car"]})
    before = scorer.score(["a dog runs", "a red car"], ["dog", "car"])
    for bad in (
        {"car": ["a red car"], "dog": ["a dog runs"], "bad": [None]},
        {"car": ["a red car"], "dog": ["a dog runs"], "bad": []},
        {"car": ["a red car"], "dog": "a dog runs"},
    ):
        with pytest.raises(CapscoreError):
            scorer.set_references(bad)
        after = scorer.score(["a dog runs", "a red car"], ["dog", "car"])
        assert after.tolist() == before.tolist()
    assert before[0] > 1 and before[1] > 1


def test_a_string_is_not_a_list_of_references():
    """A bare string where a list of references belongs is refused (`list("a dog")` would
    make one-character references and rewards of 0)."""
    with pytest.raises(CapscoreError) as e:
        CiderD(df={0: "a dog runs"})
    assert e.value.code == "invalid_format" and "bare string" in str(e.value)
    scorer = CiderD(df={0: ["a dog runs"]})
    for refs in (["a dog runs", "a red car"], {0: "a dog runs"}, {0: [b"a dog"]}):
        with pytest.raises(CapscoreError) as e:
            scorer.set_references(refs)
        assert e.value.code == "invalid_format"


def test_a_df_key_must_be_words(tmp_path):
    """An n-gram key of anything but words (strings, or integers from token ids) is refused
    before the key is turned into text: a nested tuple's text can be far longer than its
    pickle."""
    nested = (("a", "dog"), ("a",))
    path = tmp_path / "nested.p"
    with open(path, "wb") as f:
        pickle.dump({"document_frequency": {nested: 1}, "ref_len": 10}, f)
    for df in (str(path), {"document_frequency": {nested: 1}, "ref_len": 10},
               {"document_frequency": {("a", 1.5): 1}, "ref_len": 10},
               {"document_frequency": {("a",): "x"}, "ref_len": 10}):
        with pytest.raises(CapscoreError) as e:
            CiderD(df=df)
        assert e.value.code == "invalid_format"
    # Words given as integers (tables built from token ids) still load.
    assert CiderD(df={"document_frequency": {(1, 2): 1, (3,): 2}, "ref_len": 10}).ln_ref_len > 0


def test_score_ids_takes_integers_only():
    """A float, bool or non-integer object array of ids is refused with a coded error, not
    truncated; integer arrays of any width and lists of ints score the same."""
    refs = [["1 2 3 0", "1 2 4 0"], ["5 6 0"]]
    scorer = CiderD(df={i: r for i, r in enumerate(refs)}, tokenize=False)
    scorer.set_references(refs)
    arr = np.array([[1, 2, 3, 0], [5, 6, 0, 9]], dtype=np.int64)
    got = scorer.score_ids(arr, [0, 1])
    assert np.array_equal(scorer.score_ids(arr.astype(np.uint16), np.array([0, 1])), got)
    assert np.array_equal(scorer.score_ids(arr.tolist(), [0, 1]), got)
    assert np.array_equal(scorer.score_ids(arr.astype(object), [0, 1]), got)
    for bad in (arr + 0.5, arr.astype(bool), np.array([[1, "a"], [2, 3]], dtype=object),
                np.array([[2**64 - 1, 0]], dtype=np.uint64)):
        with pytest.raises(CapscoreError) as e:
            scorer.score_ids(bad, [0] * len(bad))
        assert e.value.code == "invalid_format" and isinstance(e.value, TypeError)
    with pytest.raises(CapscoreError):
        scorer.score_ids(arr, [0.5, 1])
    with pytest.raises(CapscoreError):
        scorer.score_ids(arr, [0, 1], eos_id=0.5)


def test_concurrent_set_references_and_score_stay_consistent():
    """Threads that score while another replaces the references get, per call, the scores of
    one whole reference set (never a mix, never a borrow error)."""
    import threading

    a = {i: [f"a dog number {i} runs", "a dog runs"] for i in range(40)}
    b = {i: [f"a cat number {i} sleeps", "a cat sleeps"] for i in range(40)}
    scorer = CiderD(df={**{("a", i): v for i, v in a.items()}, **{("b", i): v for i, v in b.items()}},
                    tokenize=False)
    cands = [f"a dog number {i} runs" for i in range(40)]
    ids = list(range(40))
    scorer.set_references(a)
    want_a = scorer.score(cands, ids)
    scorer.set_references(b)
    want_b = scorer.score(cands, ids)
    assert not np.array_equal(want_a, want_b)
    errors, seen = [], []
    stop = threading.Event()

    def setter():
        for k in range(300):
            scorer.set_references(a if k % 2 else b)
        stop.set()

    def reader():
        try:
            while not stop.is_set():
                got = scorer.score(cands, ids)
                seen.append(np.array_equal(got, want_a) or np.array_equal(got, want_b))
        except BaseException as e:  # noqa: BLE001 - any error fails the test
            errors.append(repr(e))

    threads = [threading.Thread(target=setter)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and seen and all(seen)


def test_ids_and_positions_edge_cases():
    """Empty batches score to empty arrays; a 0-d integer array is an eos_id; positions given
    to `score` are integers too (0.7 is refused, not truncated)."""
    refs = [["1 2 3 0", "1 2 4 0"], ["5 6 0"]]
    scorer = CiderD(df={i: r for i, r in enumerate(refs)}, tokenize=False)
    scorer.set_references(refs)
    assert scorer.score_ids(np.zeros((0, 4), dtype=np.int64), []).shape == (0,)
    arr = np.array([[1, 2, 3, 0]], dtype=np.int64)
    assert np.array_equal(scorer.score_ids(arr, [0], eos_id=np.array(0)), scorer.score_ids(arr, [0]))
    with pytest.raises(CapscoreError) as e:
        scorer.score(["1 2 3 0"], [0.7])
    assert e.value.code == "invalid_format"
    assert scorer.score(["1 2 3 0"], [np.int64(0)]).shape == (1,)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_child_forked_during_a_call_gets_a_working_scorer():
    """A child forked while another thread of the parent held a scorer's lock (was in a call)
    does not hang on it: the scorer asks for set_references again, then works."""
    import threading

    refs = {1: ["a dog runs", "a dog is running"], 2: ["a cat sleeps"]}
    scorer = CiderD(df=refs, tokenize=False)
    scorer.set_references(refs)
    held, release = threading.Event(), threading.Event()

    def in_a_call():
        with scorer._lock:  # what a long set_references / score holds
            held.set()
            release.wait(10)

    t = threading.Thread(target=in_a_call)
    t.start()
    held.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 on success
        code = 1
        try:
            try:
                scorer.score(["a dog runs"], [1])
                code = 2  # scored with possibly half-replaced references
            except CapscoreError:
                scorer.set_references(refs)
                code = 0 if scorer.score(["a dog runs"], [1]).shape == (1,) else 3
        finally:
            os._exit(code)
    release.set()
    t.join()
    deadline = time.time() + 30
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung on the scorer's lock")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    # The parent's scorer is unaffected.
    assert scorer.score(["a dog runs"], [1]).shape == (1,)
