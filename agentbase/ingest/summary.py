"""Rule-based, deterministic session summaries (no LLM).

The summary is extractive, in up to four lines, most important first, within ``max_chars`` (600 by default)::

    Topics: <top terms by weighted frequency, minus stop words>
    <Speaker> asked|said: <the first substantive user message (3+ content words), leading sentences>; the
        speaker is the message's name, else "User"; "asked" when those sentences hold a question
    Facts: <facts the user stated, highest confidence first>
    Assistant: <the leading sentence of the last assistant reply>

User messages weigh twice as much as assistant messages in the term counts, because the assistant repeats and
pads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ValidationError
from .._letters import LETTERS
from ._text import CJK
from .facts import extract_facts
from .tiers import lead

__all__ = ["session_keywords", "summarize_session"]

_USER_ROLES = frozenset({"user", "human"})
_ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "model"})
# Words of cased scripts (accented Latin, Greek, Cyrillic: "café", "Zoë"), or runs of Chinese characters.
_WORD = re.compile(rf"[{LETTERS}][{LETTERS}'-]*[{LETTERS}]|[{CJK}]+")
_CJK_RUN = re.compile(rf"[{CJK}]+")
_CJK_STOP = re.compile("[的了是在我你他她它们这那个有和就不也都还要会吗呢吧啊很说去到来对把被给从与及或而但为以于上下中想能可些么什怎样]+")
_STOP = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further get got had hadn't has hasn't have haven't having he her here hers
    herself him himself his how i i'd i'll i'm i've if in into is isn't it it's its itself just let's like me
    more most much my myself no nor not now of off on once only or other ought our ours ourselves out over own
    really same she should shouldn't so some such than thank thanks that that's the their theirs them
    themselves then there there's these they they're this those through to too under until up very was wasn't
    we we're were weren't what what's when where which while who whom why will with won't would wouldn't you
    you'd you'll you're you've your yours yourself yourselves yes yeah okay ok hi hello hey please sure great
    good well also would could might may must shall one two way ways lot lots thing things something anything
    everything know think want need make use help tell give take see look find going go new best better many
    much able sounds definitely actually maybe perhaps however additionally example including include includes
    consider important especially specific recommend recommendations suggest suggestions tips idea ideas
    question questions answer time times day days year years here's let feel try keep sure certainly
    absolutely glad happy wonderful awesome nice cool interesting love like enjoy little bit kind sort etc via
    per overall whether every always often usually sometimes around another others different various several
    provide based options option wow haha lol omg hmm hey yep nope gonna wanna awesome amazing totally right
    yours mine""".split()
)


def _role_content(message: Any) -> tuple[str, str]:
    """(role, content) of a tuple, a mapping or an object with ``role``/``content`` attributes."""
    role, content, _ = _role_content_name(message)
    return role, content


def _role_content_name(message: Any) -> tuple[str, str, str | None]:
    """(role, content, speaker name or None) of a ``(role, content[, name])`` tuple, a mapping or an object with
    ``role``/``content`` (and optional ``name``) attributes."""
    if isinstance(message, tuple | list):
        role, content, name = message[0], message[1], message[2] if len(message) > 2 else None
    elif isinstance(message, Mapping):
        role, content, name = message.get("role", ""), message.get("content", ""), message.get("name")
    else:
        role, content = getattr(message, "role", ""), getattr(message, "content", "")
        name = getattr(message, "name", None)
    if not isinstance(role, str) or not isinstance(content, str):
        raise ValidationError("each message needs a str role and a str content")
    return role.strip().lower(), content, name if isinstance(name, str) and name.strip() else None


def _terms(text: str) -> Iterable[str]:
    for token in _WORD.findall(text):
        if not _CJK_RUN.fullmatch(token):  # a word of a cased script
            low = token.lower().strip("'-")
            if len(low) >= 3 and low not in _STOP:
                yield low
        else:
            for piece in _CJK_STOP.split(token):
                if 2 <= len(piece) <= 4:
                    yield piece
                elif len(piece) > 4:
                    yield from (piece[i:i + 2] for i in range(len(piece) - 1))


def _stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def session_keywords(messages: Iterable[Any], top_k: int = 8) -> list[str]:
    """Top terms of a conversation by weighted frequency (user x2, assistant x1), stop words removed.

    Args:
        messages: ``(role, content)`` tuples, mappings or objects with ``role``/``content``.
        top_k: number of terms to return.

    Returns:
        Up to ``top_k`` terms, most frequent first; ties keep first-mention order. Plural and singular count
        together ("dogs" and "dog"), shown in their most frequent form.

    Raises:
        ValidationError: a message has no str role or content.
    """
    scores: dict[str, float] = {}
    first: dict[str, int] = {}
    forms: dict[str, dict[str, int]] = {}
    position = 0
    for message in messages:
        role, content = _role_content(message)
        weight = 2.0 if role in _USER_ROLES else 1.0 if role in _ASSISTANT_ROLES else 0.0
        if not weight:
            continue
        for term in _terms(content):
            key = _stem(term)
            scores[key] = scores.get(key, 0.0) + weight
            first.setdefault(key, position)
            forms.setdefault(key, {})
            forms[key][term] = forms[key].get(term, 0) + 1
            position += 1
    ranked = sorted(scores, key=lambda k: (-scores[k], first[k]))[:top_k]
    return [max(forms[k], key=lambda f: (forms[k][f], -len(f))) for k in ranked]


def summarize_session(messages: Iterable[Any], *, max_chars: int = 600, max_keywords: int = 8) -> str:
    """Summarise a conversation by rules: topics, the first user request, user facts, the last answer.

    Args:
        messages: ordered ``(role, content)`` or ``(role, content, name)`` tuples (also mappings or
            :class:`~agentbase.models.Message` objects). Roles ``user``/``human`` and
            ``assistant``/``ai``/``bot``/``model`` are used; ``system`` and ``tool`` messages are ignored. A
            user message's ``name`` (a named speaker) is the subject of the facts it states ("Ann lives in
            Boston"), else "User".
        max_chars: maximum length of the summary in characters (>= 50).
        max_keywords: number of topic terms.

    Returns:
        Up to four newline-separated lines ("Topics: ...", "User asked: ..." or "Ann said: ...", "Facts: ...",
        "Assistant: ...")
        within ``max_chars``; ``""`` when there is no user or assistant text. Deterministic: the same messages
        always give the same summary.

    Raises:
        ValidationError: a message has no str role or content, or ``max_chars < 50``.
    """
    if max_chars < 50:
        raise ValidationError(f"max_chars must be >= 50, got {max_chars}")
    roles = _USER_ROLES | _ASSISTANT_ROLES
    named = [(r, c, n) for r, c, n in map(_role_content_name, messages) if c.strip() and r in roles]
    turns = [(r, c) for r, c, _ in named]
    if not turns:
        return ""
    lines: list[str] = []
    keywords = session_keywords(turns, max_keywords)
    if keywords:
        lines.append("Topics: " + ", ".join(keywords))
    user_texts = [(c, n) for r, c, n in named if r in _USER_ROLES]
    if user_texts:
        # the first substantive message: skip greetings such as "Hey! How have you been?"
        request, speaker = next(((c, n) for c, n in user_texts if sum(1 for _ in _terms(c)) >= 3), user_texts[0])
        opening = lead(request, 200)
        verb = "asked" if "?" in opening or "？" in opening else "said"  # "User asked: I work at Stripe" misled
        lines.append(f"{speaker or 'User'} {verb}: {opening}")
    facts = []
    for order, (content, name) in enumerate((c, n) for r, c, n in named if r in _USER_ROLES):
        facts.extend((-f.confidence, order, idx, f.text)
                     for idx, f in enumerate(extract_facts(content, subject=name or "User")))
    fact_texts: list[str] = []
    for *_, text in sorted(facts):
        if text not in fact_texts:
            fact_texts.append(text)
    budget = max_chars - sum(len(line) + 1 for line in lines) - len("Facts: ")
    chosen: list[str] = []
    for text in fact_texts:
        if len("; ".join([*chosen, text])) <= min(budget, 260):
            chosen.append(text)
    if chosen:
        lines.append("Facts: " + "; ".join(chosen))
    answers = [c for r, c in turns if r in _ASSISTANT_ROLES]
    room = max_chars - sum(len(line) + 1 for line in lines) - len("Assistant: ")
    if answers and room >= 30:
        lines.append("Assistant: " + lead(answers[-1], min(room, 160)))
    summary = "\n".join(lines)
    return summary if len(summary) <= max_chars else lead(summary, max_chars)
