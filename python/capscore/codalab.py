"""CodaLab / Codabench scoring program: ``python -m capscore.codalab INPUT OUTPUT``.

The platform runs the scoring program with an input folder holding ``ref/`` (the reference
data: one COCO captions annotation file) and ``res/`` (the submission: one COCO results file),
and reads ``OUTPUT/scores.txt``, one ``key: value`` line per leaderboard column. This program
scores the submission with capscore (strict: every reference image needs a result) and writes
the whole set's scores under pycocoevalcap's keys (``Bleu_4: 0.3151...``) and, with
``--split-by FIELD`` (or ``CAPSCORE_SPLIT_BY``), each split's as ``<split>_<key>`` (nocaps:
``in-domain_CIDEr``). ``OUTPUT/scores.json`` holds the full report.

A competition bundle's ``scoring_program/metadata`` is then just::

    command: python3 -m capscore.codalab $input $output
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import score
from ._errors import CapscoreError


def _one_file(folder: Path, what: str) -> Path:
    """The one JSON file (or .json.gz) in a folder (searched one level down too)."""
    if not folder.is_dir():
        raise CapscoreError(f"{what}: no folder {folder}", "file_not_found")
    found = sorted(
        p for p in list(folder.glob("*")) + list(folder.glob("*/*"))
        if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz"))
        and p.name != "metadata"
    )
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        raise CapscoreError(
            f"{what}: expected one .json file in {folder}, found {len(found)} ({names})", "invalid_format"
        )
    return found[0]


def scores_lines(report: Dict) -> List[str]:
    """``key: value`` lines: the whole set's aggregate, then each split's keys prefixed."""
    lines = [f"{k}: {v!r}" for k, v in report["aggregate"].items()]
    for split, s in (report.get("splits") or {}).items():
        lines += [f"{split}_{k}: {v!r}" for k, v in s["aggregate"].items()]
    return lines


def run(input_dir: os.PathLike, output_dir: os.PathLike, split_by: Optional[str] = None,
        metrics: Optional[Sequence[str]] = None) -> Dict:
    """Scores ``input_dir/res`` against ``input_dir/ref`` and writes ``output_dir/scores.txt``
    and ``scores.json``; returns the report."""
    inp, out = Path(input_dir), Path(output_dir)
    ref = _one_file(inp / "ref", "reference data")
    res = _one_file(inp / "res", "submission")
    report = score(str(ref), str(res), metrics=metrics, split_by=split_by, strict=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.txt").write_text("\n".join(scores_lines(report)) + "\n", encoding="utf-8")
    (out / "scores.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m capscore.codalab", description=__doc__.split("\n\n")[0])
    p.add_argument("input", help="the input folder (with ref/ and res/)")
    p.add_argument("output", help="the output folder (scores.txt, scores.json)")
    p.add_argument("--split-by", default=os.environ.get("CAPSCORE_SPLIT_BY"),
                   help="a label field of the references' images[] (nocaps: domain)")
    p.add_argument("--metrics", default=os.environ.get("CAPSCORE_METRICS"),
                   help="comma-separated metrics (default: bleu, meteor, rouge_l, cider_d)")
    a = p.parse_args(argv)
    try:
        run(a.input, a.output, split_by=a.split_by,
            metrics=a.metrics.split(",") if a.metrics else None)
    except CapscoreError as e:
        print(f"capscore: error[{e.code}]: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
