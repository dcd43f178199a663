"""The toy channel, described once (channels/spec.py): turned on by VALET_TOY_URL (where its
service's API is), addresses are the service's user names, no buttons, no edits."""

from __future__ import annotations

from bot.contracts.channels import ChannelTraits
from channels.spec import Abilities, Building, Built, ChannelSpec
from tests.fakes.toy_channel.channel import NAME, ToyChannel, ToySender

URL_ENV = "VALET_TOY_URL"


def _build(given: Building) -> Built:
    sender = ToySender(given.env[URL_ENV])
    return Built(ToyChannel(given.host, sender), sender)


SPEC = ChannelSpec(
    traits=ChannelTraits(NAME, "Toy", a_message="a toy message"),
    address="a user name on the toy service",
    can=Abilities(),
    configured=lambda settings, env: bool(env.get(URL_ENV)),
    turn_on=URL_ENV,
    build=_build,
    webhook_prefix=NAME,
)
