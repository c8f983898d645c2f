"""Filters apply inside the candidate queries (before top-k); owners never see each other's entries."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from agentbase import ValidationError
from tests.conftest import make_db


async def test_filters_apply_before_top_k(db):
    for i in range(200):
        await db.add_memory(f"pizza night number {i} with friends", user_id="A")
    b_ids = {(await db.add_memory(f"pizza with {x} topping", user_id="B")).id for x in ("olive", "basil", "ham")}
    await db.flush()
    for mode in ("vector", "hybrid", "fts"):
        results = await db.find("pizza", top_k=3, user_id="B", mode=mode)
        assert {r.entry.id for r in results} == b_ids, mode


async def test_date_filter_fills_even_when_matches_are_older_than_global_top_k(db):
    old = datetime(2020, 1, 1, tzinfo=timezone.utc)
    for i in range(150):
        await db.add_memory(f"coffee order {i} latte", user_id="u", event_time=datetime(2024, 6, 1, tzinfo=timezone.utc)
                            + timedelta(minutes=i))
    old_ids = {(await db.add_memory(f"old coffee {i} espresso", user_id="u", event_time=old + timedelta(days=i))).id
               for i in range(5)}
    await db.flush()
    for mode in ("vector", "hybrid", "fts"):
        res = await db.find("coffee latte", top_k=5, mode=mode, date_to=datetime(2021, 1, 1, tzinfo=timezone.utc))
        assert {r.entry.id for r in res} == old_ids, mode


async def test_mixed_utc_offsets_compare_correctly(db):
    # 10:00 at +02:00 is 08:00 UTC; 09:00 at -05:00 is 14:00 UTC.
    a = await db.add_memory("event alpha", event_time="2024-03-01T10:00:00+02:00")
    b = await db.add_memory("event bravo", event_time="2024-03-01T09:00:00-05:00")
    assert (await db.get(a.id)).event_time == datetime(2024, 3, 1, 8, tzinfo=timezone.utc)
    got = await db.find("event", mode="fts", date_from="2024-03-01T12:00:00Z")
    assert [r.entry.id for r in got] == [b.id]
    got = await db.find("event", mode="fts", date_to=datetime(2024, 3, 1, 9, tzinfo=timezone.utc))
    assert [r.entry.id for r in got] == [a.id]


async def test_user_isolation_on_every_path(db):
    secret = await db.add_memory("u1 bank pin is 4417", user_id="u1")
    await db.add_memory("u2 likes tea", user_id="u2")
    await db.flush()
    for mode in ("fts", "vector", "hybrid"):
        for strategy in ("auto", "flat", "hierarchical"):
            hits = await db.find("bank pin 4417", user_id="u2", mode=mode, strategy=strategy)
            assert secret.id not in [h.entry.id for h in hits]
    assert secret.id not in [e.id for e in await db.list(user_id="u2")]
    assert await db.get(secret.id, user_id="u2") is None
    # ids go to SQL as parameters: an injection attempt is just an unknown owner.
    assert await db.find("bank", user_id="u2' OR '1'='1") == []
    assert await db.list(user_id="x' OR 1=1 --") == []


async def test_tags_category_metadata_filters(db):
    a = await db.add_memory("deploy checklist", tags=["ops", "prod"], category="procedure", metadata={"team": "infra"})
    await db.add_memory("deploy party", tags=["fun"], category="event", metadata={"team": "social"})
    assert [e.id for e in await db.list(tags=["ops", "prod"])] == [a.id]
    assert [r.entry.id for r in await db.find("deploy", mode="fts", category="procedure")] == [a.id]
    assert [r.entry.id for r in await db.find("deploy", mode="fts", metadata={"team": "infra"})] == [a.id]
    # a metadata key goes to SQL as a bound JSON path: an injection attempt is a key no entry has, and it is only
    # ever found as a stored key
    assert await db.find("deploy", metadata={"team') OR 1=1 --": "x"}) == []
    odd = await db.add_memory("deploy odd key", metadata={"team') OR 1=1 --": "x"})
    assert [e.id for e in await db.list(metadata={"team') OR 1=1 --": "x"})] == [odd.id]
    with pytest.raises(ValidationError):
        await db.find("deploy", metadata={'team") OR 1=1 --': "x"})  # a quote would end the path label
    with pytest.raises(ValidationError):
        await db.find("deploy", unknown_filter=1)


# ---------------------------------------------------------------- date-only bounds and partial dates


async def _may_entries(db):
    first = await db.add_memory("afternoon meeting", event_time="2024-05-01T15:30:00Z")
    last = await db.add_memory("end of month meeting", event_time="2024-05-31T18:00:00Z")
    await db.add_memory("june meeting", event_time="2024-06-01T00:00:00Z")
    await db.add_memory("april meeting", event_time="2024-04-30T23:59:59.999999Z")
    return first.id, last.id


async def test_date_only_upper_bound_includes_the_whole_day(db):
    first, last = await _may_entries(db)
    may = {first, last}
    assert {e.id for e in await db.list(date_from="2024-05-01", date_to="2024-05-31")} == may
    assert await db.count(date_from="2024-05-01", date_to="2024-05-31") == 2
    assert {r.entry.id for r in await db.find("meeting", mode="fts", date_from="2024-05-01",
                                              date_to="2024-05-31")} == may
    assert [e.id for e in await db.list(date_from="2024-05-01", date_to="2024-05-01")] == [first]
    assert await db.count(date_from="2024-05-31", date_to="2024-05-31") == 1
    # a bound with a clock time stays exact
    assert [e.id for e in await db.list(date_from="2024-05-01", date_to="2024-05-31T00:00:00Z")] == [first]
    assert await db.count(date_to="2024-05-31T18:00:00Z", date_from="2024-05-31T18:00:00Z") == 1
    assert await db.count(date_to=datetime(2024, 5, 31, tzinfo=timezone.utc), date_from="2024-05-02") == 0


async def test_month_and_year_bounds_cover_the_whole_period(db):
    first, last = await _may_entries(db)
    assert {e.id for e in await db.list(date_from="2024-05", date_to="2024-05")} == {first, last}
    assert {e.id for e in await db.list(date_from="May 2024", date_to="May 2024")} == {first, last}
    assert await db.count(date_from="2024", date_to="2024") == 4
    assert await db.count(date_from="2024年", date_to="2024 年") == 4  # dateparser alone read "2024年" as year 2
    assert await db.count(date_to="2024-04") == 1


async def test_date_object_bounds_and_values(db):
    first, last = await _may_entries(db)
    assert [e.id for e in await db.list(date_from=date(2024, 5, 31), date_to=date(2024, 5, 31))] == [last]
    e = await db.add_memory("dated by a date object", event_time=date(2024, 2, 29))
    assert e.event_time == datetime(2024, 2, 29, tzinfo=timezone.utc)
    assert (await db.get(e.id)).event_time == datetime(2024, 2, 29, tzinfo=timezone.utc)


@pytest.mark.parametrize("day", range(21, 28))  # 2023-05-21 is a Sunday: every weekday once
def test_the_benchmark_date_formats_parse_on_every_weekday(day):
    """LongMemEval writes "2023/05/22 (Mon) 03:45", LoCoMo "1:56 pm on 8 May, 2023": a parser restricted to English
    once refused the Monday of the first (dateparser reads "Mon" after a date only in its other languages)."""
    from agentbase.timeutil import parse_time

    assert parse_time(f"2023-5-{day}") == datetime(2023, 5, day, tzinfo=timezone.utc)
    weekday = date(2023, 5, day).strftime("%a")
    assert parse_time(f"2023/05/{day} ({weekday}) 03:45") == datetime(2023, 5, day, 3, 45, tzinfo=timezone.utc)
    assert parse_time(f"1:56 pm on {day} May, 2023") == datetime(2023, 5, day, 13, 56, tzinfo=timezone.utc)


async def test_partial_dates_are_the_start_of_their_period(db):
    assert (await db.add_memory("month only", event_time="2024-05")).event_time == datetime(2024, 5, 1,
                                                                                              tzinfo=timezone.utc)
    assert (await db.add_memory("year only", event_time="2024")).event_time == datetime(2024, 1, 1,
                                                                                          tzinfo=timezone.utc)
    assert (await db.add_memory("named month", event_time="May 2023")).event_time == datetime(
        2023, 5, 1, tzinfo=timezone.utc)
    e = await db.add_memory("updated later")
    assert (await db.update(e.id, event_time="2022-07")).event_time == datetime(2022, 7, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(("text", "expected"), [
    ("Mon, 31 Dec 2018 23:30:00 -0800", datetime(2019, 1, 1, 7, 30)),  # a year off in UTC: still its own year
    ("1 Jan 2025 00:30 +0100", datetime(2024, 12, 31, 23, 30)),
    ("2024/05/03 10:00", datetime(2024, 5, 3, 10)), ("2024/5/3", datetime(2024, 5, 3)),
    ("2024.05.03", datetime(2024, 5, 3)), ("5/3/2024", datetime(2024, 5, 3)),  # month first, as in English
    ("2024年5月", datetime(2024, 5, 1)), ("2024年5月3日", datetime(2024, 5, 3)), ("2024年", datetime(2024, 1, 1))])
def test_dates_in_digits_zones_and_chinese_parse(text, expected):
    from agentbase.timeutil import parse_time

    assert parse_time(text) == expected.replace(tzinfo=timezone.utc)


@pytest.mark.parametrize("bad", ["1e10", "12", "nan", "2024-13", "2024-13-01", "2024-02-30", "x", "a", "h", "#42",
                                 "2024年13月", "2024年2月30日",
                                 "v2", "bar", "die", float("nan"), float("inf"), 10**20])
async def test_nonsense_times_raise_validation_error_and_write_nothing(db, bad):
    s = await db.create_session()
    with pytest.raises(ValidationError):
        await db.add_memory("never stored", event_time=bad)
    with pytest.raises(ValidationError):
        await db.count(date_from=bad)
    with pytest.raises(ValidationError):
        await db.list(date_to=bad)
    with pytest.raises(ValidationError):
        await db.find("stored", reference_time=bad)
    with pytest.raises(ValidationError):
        await db.add_message(s.id, "user", "hi", created_at=bad)
    with pytest.raises(ValidationError):
        await db.create_session(created_at=bad)
    assert await db.count() == 0
    assert await db.get_messages(s.id) == []
    assert len(await db.list_sessions()) == 1


async def test_an_unknown_filter_names_itself_and_the_known_ones(db):
    await db.add_memory("a note about filters", user_id="u")
    with pytest.raises(ValidationError) as info:
        await db.find("note", user_id="u", colour="red")
    message = str(info.value)
    assert "'colour'" in message and "user_id" in message and "date_from" in message
    assert "__init__" not in message and "Filters" not in message


async def test_no_filter_takes_raw_sql(db):
    """Filters had an internal ``extra`` field of raw SQL clauses that keyword arguments could reach:
    ``extra=[("1 OR 1", [])]`` bypassed the owner filter, in ``delete_all`` too. It is gone."""
    await db.add_memory("alice secret: tea", user_id="alice")
    bob = await db.add_memory("bob secret: coffee", user_id="bob")
    for call in (db.list, db.count, db.delete_all):
        with pytest.raises(ValidationError, match="unknown filter 'extra'"):
            await call(user_id="alice", extra=[("1 OR 1", [])])
    with pytest.raises(ValidationError, match="unknown filter 'extra'"):
        await db.find("secret", user_id="alice", extra=[("1 OR 1", [])])
    assert (await db.get(bob.id)) is not None
    assert [e.l2_full for e in await db.list(user_id="alice")] == ["alice secret: tea"]


async def test_visible_to_is_a_checked_filter_of_owner_ids(db):
    """The scope filter (``**visible_to(...)``) is a dict of ids that the library turns into SQL itself."""
    from agentbase.scopes import visible_to

    mine = await db.add_memory("agent note on deploys", agent_id="a1", scope="agent")
    await db.add_memory("other agent note on deploys", agent_id="a2", scope="agent")
    assert visible_to(agent_id="a1") == {"visible_to": {"user_id": None, "agent_id": "a1", "project_id": None,
                                                        "session_id": None}}
    assert [e.id for e in await db.list(**visible_to(agent_id="a1"))] == [mine.id]
    assert [e.id for e in await db.list(visible_to={"agent_id": "a1"})] == [mine.id]
    for bad in ("a1", {"team_id": "x"}, {"agent_id": ""}, {"agent_id": 5}):
        with pytest.raises(ValidationError):
            await db.list(visible_to=bad)


async def test_list_filters_any_of_and_all_of_and_empty_lists(db):
    a = await db.add_memory("deploy checklist", tags=["ops", "prod"], category="procedure")
    b = await db.add_memory("deploy party", tags=["fun", "ops"], category="event")
    await db.add_memory("deploy notes", category="note")
    await db.flush()
    for mode in ("fts", "vector", "hybrid"):
        got = {r.entry.id for r in await db.find("deploy", mode=mode, category=["procedure", "event"])}
        assert got == {a.id, b.id}, mode
        # an empty "one of" list matches nothing, on every leg
        assert await db.find("deploy", mode=mode, category=[]) == [], mode
        assert await db.find("deploy", mode=mode, context_type=[]) == [], mode
        assert await db.find("deploy", mode=mode, scope=[]) == [], mode
    assert await db.list(category=[]) == []
    # tags: all of them; a repeated tag counts once; an empty list asks for nothing
    assert {e.id for e in await db.list(tags=["ops"])} == {a.id, b.id}
    assert [e.id for e in await db.list(tags=["ops", "prod", "ops"])] == [a.id]
    assert len(await db.list(tags=[])) == 3


async def test_a_thousand_tags_or_categories_are_one_clause_each(db):
    many = [f"tag{i}" for i in range(1500)]
    full = await db.add_memory("kitchen inventory", tags=many, category="c7")
    await db.add_memory("kitchen inventory short", tags=many[:3], category="other")
    assert [e.id for e in await db.list(tags=many)] == [full.id]
    assert [r.entry.id for r in await db.find("kitchen", mode="fts", tags=many)] == [full.id]
    cats = [f"c{i}" for i in range(1500)]
    assert [r.entry.id for r in await db.find("kitchen", mode="fts", category=cats)] == [full.id]


async def test_metadata_none_matches_a_stored_null_not_a_missing_key(db):
    null = await db.add_memory("ticket alpha", metadata={"owner": None})
    await db.add_memory("ticket bravo", metadata={"other": 1})
    await db.add_memory("ticket charlie", metadata={"owner": "kim"})
    assert [r.entry.id for r in await db.find("ticket", mode="fts", metadata={"owner": None})] == [null.id]
    assert [e.id for e in await db.list(metadata={"owner": None})] == [null.id]


async def test_metadata_values_compare_as_typed_json(db):
    ids = {}
    for name, meta in [("flag", {"v": True}), ("one", {"v": 1}), ("onef", {"v": 1.0}), ("text", {"v": "1"}),
                       ("arr", {"v": ["a", "b"]}), ("arrtext", {"v": '["a","b"]'})]:
        ids[name] = (await db.add_memory(f"widget {name}", metadata=meta, user_id="m")).id

    async def names(value):
        got = {e.id for e in await db.list(user_id="m", metadata={"v": value})}
        assert got == {r.entry.id for r in await db.find("widget", mode="fts", user_id="m", metadata={"v": value})}
        return {n for n, i in ids.items() if i in got}

    assert await names(True) == {"flag"}
    assert await names(1) == {"one", "onef"}
    assert await names(1.0) == {"one", "onef"}
    assert await names("1") == {"text"}
    assert await names('["a","b"]') == {"arrtext"}
    assert await db.delete_all(user_id="m", metadata={"v": True}) == 1
    assert await db.count(user_id="m") == 5


async def test_delete_all_honours_explicit_superseded_and_archived_flags(db):
    for text in ("I live in Boston.", "We just moved to Austin."):
        s = await db.create_session(user_id="d")
        await db.add_message(s.id, role="user", content=text)
        await db.commit_session(s.id)
    assert await db.count(user_id="d", category="profile") == 1
    assert await db.delete_all(user_id="d", category="profile", exclude_superseded=True) == 1
    left = await db.list(user_id="d", category="profile", exclude_superseded=False)
    assert [e.l2_full for e in left] == ["User lives in Boston"]
    assert await db.delete_all(user_id="d", category="profile") == 1  # default: old versions too


async def test_relative_date_filters_are_read_from_find_reference_time(db):
    # "last week" in a filter means the week before find()'s reference_time, as a relative word in the query does
    # (it was read from the wall clock, so a replayed or back-dated query filtered the wrong week).
    ref = datetime(2023, 5, 10, 12, tzinfo=timezone.utc)  # a Wednesday; last week is Monday 1 to Sunday 7 May
    inside = {(await db.add_memory(f"standup note {d}", event_time=datetime(2023, 5, d, 9, tzinfo=timezone.utc))).id
              for d in (1, 7)}
    for d in (8, 9):
        await db.add_memory(f"standup note {d}", event_time=datetime(2023, 5, d, 9, tzinfo=timezone.utc))
    await db.add_memory("standup note april", event_time=datetime(2023, 4, 30, 9, tzinfo=timezone.utc))
    got = await db.find("standup note", mode="fts", top_k=10, reference_time=ref, date_from="last week",
                        date_to="last week")
    assert {r.entry.id for r in got} == inside
    got = await db.find("standup note", mode="fts", top_k=10, reference_time=ref, date_from="3 days ago")
    assert {r.entry.l2_full for r in got} == {"standup note 7", "standup note 8", "standup note 9"}  # from May 7


async def test_a_metadata_filter_matches_an_item_of_a_stored_array_of_the_same_type(db):
    # {"tags": "x"} found nothing for "tags": ["x", "y"] (Qdrant, Pinecone and mem0 match an item of a list)
    a = (await db.add_memory("a", metadata={"tags": ["x", "y"], "l": [1, 2.0, True, None], "o": {"x": 1}})).id
    b = (await db.add_memory("b", metadata={"tags": "x", "l": 1, "o": "x"})).id
    assert {e.id for e in await db.list(metadata={"tags": "x"})} == {a, b}
    assert {e.id for e in await db.list(metadata={"tags": "y"})} == {a}
    assert {e.id for e in await db.list(metadata={"l": 2})} == {a}
    assert {e.id for e in await db.list(metadata={"l": True})} == {a}  # true is not the number 1
    assert {e.id for e in await db.list(metadata={"l": 1})} == {a, b}
    assert {e.id for e in await db.list(metadata={"l": None})} == {a}
    assert {e.id for e in await db.list(metadata={"o": "x"})} == {b}  # an object never matches
    assert await db.count(metadata={"tags": "q"}) == 0
    assert {r.entry.id for r in await db.find("a", mode="fts", metadata={"tags": "y"})} <= {a}


async def test_a_question_only_about_a_time_searches_inside_that_time(db):
    # "what did I do last week" matched "last" and "week" in newer turns and ranked the week's one memory 6th
    hike = await db.add_memory("Went hiking in the Alps with my sister", event_time="2024-05-08", user_id="a")
    for text in ("I moved to Lisbon last month", "Last week was busy, next week too", "What a week, honestly"):
        await db.add_memory(text, event_time="2024-05-14", user_id="a")
    await db.flush()
    for q in ("what did I do last week", "last week"):
        got = await db.find(q, user_id="a", reference_time="2024-05-15")
        assert [r.entry.id for r in got] == [hike.id], q
    # a range holding nothing: the usual search
    assert len(await db.find("what did I do last week", user_id="a", reference_time="2025-01-15")) == 4


async def test_a_chinese_question_only_about_a_time_searches_inside_that_time(db):
    # "做" ("do") was a keyword, so 我上周做了什么 ("what did I do last week") searched every period
    hike = await db.add_memory("和妹妹去阿尔卑斯山徒步", event_time="2024-05-08", user_id="a")
    for text in ("上周很忙", "我上个月搬到了里斯本"):
        await db.add_memory(text, event_time="2024-05-14", user_id="a")
    await db.flush()
    for q in ("我上周做了什么", "上周我干了啥"):
        got = await db.find(q, user_id="a", reference_time="2024-05-15")
        assert [r.entry.id for r in got] == [hike.id], q
    assert len(await db.find("我上周吃了什么", user_id="a", reference_time="2024-05-15")) == 3  # 吃 ("eat") asks


async def test_metadata_filter_keys_are_any_text_a_stored_key_can_be(db):
    # a filter refused "キー" and "a b", keys add_memory stores
    e = await db.add_memory("x", metadata={"キー": "値😀", "a b": 1, "it's": True})
    assert [x.id for x in await db.list(metadata={"キー": "値😀", "a b": 1, "it's": True})] == [e.id]
    for bad in ("", 'a"b', "a\\b", "a\nb", "k" * 257):
        with pytest.raises(ValidationError):
            await db.count(metadata={bad: 1})


async def test_time_of_day_alone_is_refused_and_a_dated_offset_is_that_day_there(db):
    for text in ("10:00", "noon", "at 10am"):
        with pytest.raises(ValidationError, match="needs a date"):
            await db.add_memory("x", event_time=text)
    e = await db.add_memory("offset day", event_time="2024-05-31+02:00", user_id="t")
    assert e.event_time.isoformat() == "2024-05-30T22:00:00+00:00"
    assert [r.id for r in await db.list(user_id="t", date_from="2024-05-31+02:00", date_to="2024-05-31+02:00")] \
        == [e.id]


# A metadata filter key holding a lone surrogate (invalid Unicode, never a stored key) is a ValidationError in
# list, count, find and delete_all, not a UnicodeEncodeError from the SQLite driver.
@pytest.mark.parametrize("call", ["list", "count", "find", "delete_all"])
def test_surrogate_metadata_filter_key_is_a_validation_error(tmp_path, call):
    db = make_db(tmp_path / "k.db")
    try:
        db.sync.add_memory("hello there", metadata={"a": "b"}, user_id="u")
        flt = {"metadata": {"k\ud800": "x"}, "user_id": "u"}
        with pytest.raises(ValidationError, match="metadata filter key"):
            if call == "find":
                db.sync.find("hello", **flt)
            else:
                getattr(db.sync, call)(**flt)
        assert db.sync.count(user_id="u") == 1  # nothing deleted
    finally:
        db.sync.close()
