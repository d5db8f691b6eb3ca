"""``import pycocoevalcap...`` -> ``capscore.pycocoevalcap...`` (opt-in)."""

from __future__ import annotations

import importlib
import sys

_MODULES = [
    "",
    ".eval",
    ".tokenizer",
    ".tokenizer.ptbtokenizer",
    ".bleu",
    ".bleu.bleu",
    ".meteor",
    ".meteor.meteor",
    ".rouge",
    ".rouge.rouge",
    ".cider",
    ".cider.cider",
    ".spice",
    ".spice.spice",
]


def install() -> None:
    """Registers every ``pycocoevalcap`` module name as capscore's module of the same path
    (replacing an already imported pycocoevalcap for code that imports it afterwards)."""
    for suffix in _MODULES:
        sys.modules["pycocoevalcap" + suffix] = importlib.import_module(
            "capscore.pycocoevalcap" + suffix
        )
