"""The LLM benchmark harness (benchmarks/llm_bench.py): config loading, judge rubrics per question type, verdict
parsing, and one end-to-end ``--qa`` run over a small LongMemEval-shaped file against the scripted loopback
chat server (reader and judge), plus the ``--llm-config`` retrieval pair with its token figures."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai")

from benchmarks import llm_bench, longmemeval  # noqa: E402

from tests.llm.fake_server import FakeLLMServer  # noqa: E402


def _record(qid: str, qtype: str, question: str, answer: str) -> dict:
    return {"question_id": qid, "question_type": qtype, "question": question, "answer": answer,
            "question_date": "2023/05/30 (Tue) 10:00", "haystack_session_ids": ["s1", "s2"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 09:00"],
            "haystack_sessions": [
                [{"role": "user", "content": "I adopted a beagle named Rufus.", "has_answer": True},
                 {"role": "assistant", "content": "Lovely! Beagles are great.", "has_answer": False}],
                [{"role": "user", "content": "I moved to Lisbon in May.", "has_answer": True},
                 {"role": "assistant", "content": "Welcome to Lisbon!", "has_answer": False}]],
            "answer_session_ids": ["s1"]}


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([
        _record("q1", "single-session-user", "What is my dog's name?", "Rufus"),
        _record("q2", "temporal-reasoning", "How many days ago did I adopt my dog?", "29 days"),
        _record("q3_abs", "single-session-user", "What is my cat's name?", "You did not mention a cat."),
    ]))
    return path


def _config(tmp_path, url: str, **llm) -> str:
    path = tmp_path / "llm.yaml"
    uses = "".join(f"  {k}: {str(v).lower()}\n" for k, v in llm.items())
    path.write_text(f"llm:\n  base_url: {url}\n  model: fake-model\n  max_retries: 0\n{uses}"
                    "qa:\n  top_k: 3\n  judge: {model: judge-model, max_tokens: 4}\n")
    return str(path)


def test_load_llm_config_errors(tmp_path):
    from agentbase.errors import ConfigError

    bad = tmp_path / "bad.yaml"
    bad.write_text("retrieval: {}\n")
    with pytest.raises(ConfigError, match="needs an 'llm:' mapping"):
        llm_bench.load_llm_config(bad)
    bad.write_text("llm: {model: m}\n")
    with pytest.raises(ConfigError, match="base_url and model"):
        llm_bench.load_llm_config(bad)
    bad.write_text("llm: {base_url: http://127.0.0.1:1/v1, model: m}\nqa: {top_k: 0}\n")
    with pytest.raises(ConfigError, match="top_k"):
        llm_bench.load_llm_config(bad)
    with pytest.raises(SystemExit):  # --qa without --llm-config is a usage error
        longmemeval.parse_args(["--qa", "--data", str(bad)])


def test_rubrics_and_verdicts():
    assert llm_bench.rubric_kind("temporal-reasoning", False) == "temporal-reasoning"
    assert llm_bench.rubric_kind("temporal-reasoning", True) == "abstention"
    assert llm_bench.rubric_kind("multi-session", False) == "default"
    assert "off-by-one" in llm_bench.JUDGE_RUBRICS["temporal-reasoning"]
    assert "off-by-one" not in llm_bench.JUDGE_RUBRICS["default"]
    assert "updated answer" in llm_bench.JUDGE_RUBRICS["knowledge-update"]
    pref = llm_bench.judge_messages("single-session-preference", "q?", "likes tea", "tea!")
    assert "Rubric: likes tea" in pref[1]["content"]
    assert "Explanation: x" in llm_bench.judge_messages("abstention", "q?", "x", "y")[1]["content"]
    assert [llm_bench.parse_verdict(t) for t in ("Yes.", "no", "The answer: YES", "maybe", "", "Nope")] == \
        [True, False, True, None, None, None]


def test_qa_run_answers_and_grades_each_question(tmp_path, data, capsys):
    server = FakeLLMServer()

    def respond(request):
        system = request["messages"][0]["content"]
        if system.endswith("Answer yes or no only."):  # judge: yes when the reader named the gold answer
            user = request["messages"][1]["content"]
            gold = user.split("Correct answer: ", 1)[-1].split("\n", 1)[0]
            return "yes" if gold.split()[0] in user.split("Model response: ", 1)[1] else "no"
        return "Your dog is Rufus." if "Rufus" in request["messages"][1]["content"] else "I do not know."
    server.responder = respond
    try:
        out = tmp_path / "qa.json"
        code = longmemeval.main(["--qa", "--llm-config", _config(tmp_path, server.url, summaries=False,
                                                                  retrieval_keys=False, facts=False),
                                 "--data", str(data), "--embedder", "hash", "--out", str(out)])
    finally:
        server.close()
    assert code == 0
    payload = json.loads(out.read_text())
    rows = {r["id"]: r for r in payload["questions"]}
    assert rows["q1"]["qa"]["correct"] is True and rows["q1"]["qa"]["rubric"] == "default"
    assert rows["q2"]["qa"]["rubric"] == "temporal-reasoning" and rows["q2"]["qa"]["correct"] is False
    assert rows["q3_abs"]["qa"]["rubric"] == "abstention"
    assert payload["accuracy"]["all"]["n"] == 3
    assert payload["accuracy"]["single-session-user"]["n"] == 2
    assert all(r["context_tokens"] > 0 and r["context_results"] <= 3 for r in rows.values())
    judge_models = [r["model"] for r in server.requests if r["messages"][0]["content"].endswith("only.")]
    assert judge_models == ["judge-model"] * 3  # the qa.judge override
    assert payload["reader_tokens_per_question"] > 0
    assert "accuracy" in (tmp_path / "qa.md").read_text()


def test_llm_config_retrieval_pair_reports_tokens(tmp_path, data):
    server = FakeLLMServer()
    server.responder = lambda request: json.dumps({"summary": "The user adopted Rufus and moved to Lisbon.",
                                                   "overview": "Rufus and Lisbon.", "abstract": "Rufus"})
    try:
        out = tmp_path / "pair.json"
        code = longmemeval.main(["--llm-config", _config(tmp_path, server.url, retrieval_keys=False, facts=False),
                                 "--data", str(data), "--embedder", "hash", "--modes", "hybrid",
                                 "--out", str(out)])
    finally:
        server.close()
    assert code == 0
    payload = json.loads(out.read_text())
    assert payload["zero_llm"]["results"] and payload["llm"]["results"]
    tokens = payload["llm_tokens"]
    assert tokens["messages"] == 12 and tokens["finds"] == 6  # 3 haystacks of 4 messages; 2 finds each
    assert tokens["ingest"]["calls"] >= 3 and tokens["ingest_tokens_per_message"] > 0
    assert tokens["query"]["calls"] == 0 and tokens["query_tokens_per_query"] == 0
    assert all("llm" not in r for r in payload["zero_llm"]["questions"])


def test_the_scripts_run_the_llm_pair_as_modules(tmp_path, data):
    """``python -m benchmarks.<name> --llm-config`` (not only ``main()`` imported): everything the pair report
    needs is defined before the module's ``__main__`` block runs."""
    import subprocess
    import sys
    from pathlib import Path

    from benchmarks.common import default_data

    server = FakeLLMServer()
    server.responder = lambda request: json.dumps({"summary": "Rufus.", "overview": "Rufus.", "abstract": "Rufus"})
    root = Path(__file__).resolve().parents[2]
    runs = [["benchmarks.longmemeval", "--data", str(data)]]
    locomo = default_data("locomo", "locomo_dev.json")
    if locomo:
        runs.append(["benchmarks.locomo", "--data", locomo, "--limit", "1", "--sessions", "1"])
    try:
        for module, *rest in runs:
            out = tmp_path / f"{module}.json"
            done = subprocess.run([sys.executable, "-m", module, "--llm-config",
                                   _config(tmp_path, server.url, retrieval_keys=False, facts=False), *rest,
                                   "--embedder", "hash", "--modes", "hybrid", "--out", str(out)],
                                  cwd=root, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            assert json.loads(out.read_text())["llm_tokens"]["ingest"]["calls"] >= 1
    finally:
        server.close()
