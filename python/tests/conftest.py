"""Shared fixtures: the repository's golden files (tests/fixtures) and pycocoevalcap 1.2's own
Python code (the oracle for the SCST scorer and the example script), taken from its pinned
source package at test time: never committed."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
# Cargo's build folder: $CARGO_TARGET_DIR when set (as cargo itself reads it), else target/.
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or (ROOT / "target"))
if not TARGET.is_absolute():
    TARGET = ROOT / TARGET
CACHE = TARGET / "pytest-cache"

SDIST = "pycocoevalcap-1.2.tar.gz"
SDIST_SHA256 = "7857f4d596ca2fa0b1a9a3c2067588a4257556077b7ad614d00b2b7b8f57cdde"
GOLDEN_SETS = ["fakecap_val2017", "edge/combined", "edge/baseline"]


def load_json(path: Path):
    if not path.exists() and Path(str(path) + ".gz").exists():
        path = Path(str(path) + ".gz")
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def golden(name: str) -> dict:
    return load_json(FIXTURES / "coco" / name / "golden.json")


def golden_inputs(name: str):
    d = FIXTURES / "coco" / name
    return load_json(d / "refs.json"), load_json(d / "cands.json")


@pytest.fixture(scope="session")
def pycocoevalcap_src() -> Path:
    """The unpacked pycocoevalcap 1.2 source package (downloaded once, sha256-checked)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / SDIST
    if not tarball.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "pycocoevalcap==1.2", "-d", str(CACHE)],
            check=True,
        )
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert digest == SDIST_SHA256, f"{tarball}: sha256 {digest}, expected {SDIST_SHA256}"
    out = CACHE / "pycocoevalcap-1.2"
    if not (out / "cider" / "cider_scorer.py").exists():
        with tarfile.open(tarball) as t:
            members = [m for m in t.getmembers() if m.name.endswith(".py")]
            t.extractall(CACHE, members=members)
    return out


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def oracle_cider(pycocoevalcap_src):
    return load_module(pycocoevalcap_src / "cider" / "cider_scorer.py", "oracle_cider_scorer")


@pytest.fixture(scope="session")
def oracle_bleu(pycocoevalcap_src):
    return load_module(pycocoevalcap_src / "bleu" / "bleu_scorer.py", "oracle_bleu_scorer")


@pytest.fixture(scope="session")
def cli() -> Path:
    """The release CLI built by the same test command (compared with the Python API)."""
    exe = Path(os.environ["CAPSCORE_BIN"]) if os.environ.get("CAPSCORE_BIN") else TARGET / "release" / "capscore"
    assert exe.exists(), f"{exe} is missing: build it with `cargo build --release` first (or set CAPSCORE_BIN)"
    return exe
