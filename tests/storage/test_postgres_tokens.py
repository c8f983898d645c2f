"""The PostgreSQL keyword index holds the tokens SQLite's FTS5 makes of the same text (storage/postgres/tokens.py),
checked against FTS5's own vocabulary (the ``fts5vocab`` instance table) on a real SQLite index."""

from __future__ import annotations

import collections
import json
import sqlite3

import pytest

from agentbase.index.fts import fts_document
from agentbase.storage.postgres.tokens import document_tokens, query_lexemes, tsquery_literal, tsvector_literal
from tests.conftest import LOCOMO, require

SAMPLE = ["Café naïve Ångström résumé", "明天讨论部署方案 修复gen-abc后", "Straße ΟΔΥΣΣΕΥΣ İstanbul ǅemal",
          "ｐｒｏｊｅｃｔ２０２４ ﬁle", "don't e-mail foo_bar 3.14 x²", "Ⅷ ⅷ ① tab\tend", "hello\u0301 world",
          "arabic العربية hindi हिन्दी thai ภาษาไทย", "psychology incredibly generously happily archaeology",
          "it's O'Brien's \"quoted\" back\\slash 100% -- AND OR NOT NEAR(x y) col:term *"]


def fts5_tokens(texts: list[str]) -> list[list[str]]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(t, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    conn.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)", list(enumerate(texts, 1)))
    out = collections.defaultdict(list)
    for term, doc in conn.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        out[doc].append(term)
    return [out[i] for i in range(1, len(texts) + 1)]


def test_tokens_equal_fts5_on_a_multilingual_sample():
    docs = [fts_document(t) for t in SAMPLE]
    assert [document_tokens(d) for d in docs] == fts5_tokens(docs)


def test_tokens_equal_fts5_on_the_locomo_conversations():
    data = json.loads(require(LOCOMO).read_text())
    texts = [turn["text"] for conv in data for key, session in conv["conversation"].items()
             if key.startswith("session_") and isinstance(session, list) for turn in session]
    docs = [fts_document(t) for t in texts]
    mismatched = [(d, mine) for d, mine, theirs in zip(docs, map(document_tokens, docs), fts5_tokens(docs))
                  if mine != theirs]
    # FTS5 reads characters added to Unicode after 6.1 (most emoji) as token characters, PostgreSQL's side as
    # separators (docs/scale_out.md); nothing else may differ.
    assert all(any(ord(ch) >= 0x1F900 for ch in d) for d, _ in mismatched), mismatched[:3]
    assert len(texts) > 1000 and len(mismatched) <= len(texts) // 500


def test_literals_quote_every_lexeme():
    assert tsvector_literal(["it's", "a", "it's"]) == "'it''s':1,3 'a':2"
    assert tsquery_literal(["a", "b'c"]) == "'a' | 'b''c'"
    assert tsquery_literal(["a", "b"], "&") == "'a' & 'b'"
    with pytest.raises(ValueError):
        tsquery_literal(["a"], "!")
    assert query_lexemes(["running", "gen-abc", "running"]) == ["run", "gen", "abc"]
