"""Retrieval benchmarks for AgentBase: LongMemEval_S, LoCoMo, core performance (see ``docs/benchmarks.md``).

Run them as ``python -m benchmarks.longmemeval``, ``python -m benchmarks.locomo``, ``python -m benchmarks.perf``
or through ``agentbase bench <name>``. The data files never ship with the project: pass ``--data PATH``.
"""
