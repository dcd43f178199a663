"""The toy channel, described once (channels/spec.py): turned on by VALET_TOY_URL (where its
service's API is), addresses are the service's user names; what it can do is its `TRAITS`
(traits.py: no buttons, no edits, approvals are answered in words), which its sender
carries. Like Valet's own specs it imports its adapter only when `valet serve` builds it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from channels.spec import Building, Built, ChannelSpec
from tests.fakes.toy_channel.settings import SECTION
from tests.fakes.toy_channel.traits import NAME, TRAITS

if TYPE_CHECKING:
    from bot.setup.onboarding import Step

URL_ENV = "VALET_TOY_URL"


def _build(given: Building) -> Built:
    from tests.fakes.toy_channel.channel import ToyChannel, ToySender

    sender = ToySender(given.env[URL_ENV], lines=given.host.lines,
                       signature=SECTION.of(given.settings).signature)
    return Built(ToyChannel(given.host, sender), sender)


def _onboard() -> Step:
    from tests.fakes.toy_channel.onboard import STEP

    return STEP


SPEC = ChannelSpec(
    traits=TRAITS,
    address="a user name on the toy service",
    configured=lambda settings, env: bool(env.get(URL_ENV)),
    turn_on=URL_ENV,
    build=_build,
    section=SECTION,
    onboard=_onboard,
    webhook_prefix=NAME,
)
