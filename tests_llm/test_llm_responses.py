"""The Responses API of ``agentbase serve`` answered by the real local model, with the real ``openai`` SDK."""

from __future__ import annotations

import openai
import pytest

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.web import create_app
from tests.web.test_responses import LiveServer


@pytest.fixture
def served(tmp_path, llm_settings):
    settings = load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}, llm=llm_settings)
    db = AgentBase(tmp_path / "responses.db", settings=settings, embedder=HashEmbedder(dims=64))
    with LiveServer(create_app(db)) as live:
        with openai.OpenAI(base_url=live.url, api_key="x", max_retries=0, timeout=180,
                           _strict_response_validation=True) as client:
            yield client, db
    db.sync.close()


def test_responses_round_trip_with_real_model(served):
    client, db = served
    db.sync.add_memory("The user's name is Ada and she lives in Lisbon", user_id="ada")
    db.sync.flush()
    conv = client.conversations.create(metadata={"user_id": "ada"})
    first = client.responses.create(model="smollm2", input="Where do I live?", conversation=conv.id,
                                    instructions="Answer in one short sentence.", max_output_tokens=40)
    assert first.status == "completed" and first.id.startswith("resp_")
    assert isinstance(first.output_text, str)
    assert first.usage.input_tokens > 20 and 0 < first.usage.output_tokens <= 40  # the server's token counts
    assert first.model  # the model name the server reported
    second = client.responses.create(model="smollm2", input="Repeat the city name.",
                                     previous_response_id=first.id, max_output_tokens=20)
    assert second.conversation.id == conv.id
    assert second.usage.input_tokens > first.usage.input_tokens  # the history was sent along
    items = client.conversations.items.list(conv.id, order="asc").data
    assert [i.role for i in items] == ["user", "assistant", "user", "assistant"]
    assert client.responses.retrieve(second.id).output_text == second.output_text
