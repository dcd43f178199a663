"""The wizard's own steps, each asking and checking against the real service before going
on: the LLM endpoint (lists the models, tries one request), the public URL (what needs it:
each channel's step says), the timezone and the owner's name. Each channel's step is its
own (channels/<name>/onboard.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import openai

from bot.cli.onboard.endpoint_step import describe_endpoint
from bot.config.channel_sections import plain_http_problem
from bot.config.sections import OwnerSettings
from bot.llm.caps import OutputCaps, background_work
from bot.llm.openai_client import OpenAILLM
from bot.llm.port import (
    LLMAuthError,
    LLMError,
    LLMModelNotFoundError,
    LLMTimeoutError,
    short_error,
)
from bot.setup.ask import OnboardStop, Question
from bot.setup.onboarding import Context, Step
from bot.text.redact import redact_url

OPENAI_URL = "https://api.openai.com/v1"
MODELS_SHOWN = 8


# --- the LLM --------------------------------------------------------------------------------


@dataclass
class _Probe:
    models: list[str]
    problem: str | None = None  # the endpoint cannot be used as given
    refused_key: bool = False


async def _probe(base_url: str, key: str) -> _Probe:
    llm = OpenAILLM(base_url=None if base_url == OPENAI_URL else base_url,
                    api_key=key or "not-needed", model="", timeout=20.0)
    where = redact_url(base_url)
    try:
        return _Probe(await llm.list_models())
    except LLMAuthError:
        return _Probe([], f"the LLM at {where} refused the API key", refused_key=True)
    except LLMError as err:
        if isinstance(err, LLMTimeoutError) or isinstance(err.__cause__,
                                                          openai.APIConnectionError):
            return _Probe([], f"cannot reach an LLM at {where} ({err}): is the server "
                              "running, and the URL right?")
        return _Probe([])  # not every server lists its models; the test request tells
    finally:
        await llm.close()


async def llm_step(c: Context) -> None:
    current_key = c.env.get("VALET_LLM_API_KEY") or c.env.get("OPENAI_API_KEY") or ""

    async def reachable(url: str) -> str | None:
        if not re.match(r"https?://[^/\s]", url):
            return "an LLM endpoint is an http:// or https:// URL such as " \
                   "http://localhost:11434/v1"
        found = await _probe(url, current_key)
        return None if found.refused_key else found.problem

    base_url = await c.q.answer(Question(
        "LLM endpoint (base URL; Ollama: http://localhost:11434/v1)", "--llm-base-url",
        default=c.settings.llm.base_url or OPENAI_URL, given=c.args.llm_base_url), reachable)
    probe = _Probe([])

    async def accepted(key: str) -> str | None:
        nonlocal probe
        probe = await _probe(base_url, key)
        return probe.problem

    key = await c.q.answer(Question(
        "API key (Enter for none, e.g. a local server)", "VALET_LLM_API_KEY",
        default=current_key, secret=True, required=False), accepted)
    if not key and await accepted(""):
        raise OnboardStop(probe.problem or "the LLM endpoint cannot be used")
    if probe.models:
        shown = ", ".join(sorted(probe.models)[:MODELS_SHOWN])
        more = len(probe.models) - MODELS_SHOWN
        c.q.say(f"   models offered: {shown}" + (f" (and {more} more)" if more > 0 else ""))

    async def answers(model: str) -> str | None:
        if probe.models and model not in probe.models:
            return f"{redact_url(base_url)} does not offer {model!r}"
        return await _try_model(base_url, key, model)

    model = await c.q.answer(Question(
        "Model", "--llm-model",
        default=c.settings.llm.model or (sorted(probe.models)[0] if probe.models else None),
        given=c.args.llm_model), answers)
    c.q.say(f"   ok: {model} answered")
    c.draft.config[("llm", "base_url")] = None if base_url == OPENAI_URL else base_url
    c.draft.config[("llm", "model")] = model
    c.draft.env["VALET_LLM_API_KEY"] = key or None
    await describe_endpoint(c.q, c.draft, OpenAILLM(
        base_url=None if base_url == OPENAI_URL else base_url, api_key=key or "not-needed",
        model=model, timeout=60.0), c.settings.loop_config().context_token_limit)


async def _try_model(base_url: str, key: str, model: str) -> str | None:
    llm = OpenAILLM(base_url=None if base_url == OPENAI_URL else base_url,
                    api_key=key or "not-needed", model=model, timeout=60.0,
                    caps=OutputCaps())  # a probe: capped (a model that does not stop)
    where = redact_url(base_url)
    try:
        with background_work():
            await llm.complete([{"role": "user", "content": "Reply with the single word: ready"}],
                               None)
    except LLMModelNotFoundError:
        return f"the LLM at {where} does not know the model {model!r}"
    except LLMError as err:
        return f"the LLM at {where} did not answer a test request with {model}: " \
               f"{short_error(err)[:160]}"
    finally:
        await llm.close()
    return None


# --- where it is reached, and whose it is ---------------------------------------------------


async def public_url_step(channels: Sequence[Step], c: Context) -> None:
    """The public address, required when a channel's step says it needs one; then what the
    steps left to do with it (a webhook pointed at it)."""
    needed = [need for step in channels
              if step.public_url_for is not None and (need := step.public_url_for(c))]
    c.q.say("   " + (f"{' and '.join(needed)} need(s) one" if needed
                     else "none needed: no channel here is sent webhooks"))
    url = await c.q.answer(Question(
        "Public https address of this server (e.g. https://valet.example.com)"
        + ("" if needed else "; Enter for none"), "--public-url",
        default=c.settings.public_url or "", given=c.args.public_url,
        required=bool(needed)), plain_http_problem)
    c.draft.config[("public_url",)] = url.rstrip("/") or None
    if url:
        for then in c.draft.at_public_url:
            await then(url)


async def person_step(c: Context) -> None:
    zone = await c.q.answer(Question(
        "Your timezone (an IANA name such as Europe/Paris)", "--timezone",
        default=c.settings.timezone if c.settings.timezone != "UTC" else local_zone(),
        given=c.args.timezone), _zone_problem)
    named = c.settings.owner.name
    name = await c.q.answer(Question(
        "What should Valet call you", "--owner-name",
        default=c.draft.owner_name_hint if named == OwnerSettings().name and
        c.draft.owner_name_hint else named, given=c.args.owner_name))
    c.draft.config[("timezone",)] = zone
    c.draft.config[("owner", "name")] = name


def _zone_problem(zone: str) -> str | None:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return f"{zone!r} is not a timezone Valet knows (an IANA name such as America/New_York)"
    return None


def local_zone() -> str:
    """This machine's zone when it can be told (TZ, /etc/localtime), else UTC."""
    if os.environ.get("TZ") and not _zone_problem(os.environ["TZ"]):
        return os.environ["TZ"]
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return "UTC"
    _, found, zone = target.partition("zoneinfo/")
    return zone if found and not _zone_problem(zone) else "UTC"
