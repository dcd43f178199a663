"""`valet doctor`: checks what Valet needs and says in plain words what is missing."""

from __future__ import annotations

from collections.abc import Callable

from bot.config import ConfigError, Settings
from bot.db import connect, redact_url
from bot.llm import LLMAuthError, LLMError


async def run_doctor(settings: Settings, say: Callable[[str], None]) -> int:
    from bot.app import NO_LLM_MESSAGE, build_agents, build_llm
    from persona import load_persona

    problems = 0

    def ok(text: str) -> None:
        say(f"  ok    {text}")

    def bad(text: str) -> None:
        nonlocal problems
        problems += 1
        say(f"  FAIL  {text}")

    say(f"configuration: {settings.source}")
    try:
        persona = load_persona(settings.persona)
        ok(f"persona {persona.name!r} ({persona.source})")
    except ConfigError as err:
        bad(str(err))
    try:
        agents = build_agents(settings)
        ok(f"{len(agents.tools)} tools ({len(agents.agents)} agents) from "
           f"{', '.join(agents.files)}")
    except Exception as err:
        bad(f"tools: {err}")
    try:
        db = await connect(settings.database_url)
        await db.close()
        ok(f"database {redact_url(settings.database_url)}")
    except Exception as err:
        bad(f"database {redact_url(settings.database_url)}: {err}")
    if not settings.llm.configured:
        bad(NO_LLM_MESSAGE)
    else:
        await _check_llm(settings, ok, bad, build_llm)
    say("all good" if not problems else f"{problems} problem(s) found")
    return 0 if not problems else 1


async def _check_llm(settings: Settings, ok: Callable[[str], None],
                     bad: Callable[[str], None], build_llm) -> None:  # type: ignore[no-untyped-def]
    where = settings.llm.base_url or "OpenAI"
    llm = build_llm(settings)
    try:
        response = await llm.complete(
            [{"role": "user", "content": "Reply with the single word: ready"}], None)
        ok(f"LLM {settings.llm.model} at {where} answered ({(response.content or '')[:40]!r})")
    except LLMAuthError:
        bad(f"LLM at {where} refused the API key: check VALET_LLM_API_KEY / OPENAI_API_KEY")
    except LLMError as err:
        bad(f"LLM {settings.llm.model} at {where} did not answer: {type(err).__name__}: "
            f"{str(err)[:200]}")
    finally:
        await llm.close()
