"""Test sessions.

``nox`` runs the core tests (in the project's environment) and one compatibility suite per framework, each in
its own virtualenv with the framework version pinned in ``compat_tests/<name>/requirements.txt``. Suites run
offline: pytest-socket blocks every socket except loopback.
"""

from __future__ import annotations

from pathlib import Path

import nox

COMPAT = sorted(p.name for p in Path("compat_tests").iterdir() if (p / "requirements.txt").is_file()) \
    if Path("compat_tests").is_dir() else []

nox.options.sessions = ["tests", "compat"] if COMPAT else ["tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Core tests in the project's current environment (install with `pip install -e '.[all,test]'`)."""
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", *session.posargs)


@nox.session(name="compat")
@nox.parametrize("name", COMPAT, ids=COMPAT)
def compat(session: nox.Session, name: str) -> None:
    """One framework's own usage patterns against AgentBase, with the framework version pinned."""
    session.install("-e", ".[test]", "pytest-socket")
    session.install("-r", f"compat_tests/{name}/requirements.txt")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--disable-socket",
                "--allow-unix-socket", "--allow-hosts=127.0.0.1,localhost,::1", f"compat_tests/{name}",
                *session.posargs, env={"MEM0_TELEMETRY": "False", "HF_HUB_OFFLINE": "1",
                                       "OPENAI_API_KEY": "", "AGENTBASE_EMBEDDER__PROVIDER": "hash"})
