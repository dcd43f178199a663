"""A sender on the shared Twilio account, as a channel's own section names it: a number or a
Messaging Service (`TwilioSender`, the base of such a section). SMS is the account's channel by
default; another channel whose section names a sender takes the account for itself unless SMS
names one too (`account_claimed_elsewhere`), without SMS knowing which channel that is."""

from __future__ import annotations

from bot.config import Settings
from bot.config.sections import Section


class TwilioSender(Section):
    from_number: str | None = None  # the sender's number, E.164
    messaging_service_sid: str | None = None  # or a Messaging Service (MG...) with it

    def names_a_sender(self) -> bool:
        return bool(self.from_number or self.messaging_service_sid)


def account_claimed_elsewhere(settings: Settings) -> bool:
    """A channel's own section names a sender on the account (WhatsApp's)."""
    return any(isinstance(section, TwilioSender) and section.names_a_sender()
               for section in settings.channel_sections())


