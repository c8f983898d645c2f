"""Test sessions. ``nox`` runs the core tests; each framework's compatibility suite has its own session."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Core tests in the project's current environment (install with `pip install -e '.[all,test]'`)."""
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *session.posargs)
