"""Names used to address someone ("Thanks, Caroline!", "Hey Mel!") rather than to talk about them.

In a conversation between named people, most turns address the other speaker by name. Tagging those names would
give nearly every turn of the conversation both speakers' entity tags, so a question about one of them ("What did
Caroline research?") could not prefer her own turns and the turns about her over turns merely addressed to her.
A participant's name in a vocative position is therefore not an entity of the turn (sessions.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .base import Entity

__all__ = ["drop_vocatives", "is_vocative"]

# What may come right before a vocative name: nothing, a clause or sentence boundary, or a greeting or
# interjection ("Hey Caroline", "Thanks Mel", "Wow, Caroline").
_BEFORE = re.compile(
    r"(?:^|[,.!?;:…\-–—(]|\b(?:hey|hi|hello|hiya|thanks|thank you|bye|goodbye|congrats|congratulations|wow|oh|"
    r"yo|dear|sorry|ok|okay|yes|yeah|yep|no|nope|haha|lol|aww?|great|cool|nice|awesome|welcome|morning|"
    r"night|see you|love you|miss you|go|sure|right))\s*$",
    re.IGNORECASE)
# What may come right after it: a clause or sentence boundary, or the end of the text.
_AFTER = re.compile(r"^\s*(?:[,.!?;:…)]|$)")


def is_vocative(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` stands where a name addressing someone stands: after nothing, a boundary or a
    greeting, and before a boundary ("Wow, Caroline, that's gorgeous!", "Hey Mel!", "Caroline, congrats!").

    Args:
        text: the message.
        start: the name's first character offset.
        end: the offset after its last character.

    Returns:
        True for a vocative position; "I met Caroline at the park" and "Caroline's painting" give False.
    """
    return bool(_AFTER.match(text[end:end + 8])) and bool(_BEFORE.search(text[max(0, start - 40):start]))


def drop_vocatives(text: str, entities: Iterable[Entity], participants: Iterable[str]) -> list[Entity]:
    """``entities`` without the mentions of a participant's name (or its first word) in a vocative position.

    Args:
        text: the text the entities were found in (their offsets index it).
        entities: entities of ``text``.
        participants: names of the conversation's speakers (message ``name`` values); compared case-insensitively.

    Returns:
        The entities kept, in their order. Names of non-participants are always kept ("Thanks, Paris!" is rare,
        "Paris, France." is not).
    """
    names = {p.casefold() for p in participants if p}
    names |= {n.split()[0] for n in names if " " in n}
    return [e for e in entities
            if not (e.text.casefold() in names and is_vocative(text, e.start, e.end))]
