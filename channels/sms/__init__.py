"""SMS over Twilio: signed webhooks in (`webhook`, `inbound`), the REST API out (`adapter`),
text that reads well and costs few segments (`render`, `gsm`).

The composition root builds it on a `ChannelHost` (bot.gateway.door): `build_sms_channel(host,
settings)`, registers `channel.sender` with the outbox, mounts `channel.routes()`, then
`await channel.start()` ... `await channel.stop()`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The channel itself (and twilio, about 90 ms to import) loads only when it is asked for:
# `channels.sms.store` alone (the SMS tables, read by metrics and the console) does not need it.
if TYPE_CHECKING:
    from channels.sms.channel import SmsChannel, build_sms_channel, twilio_account

__all__ = ["SmsChannel", "build_sms_channel", "twilio_account"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from channels.sms import channel

        return getattr(channel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
