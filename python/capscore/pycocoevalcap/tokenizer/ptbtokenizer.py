"""pycocoevalcap's ``PTBTokenizer``: Stanford PTBTokenizer 3.4.1 (``-preserveLines
-lowerCase``) plus the punctuation filter, reimplemented natively (no Java)."""

from __future__ import annotations

from typing import Dict, Hashable, List, Mapping, Sequence

from ... import _capscore
from ..._errors import translated

# The tokens pycocoevalcap drops after tokenizing.
PUNCTUATIONS = ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                ".", "?", "!", ",", ":", "-", "--", "...", ";"]


class PTBTokenizer:
    """pycocoevalcap's tokenizer step, native."""

    @translated
    def tokenize(
        self, captions_for_image: Mapping[Hashable, Sequence[Mapping[str, str]]]
    ) -> Dict[Hashable, List[str]]:
        """``{image_id: [{"caption": str, ...}, ...]}`` -> ``{image_id: [tokenized, ...]}``.

        All captions form ONE stream in dict order, as pycocoevalcap sends them to Java (the
        tokenizer looks ahead across captions)."""
        image_id = [k for k, v in captions_for_image.items() for _ in range(len(v))]
        sentences = [c["caption"] for v in captions_for_image.values() for c in v]
        lines = _capscore.tokenize(sentences)
        out: Dict[Hashable, List[str]] = {}
        for k, line in zip(image_id, lines):
            out.setdefault(k, []).append(line)
        return out
