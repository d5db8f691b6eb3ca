"""pycocoevalcap 1.2's modules and classes, computed by capscore: same constructor arguments,
``compute_score(gts, res)`` signatures, return values and types; no Java.

Switch a script with one changed import (``from capscore.pycocoevalcap.eval import
COCOEvalCap``), or call ``capscore.install_pycocoevalcap_alias()`` so that ``import
pycocoevalcap...`` itself loads these modules.

What differs on purpose: a bad input raises ``capscore.CapscoreError`` (a ``ValueError`` with
a stable ``code``) where pycocoevalcap fails an ``assert`` or crashes inside Java, and
``COCOEvalCap`` attaches each per-image SPICE result to its own image (pycocoevalcap attaches
them in sorted-id order to the images in insertion order).
"""

__author__ = "capscore"
