"""``benchmarks.locomo --sessions N``: a conversation cut to its first sessions keeps exactly the QA items whose
evidence all lies in them."""

from __future__ import annotations

from datetime import datetime, timezone

from agentbase.datasets import Conversation, SessionData
from benchmarks.locomo import first_sessions


def test_first_sessions_keeps_the_items_answerable_from_them():
    day = datetime(2023, 5, 1, tzinfo=timezone.utc)
    sessions = [SessionData(f"c:session_{i}", day, [{"role": "user", "content": f"turn {i}"}]) for i in (1, 2, 3)]
    qa = [{"question": "a", "evidence": ["D1:1"]}, {"question": "b", "evidence": ["D1:1", "D3:2"]},
          {"question": "c", "evidence": ["D2:4"]}, {"question": "d", "evidence": []},
          {"question": "e", "evidence": ["no id"]}]
    cut = first_sessions(Conversation("c", sessions, qa), 2)
    assert [s.session_id for s in cut.sessions] == ["c:session_1", "c:session_2"]
    assert [q["question"] for q in cut.qa] == ["a", "c"]
