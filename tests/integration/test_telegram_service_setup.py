"""TelegramService.build: the service `valet serve` builds from the settings."""

from __future__ import annotations

from bot.config import TelegramSettings
from channels.telegram.service import TelegramService
from tests.fakes.fake_telegram import TOKEN


async def test_voice_notes_are_transcribed_with_the_configured_api_key(app_factory, fake_llm):
    app = await app_factory(telegram=TelegramSettings(token=TOKEN, api_url="http://127.0.0.1:9"))
    app.settings.llm.transcription_model = "whisper-test"
    service = TelegramService.build(app.channel_host(), app.settings)
    try:
        assert service.transcriber is not None
        text = await service.transcriber.transcribe(b"OggS fake audio")
    finally:
        await service.close()
    assert text == fake_llm.transcript
    # The key itself, not the masked "**********" a SecretStr prints as.
    assert fake_llm.transcription_auth == ["Bearer test-key"]
