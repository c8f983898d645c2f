"""The keyword tokens PostgreSQL indexes: the tokens SQLite's FTS5 makes of the same text with
``tokenize='porter unicode61 remove_diacritics 2'``, so BM25 ranks the same rows on both engines.

FTS5's rules (https://www.sqlite.org/fts5.html#unicode61_tokenizer, #porter_tokenizer), as reproduced here:

- unicode61: a token is a maximal run of characters of the Unicode categories L*, N* and Co (letters, digits,
  private use); every other character (marks included) separates tokens. Tokens are lower-cased (final sigma
  folded to sigma) and stripped of diacritics (``Café`` -> ``cafe``).
- porter: Martin Porter's stemmer with his later revisions ("bli" -> "ble", "logi" -> "log"), which is what
  SQLite's fts5_porter.c implements and NLTK's ``PorterStemmer(mode=MARTIN_EXTENSIONS)`` reproduces, applied to
  tokens of 3 to 64 UTF-8 bytes. FTS5 stems bytes, so a non-ASCII character counts as consonants there: the
  stemmer sees each of its bytes as the consonant ``q`` (no Porter rule involves ``q``) and the bytes are put
  back after.

The text given is ``entries.fts_text`` (already NFKC-folded, CJK runs written as bigrams by
:func:`agentbase.index.fts.fts_document`), exactly what FTS5 receives. ``tests/storage/test_postgres_tokens.py``
checks the equality against FTS5's own vocabulary on the LoCoMo conversations and a multilingual sample.

Two limits of PostgreSQL's ``tsvector`` that FTS5 lacks (https://www.postgresql.org/docs/current/textsearch-limitations.html):
a lexeme holds at most 2,046 bytes, so a longer token (a long URL, a hex dump) is indexed and searched as its first
2,046 bytes (documents and queries cut alike, so it still matches itself); and a ``tsvector`` holds at most 1 MB,
so an entry with more distinct tokens than fit (about 100,000 distinct words) indexes the first ones that fit and
leaves the rest out of its keyword index (its token count, BM25's ``|D|``, still counts every token).
"""

from __future__ import annotations

import functools
import unicodedata

__all__ = ["document_tokens", "query_lexemes", "tsquery_literal", "tsvector_literal"]

_PORTER_MIN, _PORTER_MAX = 3, 64
_MAX_POSITION = 16383  # PostgreSQL's largest tsvector position (later ones are stored as 16383)
_MAX_POSITIONS = 255  # positions PostgreSQL keeps per lexeme in a tsvector (tf is capped there; BM25 saturates)
_MAX_LEXEME_BYTES = 2046  # PostgreSQL's longest lexeme (MAXSTRLEN - 1 in ts_type.h: "word is too long")
# A tsvector must stay under 1 MB (MAXSTRPOS, 1 << 20 bytes, "string is too long for tsvector"); each lexeme costs
# its bytes, a 4-byte entry, a 2-byte position count and 2 bytes per position, plus alignment: kept under 1,000,000.
_MAX_TSVECTOR_BYTES = 1_000_000


@functools.lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)


def _is_token_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat[0] in "LN" or cat == "Co"


def _stem(token: str) -> str:
    raw = token.encode("utf-8")
    if not _PORTER_MIN <= len(raw) <= _PORTER_MAX:
        return token
    if token.isascii():
        return _stemmer().stem(token, to_lowercase=False)
    masked = "".join(chr(b) if b < 128 else "q" for b in raw)
    stem = _stemmer().stem(masked, to_lowercase=False)
    keep = next((i for i, (a, b) in enumerate(zip(stem, masked)) if a != b), min(len(stem), len(masked)))
    return (raw[:keep] + stem[keep:].encode("ascii")).decode("utf-8", errors="ignore")


@functools.lru_cache(maxsize=65536)
def _fit(token: str) -> str:
    """``token`` cut to at most :data:`_MAX_LEXEME_BYTES` UTF-8 bytes (at a character boundary)."""
    data = token.encode("utf-8")
    if len(data) <= _MAX_LEXEME_BYTES:
        return token
    return data[:_MAX_LEXEME_BYTES].decode("utf-8", errors="ignore")


def _fold_token(raw: str) -> str:
    lowered = raw.lower().replace("\u03c2", "\u03c3")
    folded = "".join(c for c in unicodedata.normalize("NFD", lowered) if unicodedata.category(c) != "Mn")
    return _stem(unicodedata.normalize("NFC", folded))


def document_tokens(text: str) -> list[str]:
    """The tokens of ``text`` in order, as FTS5 ``porter unicode61 remove_diacritics 2`` makes them."""
    out: list[str] = []
    start = None
    for i, ch in enumerate(text):
        if _is_token_char(ch):
            if start is None:
                start = i
        elif start is not None:
            token = _fold_token(text[start:i])
            if token:
                out.append(_fit(token))
            start = None
    if start is not None:
        token = _fold_token(text[start:])
        if token:
            out.append(_fit(token))
    return out


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(tokens: list[str]) -> str:
    """The ``tsvector`` input text of a token list: each distinct token quoted with its 1-based positions, so
    PostgreSQL stores the tokens as given (no parser, no dictionary) and a token's term frequency is its number
    of positions (https://www.postgresql.org/docs/current/datatype-textsearch.html)."""
    positions: dict[str, list[int]] = {}
    size = 0
    for i, token in enumerate(tokens, start=1):
        kept = positions.get(token)
        if kept is None:
            cost = len(token.encode("utf-8")) + 8
            if size + cost > _MAX_TSVECTOR_BYTES:
                continue  # the tsvector is full: a new lexeme is left out (module docstring)
            size += cost
            kept = positions[token] = []
        if len(kept) < _MAX_POSITIONS:
            kept.append(min(i, _MAX_POSITION))
            size += 2
    return " ".join(f"{_quote(t)}:{','.join(map(str, dict.fromkeys(p)))}" for t, p in positions.items())


def query_lexemes(terms: list[str]) -> list[str]:
    """The indexed lexemes of query terms (each term tokenised as FTS5 tokenises a quoted query string; a term
    that yields several tokens, e.g. ``gen-abc``, gives them all), distinct, in order."""
    return list(dict.fromkeys(t for term in terms for t in document_tokens(term)))


def tsquery_literal(lexemes: list[str], op: str = "|") -> str:
    """The ``tsquery`` input text matching any (``op="|"``) or all (``"&"``) of ``lexemes``, each quoted so no
    term can be read as an operator; ``""`` for no lexemes."""
    if op not in ("|", "&"):
        raise ValueError("op must be '|' or '&'")
    return f" {op} ".join(_quote(x) for x in lexemes)
