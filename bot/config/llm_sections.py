"""The `llm:` section of valet.yaml: the model, its fallbacks, their prices, and no secret in
`extra_body`."""

from __future__ import annotations

import re
from typing import Any, Literal

import pydantic

from bot.config.sections import Section

# Keys of llm.extra_body that would put a credential into the file (and every request log).
SECRET_WORDS = re.compile(r"api.?key|authori[sz]ation|token|password|passwd|secret|cookie"
                          r"|credential|bearer", re.IGNORECASE)


class FallbackModelSettings(Section):
    """A model the turn goes on with when the one before it keeps failing (bot.loop.fallback)."""

    model: str = pydantic.Field(min_length=1)
    base_url: str | None = None  # None: the main model's endpoint
    # The environment variable that holds its API key (never the key itself: the file is not
    # the place for secrets); None: the main model's key on the main endpoint, none elsewhere.
    api_key_env: str | None = pydantic.Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    # Whose tool-message format it reads and writes; None: its endpoint's host. Where it
    # differs from the model before it, earlier tool rounds are flattened for it.
    provider: str | None = pydantic.Field(None, min_length=1)
    timeout_seconds: float | None = pydantic.Field(None, gt=0)  # None: the main model's
    # Filled in from the environment (api_key_env) at load; never from the file.
    api_key: pydantic.SecretStr | None = pydantic.Field(default=None, exclude=True)

    @pydantic.field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return _http_base_url(value)


def _http_base_url(value: str | None) -> str | None:
    if value is not None and not re.match(r"https?://[^/\s]", value):
        raise ValueError("must be an http:// or https:// URL such as "
                         "http://localhost:11434/v1")
    return value


class ModelPrice(Section):
    """What a model costs, in US dollars per million tokens (the provider's price list)."""

    input: float = pydantic.Field(ge=0)
    cached_input: float | None = pydantic.Field(None, ge=0)  # None: the input price
    output: float = pydantic.Field(ge=0)


class LLMSettings(Section):
    base_url: str | None = None  # None: the client's default (api.openai.com)
    model: str | None = None
    # Whose tool-message format the model reads and writes (bot.loop.fallback); None: the host of
    # base_url.
    provider: str | None = pydantic.Field(None, min_length=1)
    # Tried in order when the model keeps failing (5xx or overload, a timeout, an unknown
    # model): the turn goes on with the next one.
    fallback_models: list[FallbackModelSettings] = []
    timeout_seconds: float = pydantic.Field(60.0, gt=0)
    # The most tokens one answer may be (every turn request carries it): a model that does not
    # stop ends there instead of holding the turn until the timeout; the meter prices a call
    # at its worst by it.
    max_output_tokens: int = pydantic.Field(1024, ge=16)
    # The same for background requests (memory extraction, summaries, briefs, probes).
    background_max_tokens: int = pydantic.Field(384, ge=16)
    extra_body: dict[str, Any] = {}
    # Where tool calls the model writes as text (`<tool_call>…`, `[TOOL_CALLS]…`) are read as
    # calls (bot.llm.reading): `text`, the endpoint writes them so (a template served without
    # a tool parser: `valet doctor` says); `native`, never (they are words); `auto`, until the
    # endpoint has sent a structured call. Even then, only an answer that is the call, and
    # never markup quoted from a page, a mail or a tool's result (docs/security.md).
    tool_calls: Literal["auto", "native", "text"] = "auto"
    # Only from the environment (VALET_LLM_API_KEY, else OPENAI_API_KEY); never from the file.
    api_key: pydantic.SecretStr | None = pydantic.Field(default=None, exclude=True)
    # Voice notes go to the same endpoint's /audio/transcriptions with this model (None: the
    # person is told voice notes cannot be heard yet).
    transcription_model: str | None = None
    vision: bool = False  # the model can look at photos
    # Per model name (the main model and each fallback): what its tokens cost, for the daily
    # allowance per person (`budget:`) and the console's Usage page. A model not listed costs
    # nothing there (`valet doctor` names it).
    prices: dict[str, ModelPrice] = {}

    @property
    def configured(self) -> bool:
        return bool(self.model and (self.api_key or self.base_url))

    def api_key_value(self) -> str | None:
        """The key itself, for the one place that sends it (the LLM client)."""
        return self.api_key.get_secret_value() if self.api_key else None

    @pydantic.field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return _http_base_url(value)

    @pydantic.field_validator("extra_body")
    @classmethod
    def _no_secrets(cls, value: dict[str, Any]) -> dict[str, Any]:
        found = sorted(_secret_looking_keys(value))
        if found:
            raise ValueError(f"{', '.join(found)} looks like a secret; extra_body is written "
                             "into every request and kept in the file: put the key in "
                             "VALET_LLM_API_KEY instead")
        return value


def _secret_looking_keys(value: Any, prefix: str = "") -> list[str]:
    if not isinstance(value, dict):
        return []
    found = []
    for key, inner in value.items():
        name = f"{prefix}{key}"
        if SECRET_WORDS.search(str(key)):
            found.append(name)
        found += _secret_looking_keys(inner, f"{name}.")
    return found
