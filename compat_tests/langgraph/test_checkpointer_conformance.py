"""LangGraph's own checkpointer conformance kit (langgraph-checkpoint-conformance) against AgentBaseSaver.

The kit detects which ``BaseCheckpointSaver`` capabilities a saver overrides and runs its spec suite for each
(put, put_writes, get_tuple, list, delete_thread, delete_for_runs, copy_thread, prune). Every capability must be
detected and every one of its tests must pass; a failure prints the kit's own traceback for the failing spec.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES, Capability
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from agentbase.adapters import AgentBaseSaver


def _registered(folder: Path, open_db):
    """A kit registration whose factory opens a fresh AgentBase file for each capability suite."""

    @checkpointer_test(name=f"AgentBaseSaver-{uuid.uuid4().hex[:8]}")
    async def factory():
        db = open_db(folder / f"conformance-{uuid.uuid4().hex}.db")
        saver = AgentBaseSaver(db)
        try:
            yield saver
        finally:
            await db.close()

    return factory


def test_every_capability_is_detected(tmp_path: Path, opener) -> None:
    from langgraph.checkpoint.conformance.capabilities import DetectedCapabilities

    detected = DetectedCapabilities.from_instance(AgentBaseSaver(opener(tmp_path / "d.db")))
    assert detected.detected == ALL_CAPABILITIES
    assert not detected.missing


@pytest.mark.parametrize("capability", sorted(c.value for c in Capability))
async def test_conformance_capability(capability: str, tmp_path: Path, opener) -> None:
    report = await validate(_registered(tmp_path, opener), capabilities={capability},
                            progress=ProgressCallbacks.verbose())
    result = report.results[capability]
    assert result.detected, f"{capability} not detected"
    assert result.tests_failed == 0 and result.passed is True, result.failures
    assert result.tests_passed > 0


async def test_full_report(tmp_path: Path, opener) -> None:
    """The whole kit in one run, as its CLI would: conformance level FULL, 8/8 capabilities."""
    report = await validate(_registered(tmp_path, opener), progress=ProgressCallbacks.default())
    report.print_report()
    assert report.conformance_level() == "FULL", report.to_dict()
    assert {name for name, r in report.results.items() if r.detected and r.passed} == {c.value for c in Capability}
