"""Issue 25: the Ray Data example of docs/python.md runs as written, on a local Ray, and gives
the numbers of capscore.score on the union in the Evaluator's canonical order."""

from __future__ import annotations

import json

import ray  # scripts/test-python installs ray[data]: a missing Ray fails, never skips

import capscore

from conftest import golden


def rows(n: int = 60):
    g = golden("fakecap_val2017")
    return [(r["candidate"][0], r["references"]) for r in g["raw"][:n]]


def test_the_ray_example_of_the_docs_runs_and_equals_score():
    metrics = ["bleu", "rouge_l", "cider_d"]
    data = rows()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        # The example as docs/python.md gives it.
        ds = ray.data.from_items(
            [{"image_id": i, "caption": c, "references": r} for i, (c, r) in enumerate(data)]
        ).repartition(7)
        evaluators = ds.map_batches(
            lambda batch: {"evaluator": [capscore.Evaluator(metrics=metrics).update(batch)]},
            batch_format="numpy",
        ).take_all()
        total = capscore.Evaluator(metrics=metrics)
        for row in evaluators:
            total.merge(row["evaluator"])
        got = total.compute()
    finally:
        ray.shutdown()
    assert len(evaluators) > 1, "the example should have sharded the data"
    want = capscore.score(
        {i: r for i, (_, r) in enumerate(data)}, {i: c for i, (c, _) in enumerate(data)}, metrics=metrics
    )
    assert json.dumps(got) == json.dumps(want)
