"""The models a deployment talks to: the main LLM (`llm:`) and its fallbacks
(`llm.fallback_models`), each counted in /metrics under its own name, each with the provider
name that says whose tool-message format it reads (bot.loop.fallback, bot.loop.masking); and
speech to text for voice notes (`llm.transcription_model`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from bot.budget import Budget, Price, Prices, Spending
from bot.config import ConfigError, Settings
from bot.contracts.clock import Clock
from bot.llm.caps import OutputCaps
from bot.llm.metered import MeteredLLM
from bot.llm.openai_client import OpenAILLM
from bot.llm.person_first import PersonFirst, PersonFirstLLM
from bot.llm.port import LLM
from bot.llm.transcribe import Transcriber
from bot.loop.fallback import ModelSlot, provider_of
from bot.meter.llm import Held, PricedLLM
from bot.plumbing.metrics import Metrics


@dataclass(frozen=True)
class Models:
    llm: LLM  # the main model, metered
    provider: str
    fallbacks: tuple[ModelSlot, ...] = ()
    # Turns before background work on the server (bot.llm.person_first): the gateway says
    # when turns are due and done.
    gate: PersonFirst = field(default_factory=PersonFirst)

    async def close(self) -> None:
        for slot in self.fallbacks:
            await slot.llm.close()


def build_models(settings: Settings, metrics: Metrics, llm: LLM | None = None) -> Models:
    """The main model (`llm`, given by a test, or from the settings) and the fallbacks,
    their background requests after the turns (bot.llm.person_first)."""
    gate = PersonFirst(concurrency=settings.llm.concurrency,
                       quiet_seconds=settings.llm.background_quiet_seconds)
    return Models(MeteredLLM(PersonFirstLLM(llm or build_llm(settings), gate), metrics),
                  settings.llm.provider or provider_of(settings.llm.base_url),
                  build_fallbacks(settings, metrics), gate)


def build_llm(settings: Settings) -> LLM:
    llm = settings.llm
    if not llm.configured:
        raise ConfigError(NO_LLM_MESSAGE)
    return OpenAILLM(base_url=llm.base_url, api_key=llm.api_key_value() or "not-needed",
                     model=llm.model or "", timeout=llm.timeout_seconds,
                     extra_body=llm.extra_body, tool_calls=llm.tool_calls,
                     caps=output_caps(settings), cap_field=llm.max_tokens_field)


def output_caps(settings: Settings) -> OutputCaps:
    """Every request's cap on what it may write: answers, and background work."""
    return OutputCaps(settings.llm.max_output_tokens, settings.llm.background_max_tokens)


def build_fallbacks(settings: Settings, metrics: Metrics) -> tuple[ModelSlot, ...]:
    """`llm.fallback_models`, in order, each counted in /metrics under its own name."""
    llm = settings.llm
    slots = []
    for fallback in llm.fallback_models:
        base_url = fallback.base_url or llm.base_url
        # The main key only goes to the main endpoint: another one gets its own or none.
        same_endpoint = fallback.base_url in (None, llm.base_url)
        key = fallback.api_key.get_secret_value() if fallback.api_key else \
            llm.api_key_value() if same_endpoint else None
        client = OpenAILLM(base_url=base_url, api_key=key or "not-needed",
                           model=fallback.model,
                           timeout=fallback.timeout_seconds or llm.timeout_seconds,
                           caps=output_caps(settings),
                           cap_field=llm.max_tokens_field if same_endpoint else None)
        slots.append(ModelSlot(MeteredLLM(client, metrics),
                               fallback.provider or provider_of(base_url)))
    return tuple(slots)


def build_transcriber(settings: Settings) -> Transcriber | None:
    """Speech to text on the LLM's endpoint, when `llm.transcription_model` names a model."""
    llm = settings.llm
    if not llm.transcription_model:
        return None
    return Transcriber(base_url=llm.base_url, api_key=llm.api_key_value() or "not-needed",
                       model=llm.transcription_model)


NO_LLM_MESSAGE = (
    "No LLM configured: set VALET_LLM_MODEL and VALET_LLM_BASE_URL (any OpenAI-compatible "
    "endpoint, e.g. http://localhost:11434/v1 for Ollama) or OPENAI_API_KEY; see "
    "docs/configuration.md.")


def priced(models: Models, settings: Settings, spending: Spending, clock: Clock) -> Models:
    """Each model's calls checked against the payer's budget before they go, at their worst
    cost, and added to the payer's day at `llm.prices` (none listed: as it was)."""
    if not settings.llm.prices:
        return models
    prices = Prices({name: Price(p.input, p.output, p.cached_input)
                     for name, p in settings.llm.prices.items()})
    limits = Budget.from_usd(settings.budget.daily_usd, settings.budget.owner_daily_usd)
    held = Held()  # calls under way, across the main model and its fallbacks

    def metered(llm: LLM) -> PricedLLM:
        return PricedLLM(llm, prices, spending, clock, budget=limits,
                         max_output_tokens=settings.llm.max_output_tokens, held=held)

    return replace(models, llm=metered(models.llm),
                   fallbacks=tuple(replace(slot, llm=metered(slot.llm))
                                   for slot in models.fallbacks))
