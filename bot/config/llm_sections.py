"""The `llm:` section of valet.yaml: the model, its fallbacks, their prices, and no secret in
`extra_body`."""

from __future__ import annotations

import re
from typing import Any, Literal

import pydantic

from bot.config.sections import Section

# What a key of llm.extra_body is named when it holds a credential (it would sit in the file
# and in every request): read word by word ("max_tokens" counts tokens; "access_token",
# "token", "api_key", "Authorization" hold one).
SECRET_KEY_WORDS = frozenset({"apikey", "authorization", "authorisation", "auth", "token",
                              "password", "passwd", "secret", "cookie", "credential",
                              "credentials", "bearer", "session", "signature"})
# ...and what a credential looks like whatever its key: an HTTP auth value, a provider key.
SECRET_VALUE = re.compile(r"^\s*(?:bearer|basic)\s+\S{8,}|^(?:sk|rk|pk|xox[abp])-[\w-]{16,}\s*$"
                          r"|^gh[pousr]_\w{20,}\s*$|^AKIA[0-9A-Z]{16}\s*$", re.IGNORECASE)


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
    # The request field the caps go in (None: learnt: max_completion_tokens for OpenAI,
    # max_tokens elsewhere, changed when a server refuses it; `valet onboard` writes the one
    # its probe saw work).
    max_tokens_field: Literal["max_tokens", "max_completion_tokens", "n_predict"] | None = None
    # Requests the server runs at once (None: asked of the server where it says, llama.cpp's
    # /props total_slots; else taken as several). With 1, background work (memory
    # extraction, summaries) is cancelled when a person writes (bot.llm.person_first).
    concurrency: int | None = pydantic.Field(None, ge=1)
    # Background work starts only after the conversations have been quiet this long (a turn
    # that follows soon finds the server's prompt cache still holding its conversation).
    background_quiet_seconds: float = pydantic.Field(20.0, ge=0)
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


def key_words(key: str) -> list[str]:
    """A key's words, lower case: "maxTokens" and "max-tokens" -> ["max", "tokens"];
    "api_key" and "apiKey" -> ["apikey"] (the one word a key name means)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]
    joined: list[str] = []
    for word in words:
        if word == "key" and joined and joined[-1] in ("api", "access", "private", "secret"):
            joined[-1] += "key"
        else:
            joined.append(word)
    return joined


def secret_key(key: str) -> bool:
    """True for a key named for a credential (api_key, x-api-key, access_token, Authorization,
    password...); False for one that counts or tunes (max_tokens, num_ctx, top_k)."""
    words = key_words(key)
    return any(w in SECRET_KEY_WORDS or w.endswith("apikey") or w in ("privatekey",
               "accesskey", "secretkey") for w in words)


def _secret_looking_keys(value: Any, prefix: str = "") -> list[str]:
    """The keys of `value` (at any depth) that hold or are named for a credential."""
    found = []
    items = value.items() if isinstance(value, dict) else \
        ((str(i), v) for i, v in enumerate(value)) if isinstance(value, list) else ()
    for key, inner in items:
        name = f"{prefix}{key}"
        if secret_key(str(key)) or (isinstance(inner, str) and SECRET_VALUE.search(inner)):
            found.append(name)
        found += _secret_looking_keys(inner, f"{name}.")
    return found
