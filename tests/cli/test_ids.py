"""The CLI's entry ids: the short prefix ``find`` prints works for get, delete and trace; an ambiguous or too
short prefix is an error (naming the candidates), and ids stay query parameters, never SQL."""

from __future__ import annotations

import asyncio
import json

from agentbase import AgentBase, load_settings

A1 = "abcdef12-0000-4000-8000-000000000001"
A2 = "abcdef12-9999-4000-8000-000000000002"
B1 = "abcdef13-0000-4000-8000-000000000003"


def _seed(path: str, ids: list[str]) -> None:
    async def go() -> None:
        async with AgentBase(path, settings=load_settings(ner="regex"), embedder="none") as ab:
            for i, eid in enumerate(ids):
                await ab.add_memory(f"seeded note number {i}", entry_id=eid, dedup=False)
    asyncio.run(go())


def test_get_and_delete_accept_the_short_id_printed_by_find(cli):
    res = cli("add", "Caroline moved to Lisbon in May", "--json")
    assert res.exit_code == 0, res.output
    full = json.loads(res.output)["id"]
    short = full[:8]
    res = cli("find", "Lisbon")
    assert res.exit_code == 0 and short in res.output and full not in res.output
    res = cli("get", short, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["id"] == full
    res = cli("delete", short)
    assert res.exit_code == 0 and f"deleted {full}" in res.output
    res = cli("get", short)
    assert res.exit_code == 1 and "not found" in res.output


def test_ambiguous_prefix_names_candidates_and_ids_stay_parameters(cli):
    _seed(cli.db, [A1, A2, B1])
    for command in ("get", "delete"):
        res = cli(command, "abcdef12")
        assert res.exit_code == 2, res.output
        assert "ambiguous" in res.output and A1 in res.output and A2 in res.output and B1 not in res.output
    assert json.loads(cli("get", "abcdef13", "--json").output)["id"] == B1       # unique prefix
    assert json.loads(cli("get", "abcdef12-9", "--json").output)["id"] == A2          # longer unique prefix
    res = cli("get", "abcdef1")                                                   # under 8 characters
    assert res.exit_code == 1 and "at least 8 characters" in res.output
    for hostile in ("abcdef1%", "abcdef1_", "x' OR '1'='1", "'; DELETE FROM entries; --"):
        res = cli("delete", hostile)
        assert res.exit_code == 1 and "not found" in res.output, (hostile, res.output)
    for eid in (A1, A2, B1):
        assert cli("get", eid).exit_code == 0, eid                                # nothing was deleted


def test_trace_accepts_the_unique_prefix_of_the_id_find_printed(cli):
    assert cli("add", "Caroline moved to Lisbon in May").exit_code == 0
    res = cli("find", "Lisbon", "--json")
    assert res.exit_code == 0, res.output
    full = json.loads(res.output)[0]["trace_id"]
    shown = json.loads(cli("trace", full[:8], "--json").output)
    assert shown["id"] == full and shown["steps"]
    res = cli("trace", full[:7])
    assert res.exit_code == 1 and "at least 8 characters" in res.output


def test_an_id_or_prefix_typed_in_upper_case_finds_the_lower_case_uuid(cli):
    full = json.loads(cli("add", "Caroline moved to Lisbon in May", "--json").output)["id"]
    assert json.loads(cli("get", full.upper(), "--json").output)["id"] == full
    assert json.loads(cli("get", full[:8].upper(), "--json").output)["id"] == full
    trace_id = json.loads(cli("find", "Lisbon", "--json").output)[0]["trace_id"]
    assert json.loads(cli("trace", trace_id[:8].upper(), "--json").output)["id"] == trace_id
