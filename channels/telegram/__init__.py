"""The Telegram channel: python-telegram-bot inside Valet's event loop."""

import os

# python-telegram-bot 22 warns on every `RetryAfter.retry_after` read until this opt-in to the
# coming `timedelta` type; the adapter reads both forms.
os.environ.setdefault("PTB_TIMEDELTA", "1")
