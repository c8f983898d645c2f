"""OpenAI Agents SDK on AgentBase: ``Runner.run(..., session=AgentBaseSession(...))`` keeps the conversation in
an AgentBase file, and ``db.find`` searches what was said.

Runs offline: the model is a scripted stand-in for an LLM and tracing is off (install with
``pip install 'agentbase[openai-agents]'``):

    python examples/openai_agents_example.py
"""

import asyncio
import json
import tempfile
from pathlib import Path

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from agentbase import AgentBase
from agentbase.adapters import AgentBaseSession

set_tracing_disabled(True)  # the trace exporter would post to api.openai.com


class ScriptedModel(Model):
    """Plays a fixed script: a tool call, then plain answers. Prints how much history each call is given."""

    def __init__(self) -> None:
        self.step = 0

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id, conversation_id, prompt):
        self.step += 1
        print(f"  [model call {self.step}: {len(input)} input items]")
        if self.step == 1:
            out = ResponseFunctionToolCall(type="function_call", id="fc_1", call_id="call_1", name="get_weather",
                                           arguments=json.dumps({"city": "Lisbon"}), status="completed")
        else:
            text = {2: "It is sunny in Lisbon, 24C. Enjoy the move!",
                    3: "You are moving to Lisbon next month."}.get(self.step, "ok")
            out = ResponseOutputMessage(id=f"msg_{self.step}", type="message", role="assistant",
                                        status="completed",
                                        content=[ResponseOutputText(type="output_text", text=text,
                                                                    annotations=[])])
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("this example does not stream")


@function_tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny, 24C in {city}"


async def main() -> None:
    path = Path(tempfile.mkdtemp()) / "agents_sdk.db"
    async with AgentBase(path) as db:
        session = AgentBaseSession("alice-chat", db, user_id="alice")
        agent = Agent(name="assistant", model=ScriptedModel(), tools=[get_weather],
                      instructions="You help Alice plan her move.")

        for question in ("I'm moving to Lisbon next month. What's the weather there?", "Where am I moving?"):
            result = await Runner.run(agent, question, session=session)
            print(f"user: {question}\n  bot: {result.final_output}")

        items = await session.get_items()
        print(f"\nthe session holds {len(items)} items:",
              ", ".join(f"message({i['role']})" if "role" in i else i["type"] for i in items))
        print("latest 2:", [i.get("content") if isinstance(i.get("content"), str) else i["content"][0]["text"]
                            for i in await session.get_items(limit=2)])

        # add_items committed every turn (auto_commit=True): find() searches the conversation at once
        await db.flush()
        print("\nfind('Lisbon move', user_id='alice'):")
        for r in await db.find("Lisbon move", user_id="alice", top_k=3):
            print(f"  {r.score:.3f} {r.matched_by:<12} {r.entry.category:<8} {' '.join(r.text.split())[:80]}")

        popped = await session.pop_item()
        print("\npop_item() removed:", popped["content"][0]["text"])
        session.close()

    # Reopen the file: the conversation is still there for the next run.
    again = AgentBaseSession("alice-chat", str(path), user_id="alice")
    print("after reopening, the session holds", len(await again.get_items()), "items")
    again.close()


if __name__ == "__main__":
    asyncio.run(main())
