"""EvalAI's scoring program, ready to use.

EvalAI calls ``evaluate(test_annotation_file, user_submission_file, phase_codename, **kwargs)``
in a challenge's evaluation script and shows what it returns. Put this in the challenge's
``evaluation_script/main.py``::

    from capscore.evalai import evaluate  # noqa: F401  (EvalAI calls it)

or wrap it to choose the split field and metrics per phase::

    import capscore.evalai

    def evaluate(test_annotation_file, user_submission_file, phase_codename, **kwargs):
        return capscore.evalai.evaluate(
            test_annotation_file, user_submission_file, phase_codename,
            split_by="domain", metrics=["bleu", "meteor", "rouge_l", "cider_d"], **kwargs)

The test annotation file is a COCO captions file whose ``images[]`` may carry a label field
(nocaps: ``domain``); the submission is a COCO results file. Submissions are strict by
default: every test image needs a result, else the submission fails with
``incomplete_results`` (a ``CapscoreError``, which EvalAI reports to the participant).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from . import score

#: The label field of ``images[]`` to split by when ``split_by`` is not given (``None``: only
#: the whole set, reported as ``entire``).
SPLIT_BY: Optional[str] = None


def evaluate(
    test_annotation_file: Any,
    user_submission_file: Any,
    phase_codename: str,
    *,
    split_by: Optional[str] = None,
    metrics: Optional[Sequence[str]] = None,
    strict: bool = True,
    **kwargs: Any,
) -> Dict[str, Any]:
    """Scores a submission as EvalAI expects: ``{"result": [{"<split>": {"<metric>": value}},
    ..., {"entire": {...}}], "submission_result": {...}}``, where ``submission_result`` is the
    whole set's scores (what the participant sees). ``phase_codename`` and EvalAI's other
    keyword arguments (``submission_metadata``, ...) are accepted and do not change the
    numbers."""
    del phase_codename, kwargs
    out = score(
        test_annotation_file,
        user_submission_file,
        metrics=metrics,
        split_by=split_by if split_by is not None else SPLIT_BY,
        strict=strict,
        format="evalai",
    )
    result = out["result"]
    entire = next((r["entire"] for r in result if "entire" in r), {})
    return {"result": result, "submission_result": entire}
