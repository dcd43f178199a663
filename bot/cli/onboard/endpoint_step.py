"""The LLM step's last part: one probe of the endpoint (bot.llm.probe), what it does said in
the wizard's words, and what Valet should then be set to: no tools for a model that does not
call them, no streaming where it fails, the context the server reports."""

from __future__ import annotations

from bot.cli.endpoint import probe_lines, runs_without_tools
from bot.llm.caps import default_field
from bot.llm.openai_client import OpenAILLM
from bot.setup.ask import Questions
from bot.setup.draft import Draft


async def describe_endpoint(q: Questions, draft: Draft, llm: OpenAILLM,
                            context_limit: int) -> None:
    try:
        profile, lines = await probe_lines(llm, context_limit)
    finally:
        await llm.close()
    for line in lines:
        q.say(f"   {'ok: ' if line.kind == 'ok' else 'note: '}{line.text}")
    if profile is None:
        return
    if runs_without_tools(profile):
        draft.config[("loop", "mode")] = "simple"
        q.say("   Valet will run without tools (loop.mode: simple)")
    if not profile.streaming:
        draft.config[("loop", "stream")] = False
    if profile.cap_field is not None and profile.cap_field != default_field(llm.base_url):
        draft.config[("llm", "max_tokens_field")] = profile.cap_field  # remembered
        q.say(f"   llm.max_tokens_field set to {profile.cap_field}: the server cuts answers "
              "at a cap sent there")
    if profile.context_length is not None and profile.context_length < context_limit:
        draft.config[("loop", "context_token_limit")] = profile.context_length
        q.say(f"   loop.context_token_limit set to {profile.context_length}, as the server "
              "reports")
