"""The real-model suite (``tests_llm/``, run by ``nox -s llm``, which is not a default session: its
llama-cpp-python build takes about 33 minutes on a fresh machine) must at least collect in the core environment,
so a moved helper or renamed module breaks the core suite, not only the next ``nox -s llm``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_real_model_suite_collects():
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests_llm"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    found = re.search(r"(\d+) tests? collected", done.stdout)
    assert found and int(found.group(1)) >= 7, done.stdout[-1000:]
