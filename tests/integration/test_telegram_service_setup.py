"""TelegramService.build: the service `valet serve` builds from the settings."""

from __future__ import annotations

from bot.config.channel_sections import TelegramSettings
from channels.telegram.service import TelegramService
from tests.fakes.fake_telegram import TOKEN


async def test_voice_notes_are_transcribed_with_the_configured_api_key(app_factory,
                                                                      app_settings, fake_llm):
    """The app hears voice notes (when their turn runs); the channel only knows it can."""
    llm = app_settings().llm.model_copy(update={"transcription_model": "whisper-test"})
    app = await app_factory(telegram=TelegramSettings(token=TOKEN, api_url="http://127.0.0.1:9"),
                            llm=llm)
    service = TelegramService.build(app.channel_host(), app.settings)
    try:
        assert app.transcriber is not None and service.inbound.settings.hears_voice
        text = await app.transcriber.transcribe(b"OggS fake audio")
    finally:
        await service.close()
    assert text == fake_llm.transcript
    # The key itself, not the masked "**********" a SecretStr prints as.
    assert fake_llm.transcription_auth == ["Bearer test-key"]
