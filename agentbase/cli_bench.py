"""``agentbase bench ...``: run the retrieval and performance benchmarks from the command line.

The benchmark scripts live in the repository's ``benchmarks/`` folder (not in the installed wheel). Each command
forwards every argument unchanged to ``python -m benchmarks.<name>``, so ``agentbase bench longmemeval --help``
shows the script's own options. Register with ``app.add_typer(bench_app, name="bench")``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import typer

__all__ = ["bench_app"]

bench_app = typer.Typer(help="Retrieval benchmarks (LongMemEval_S, LoCoMo) and core performance; see "
                             "docs/benchmarks.md. Arguments are passed to the benchmark script.",
                        no_args_is_help=True)

_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _load(name: str) -> Any:
    """Import ``benchmarks.<name>``, adding the repository root to ``sys.path`` when needed."""
    try:
        return importlib.import_module(f"benchmarks.{name}")
    except ModuleNotFoundError as exc:
        if exc.name not in ("benchmarks", f"benchmarks.{name}"):
            raise
    candidates = [Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[1]]
    for root in candidates:
        if (root / "benchmarks" / f"{name}.py").is_file() and (root / "benchmarks" / "__init__.py").is_file():
            sys.path.insert(0, str(root))
            sys.modules.pop("benchmarks", None)
            return importlib.import_module(f"benchmarks.{name}")
    typer.echo(f"error: the benchmarks folder was not found (looked for benchmarks/{name}.py in the current "
               "directory, its parents and next to the agentbase package). The benchmarks ship with the source "
               "repository, not with the wheel: run this command from a checkout of the repository.", err=True)
    raise typer.Exit(2)


def _forward(name: str, ctx: typer.Context) -> None:
    module = _load(name)
    code = module.main(list(ctx.args))
    raise typer.Exit(code or 0)


@bench_app.command("longmemeval", context_settings=_PASSTHROUGH, add_help_option=False)
def longmemeval(ctx: typer.Context) -> None:
    """LongMemEval_S retrieval: session/turn recall_any, recall_all, ndcg_any @1/3/5/10 (see --help)."""
    _forward("longmemeval", ctx)


@bench_app.command("locomo", context_settings=_PASSTHROUGH, add_help_option=False)
def locomo(ctx: typer.Context) -> None:
    """LoCoMo evidence recall @5/10/25 and session recall @5 per category (see --help)."""
    _forward("locomo", ctx)


@bench_app.command("perf", context_settings=_PASSTHROUGH, add_help_option=False)
def perf(ctx: typer.Context) -> None:
    """Ingest throughput, embedding throughput and find() latency at 10k/100k entries (see --help)."""
    _forward("perf", ctx)


@bench_app.command("fts-budget", context_settings=_PASSTHROUGH, add_help_option=False)
def fts_budget(ctx: typer.Context) -> None:
    """Keyword-leg postings budget: recall and latency per fts_max_postings on all haystacks in one file."""
    _forward("fts_budget", ctx)
