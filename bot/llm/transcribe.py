"""Speech to text through the same OpenAI-compatible endpoint as the LLM
(`POST /audio/transcriptions`, the model from `llm.transcription_model`)."""

from __future__ import annotations

import logging

import openai

log = logging.getLogger(__name__)


class TranscriptionError(Exception):
    """The audio could not be turned into text; the message says why, for a log line."""


class Transcriber:
    def __init__(self, *, base_url: str | None, api_key: str, model: str,
                 timeout: float = 60.0) -> None:
        self.model = model
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=1,
                                          timeout=timeout)

    async def transcribe(self, audio: bytes, filename: str = "voice.ogg") -> str:
        try:
            result = await self._client.audio.transcriptions.create(
                model=self.model, file=(filename, audio))
        except openai.OpenAIError as err:
            raise TranscriptionError(f"{type(err).__name__}: {err}") from err
        text = (getattr(result, "text", "") or "").strip()
        if not text:
            raise TranscriptionError("the endpoint returned no text")
        return text

    async def close(self) -> None:
        await self._client.close()
