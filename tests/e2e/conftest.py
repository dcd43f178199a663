"""End-to-end fixtures: the Telegram harness."""

from tests.e2e.telegram_harness import fake_tg, start_telegram

__all__ = ["fake_tg", "start_telegram"]
