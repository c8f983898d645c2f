"""Zero-LLM query decomposition: keywords, noun phrases and sub-queries (ARCHITECTURE.md section 6, step 3).

Tokens are runs of letters/digits that may contain inner ``- _ . ' ’`` (so ``ABC-123``, ``v1.2``,
``user_id`` and ``state-of-the-art`` stay one token; a trailing possessive ``'s`` is dropped), and runs of
CJK characters. There is no Chinese word segmenter: a CJK run is cut at Chinese function words (的, 了,
什么, 我们 ...) and time words (昨天, 上周 ...), and the pieces are the keywords: "我昨天买了什么书" -> 昨天,
买, 书.

The English stop-word list is the classic one shipped with NLTK and Snowball (~180 words, including
contractions) plus a few words that only pad questions ("tell", "remember", "please" ...). Keywords keep their
original spelling ("Alice", "ABC-123") and are de-duplicated case-insensitively, first spelling wins.
"""

from __future__ import annotations

import re

__all__ = ["EN_STOPWORDS", "ZH_STOPWORDS", "keywords", "noun_phrases", "sub_queries"]

#: English stop words: the NLTK/Snowball list plus question padding. Lower case; apostrophes are ASCII.
EN_STOPWORDS: frozenset[str] = frozenset("""
a about above after again against ain all am an and any are aren't as at be because been before being below
between both but by can couldn't could did didn't do does doesn't doing don't down during each few for from
further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
his how how's i i'd i'll i'm i've if in into is isn't it it'd it'll it's its itself just let's me more most
mustn't my myself no nor not now of off on once only or other ought our ours ourselves out over own same
shan't she she'd she'll she's should should've shouldn't so some such than that that'll that's the their
theirs them themselves then there there's these they they'd they'll they're they've this those through to too
under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
which while who who's whom why why's will with won't would wouldn't you you'd you'll you're you've your yours
yourself yourselves also any anything ever get got many much please really remember remind recall tell thanks
thank know
""".split())

#: Chinese function words: particles, pronouns, question words and common function compounds. Single
#: characters are limited to those that rarely occur inside content words (not 会, 有, 都: 会议, 有趣, 成都).
ZH_STOPWORDS: frozenset[str] = frozenset("""
的 了 吗 呢 吧 啊 呀 么 嘛 哦 我 你 他 她 它 们 是 在 和 与 跟 或 也 把 被 给 谁 哪 几 这 那
我们 你们 他们 她们 咱们 或者 请问 什么 怎么 怎样 怎么样 为什么 哪里 哪儿 哪个 哪些 多少 这个 那个
这些 那些 这里 那里 一个 一些 一下 没有 可以 可能 已经 曾经 告诉 知道 记得 关于 因为 所以 但是
如果 还是 是否 是不是 就是 现在 正在 所有 还有 不是 之前 之后 以前 以后 时候 的话 一共 总共
""".split())

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+(?:['’\-_./][^\W_{_CJK}]+)*)")
#: Chinese time words cut out of a CJK run as keywords of their own (昨天买 -> 昨天, 买).
_ZH_TIME_WORDS = frozenset("大前天 前天 昨天 今天 明天 后天 去年 今年 明年 前年 上周 下周 本周 这周 "
                           "上个月 下个月 这个月 本月 最近".split())
_ZH_CUT = re.compile("|".join(sorted(ZH_STOPWORDS | _ZH_TIME_WORDS, key=len, reverse=True)))
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_BREAK = re.compile(r"[^\s]")  # any non-space character between two tokens (punctuation) ends a phrase
_SPLIT = re.compile(r"\s+and\s+|[,;，；、]|和", re.IGNORECASE)
_EDGE = " \t\n?.!？。！\"'“”"


def _pieces(query: str) -> list[str | None]:
    """Content tokens in order, with ``None`` wherever a stop word or punctuation breaks the text."""
    out: list[str | None] = []
    last_end = 0
    for m in _TOKEN.finditer(query):
        if _BREAK.search(query, last_end, m.start()):
            out.append(None)
        last_end = m.end()
        if m["word"]:
            word = _POSSESSIVE.sub("", m["word"])
            norm = word.lower().replace("’", "'")
            keep = norm not in EN_STOPWORDS and (len(norm) > 1 or norm.isdigit())
            out.append(word if keep else None)
            continue
        run, pos = m["cjk"], 0
        for cut in _ZH_CUT.finditer(run):
            if cut.start() > pos:
                out.append(run[pos:cut.start()])
            out.append(cut[0] if cut[0] in _ZH_TIME_WORDS else None)
            pos = cut.end()
        if pos < len(run):
            out.append(run[pos:])
    return out


def keywords(query: str) -> list[str]:
    """Return the stop-word-free keywords of ``query`` in order of first appearance.

    Args:
        query: any English, Chinese or mixed text.

    Returns:
        Keywords with their original spelling, de-duplicated case-insensitively. Numbers ("3", "2023", "12.5")
        and identifiers ("ABC-123", "v1.2") are kept whole; single Latin letters are dropped. Example:
        ``keywords("What is the status of ticket ABC-123?") == ["status", "ticket", "ABC-123"]``.
    """
    seen: set[str] = set()
    out: list[str] = []
    for piece in _pieces(query):
        if piece and piece.casefold() not in seen:
            seen.add(piece.casefold())
            out.append(piece)
    return out


def noun_phrases(query: str) -> list[str]:
    """Return the maximal runs of consecutive non-stop-word tokens (a rule-based stand-in for noun phrases).

    A stop word or punctuation ends a run; tokens inside a run are joined by one space. No part-of-speech
    tagging is done, so a run may include verbs ("Alice say").

    Args:
        query: any English, Chinese or mixed text.

    Returns:
        Phrases in order, de-duplicated case-insensitively, e.g. ``noun_phrases("What did Alice say about the
        new API design?") == ["Alice say", "new API design"]``.
    """
    phrases: list[str] = []
    run: list[str] = []
    for piece in [*_pieces(query), None]:
        if piece is not None:
            run.append(piece)
        elif run:
            phrase = " ".join(run)
            if phrase.casefold() not in {p.casefold() for p in phrases}:
                phrases.append(phrase)
            run = []
    return phrases


def sub_queries(query: str, max_queries: int = 4) -> list[str]:
    """Split a query into at most ``max_queries`` retrieval queries without an LLM.

    Order: the original query (whitespace-normalised); then its parts split on " and ", commas, semicolons,
    "、" and "和" that have at least two keywords each; then the keyword-only string. Duplicates (ignoring
    case) are dropped. When there are too many parts, the keyword string still takes the last slot, because it
    is the one that suits BM25 best.

    Args:
        query: the user's query.
        max_queries: upper bound on the number of returned strings (>= 1).

    Returns:
        1 to ``max_queries`` strings, the original first; an empty list for a blank query. Example:
        ``sub_queries("What did Alice say about the budget and when is the launch party?")`` gives the query,
        "What did Alice say about the budget", "when is the launch party" and "Alice say budget launch party".
    """
    text = " ".join(query.split())
    if not text:
        return []
    parts = [p.strip(_EDGE) for p in _SPLIT.split(text)]
    parts = [p for p in parts if len(keywords(p)) >= 2] if len(parts) > 1 else []
    kw = " ".join(keywords(text))
    out: list[str] = []
    for candidate in [text, *parts]:
        if candidate and candidate.casefold() not in {o.casefold() for o in out}:
            out.append(candidate)
    if kw and kw.casefold() not in {o.casefold() for o in out}:
        out = out[: max(1, max_queries - 1)] + [kw]
    return out[:max_queries]
