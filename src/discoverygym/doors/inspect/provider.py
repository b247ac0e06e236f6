"""The scripted model provider: `--model discoverygym/<policy>` (expert, never-submit,
malformed, cheater). It plays through Inspect's normal generate/tool loop and always
reports token usage (so Inspect never needs a tokenizer, which would be downloaded)."""

from __future__ import annotations

import json
import os
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.model._call_tools import parse_tool_call
from inspect_ai.tool import ToolCall, ToolChoice, ToolInfo

from .policies import Context, Reply, Step, estimate_tokens, get_policy, next_step


def conversation(messages: list[ChatMessage], tool_names: list[str],
                 args: dict[str, Any]) -> tuple[Context, list[list[Reply]]]:
    """The policy's view of an Inspect conversation: the episode prompt and, for each
    earlier assistant turn, the replies to its tool calls."""
    prompt = next((m.text for m in messages if isinstance(m, ChatMessageUser)), "")
    history: list[list[Reply]] = []
    results: dict[str, Reply] = {}
    for m in messages:
        if isinstance(m, ChatMessageTool) and m.tool_call_id:
            if m.error is not None:
                results[m.tool_call_id] = Reply(m.error.message, True)
            else:
                results[m.tool_call_id] = Reply(m.text, False)
    for m in messages:
        if isinstance(m, ChatMessageAssistant):
            calls = m.tool_calls or []
            history.append([results.get(c.id, Reply("", True)) for c in calls])
    return Context(prompt=prompt, tools=list(tool_names), args=dict(args)), history


def _tool_calls(step: Step, turn: int, tools: list[ToolInfo]) -> list[ToolCall]:
    calls = []
    for i, call in enumerate(step.calls):
        call_id = f"call_{turn}_{i}"
        if isinstance(call.arguments, str):  # raw text, possibly not JSON
            calls.append(parse_tool_call(call_id, call.name, call.arguments, tools))
        else:
            calls.append(ToolCall(id=call_id, function=call.name, arguments=call.arguments,
                                  type="function"))
    return calls


@modelapi(name="discoverygym")
class ScriptedPolicyAPI(ModelAPI):
    """Inspect model API whose "model" is one of our scripted policies."""

    def __init__(self, model_name: str, base_url: str | None = None,
                 api_key: str | None = None, config: GenerateConfig | None = None,
                 **model_args: Any) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key,
                         api_key_vars=[], config=config or GenerateConfig())
        self.policy = get_policy(model_name)
        self.args = dict(model_args)

    def max_connections(self) -> int:
        # Answering is instant; the episodes' sandboxes and simulations are what run
        # concurrently, so keep about as many as there are cores.
        return max(2, os.cpu_count() or 2)

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo],
                       tool_choice: ToolChoice, config: GenerateConfig) -> ModelOutput:
        ctx, history = conversation(input, [t.name for t in tools], self.args)
        step = next_step(self.policy, ctx, history)
        calls = _tool_calls(step, len(history), tools)
        message = ChatMessageAssistant(content=step.text, tool_calls=calls or None,
                                       model=self.model_name, source="generate")
        prompt_text = "".join(m.text for m in input) + json.dumps(
            [t.name for t in tools])
        output_text = step.text + json.dumps([[c.name, c.arguments] for c in step.calls])
        n_in, n_out = estimate_tokens(prompt_text), estimate_tokens(output_text)
        return ModelOutput(
            model=self.model_name,
            choices=[ChatCompletionChoice(message=message,
                                          stop_reason="tool_calls" if calls else "stop")],
            usage=ModelUsage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out),
        )
