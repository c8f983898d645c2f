"""CLI test helpers: the ``cli`` fixture runs ``agentbase ARGS --db <tmp file>`` in-process; ``_run`` runs
``agentbase ARGS`` in-process; both with the hash embedder and the regex NER (``ENV``)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentbase.cli import app

ENV = {"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}


def _run(*args: str):
    return CliRunner().invoke(app, list(args), env=ENV)


@pytest.fixture
def cli(tmp_path):
    """Run ``agentbase ARGS --db <tmp file>`` in-process; returns the Click result."""
    dbfile = str(tmp_path / "cli.db")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [*args, "--db", dbfile], env=ENV)

    invoke.db = dbfile
    return invoke
