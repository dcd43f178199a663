"""What `valet doctor` and `valet onboard` say about the LLM endpoint after one probe
(bot.llm.probe): how it calls tools, how it thinks aloud, whether it streams, the context it
reports, and what Valet does about each."""

from __future__ import annotations

from dataclasses import dataclass

from bot.cli.doctor_setup import Report
from bot.config import Settings
from bot.llm.openai_client import OpenAILLM
from bot.llm.port import LLM, LLMError, short_error
from bot.llm.probe import NATIVE, NONE, REFUSED, TEXT, EndpointProfile, probe_endpoint
from bot.llm.quirks import DESCRIBED, Quirk

NO_TOOLS = "this model does not call tools; Valet will only chat"


@dataclass(frozen=True)
class Line:
    text: str
    kind: str = "ok"  # "ok", "note" (worth knowing, nothing broken) or "bad"


def describe(profile: EndpointProfile, context_limit: int, *, chat_only: bool = False,
             dropped: bool = False) -> list[Line]:
    """The probe's findings, one line each; `context_limit`: loop.context_token_limit;
    `chat_only`: loop.mode is simple (no tools are offered); `dropped`: the server said it
    drops tools (llama.cpp's /props: its chat template has none)."""
    lines = [_tools_line(profile, chat_only, dropped)]
    if profile.thinking is not None:
        apart = profile.thinking == Quirk.REASONING_FIELD
        lines.append(Line(f"{DESCRIBED[profile.thinking]}; Valet keeps it out of "
                          "every reply (it is in /debug)", "ok" if apart else "note"))
    if Quirk.ARGUMENTS_OBJECT in profile.quirks:
        lines.append(Line(f"{DESCRIBED[Quirk.ARGUMENTS_OBJECT]}; Valet reads them", "note"))
    if Quirk.ASKED_AGAIN in profile.quirks:
        lines.append(Line("it answered nothing at first and was asked again (Valet does that "
                          "once whenever an answer is empty)", "note"))
    lines.append(Line("streaming: yes") if profile.streaming else Line(
        f"streaming: no ({profile.stream_error}); set loop.stream: false", "note"))
    lines.append(_context_line(profile, context_limit))
    return lines


def _tools_line(profile: EndpointProfile, chat_only: bool, dropped: bool) -> Line:
    if chat_only and profile.tools in (NONE, REFUSED):
        return Line(f"{NO_TOOLS} (loop.mode: simple)")
    if profile.tools == NATIVE:
        return Line("tool calls: native (structured tool_calls)")
    if profile.tools == TEXT and profile.text_form is not None:
        return Line(f"{DESCRIBED[profile.text_form]}; Valet reads them "
                    "(a tool parser on the server would send them structured)")
    if profile.tools == REFUSED:
        return Line(f"{NO_TOOLS} (the server refuses requests with tools; Valet asks without "
                    "them)", "note")
    assert profile.tools == NONE
    if dropped:
        return Line(f"{NO_TOOLS} (the server drops the tools before the model sees them: its "
                    "/props says supports_tools: false, the chat template it uses has no "
                    "tools; serve the model with a template that has them (llama.cpp: --jinja "
                    "--chat-template-file), or set loop.mode: simple)", "note")
    return Line(f"{NO_TOOLS} (it answered a request to use the tool offered without calling "
                "it; loop.mode: simple stops offering tools)", "note")


def _context_line(profile: EndpointProfile, limit: int) -> Line:
    if profile.context_length is None:
        return Line("context length: not reported by the server (loop.context_token_limit "
                    f"is {limit})")
    said = f"context length: {profile.context_length} tokens ({profile.context_source})"
    if profile.context_length < limit:
        return Line(f"{said}, less than loop.context_token_limit ({limit}): set it to "
                    f"{profile.context_length} or less", "note")
    return Line(said)


def runs_without_tools(profile: EndpointProfile) -> bool:
    return profile.tools in (NONE, REFUSED)


async def probe_lines(llm: OpenAILLM, context_limit: int, *, chat_only: bool = False
                      ) -> tuple[EndpointProfile | None, list[Line]]:
    """Probe `llm` and describe it; a failed probe is one bad line (what every turn with
    tools would meet)."""
    try:
        profile = await probe_endpoint(llm)
    except LLMError as err:
        return None, [Line(f"the endpoint failed a request offering a tool: "
                           f"{short_error(err)}", "bad")]
    return profile, describe(profile, context_limit, chat_only=chat_only,
                             dropped=profile.tools == NONE and await drops_tools(llm))


async def drops_tools(llm: OpenAILLM) -> bool:
    """llama.cpp says its chat template takes no tools (it then leaves them out of the
    prompt without a word: the model never sees them)."""
    props = await llm.server_props()
    caps = (props or {}).get("chat_template_caps")
    return isinstance(caps, dict) and caps.get("supports_tools") is False


async def check_endpoint(settings: Settings, llm: LLM, report: Report) -> None:
    """`valet doctor`'s lines about the endpoint (after its first request was answered)."""
    if not isinstance(llm, OpenAILLM):
        return
    loop = settings.loop_config()
    _, lines = await probe_lines(llm, loop.context_token_limit, chat_only=loop.mode == "simple")
    for line in lines:
        {"ok": report.ok, "note": report.note, "bad": report.bad}[line.kind](
            f"LLM endpoint: {line.text}")
