"""Character classes of the letters of cased scripts, for regular expressions (``re`` has no ``\\p{Lu}``).

Shared by the regex entity extractor (names: ``ner/_patterns.py``) and the session summary's topic words
(``ingest/summary.py``).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["LETTERS", "UPPER"]


def _letter_class(categories: tuple[str, ...]) -> str:
    """A character-class body holding every Basic Multilingual Plane character of these Unicode general
    categories, as ranges (``re`` has no ``\\p{Lu}``): Latin with accents, Greek, Cyrillic, and so on."""
    ranges: list[list[int]] = []
    for code in range(0x10000):
        if unicodedata.category(chr(code)) in categories:
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


#: Upper-case (and title-case) letters, and the letters of cased scripts (upper, lower, title case) with the
#: combining marks that decomposed text writes after them ("Zoe" + U+0308, as macOS file names and some keyboards
#: give it): names are words of cased scripts ("Zoë", "José Müller", "Łukasz", "Ólafur"); Chinese and other
#: uncased scripts are read by the CJK extractor (``_cjk.py``), so "José去了北京" ends the name at "José".
UPPER = _letter_class(("Lu", "Lt"))
LETTERS = _letter_class(("Lu", "Ll", "Lt", "Mn"))
