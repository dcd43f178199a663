"""The one list of channels (channels/registry.py): Valet's own, then those valet.yaml's
`channel_modules:` adds; a module that cannot be used is a configuration error naming it."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, Settings
from channels.console import ConsoleChannel
from channels.registry import BUILT_IN, MIGRATIONS, specs
from persona.lines import DEFAULT
from tests.fakes.toy_channel.channel import ToySender


def with_modules(*modules: str) -> Settings:
    return Settings(channel_modules=list(modules))


def test_valet_s_own_channels_in_their_order_each_named_once():
    assert specs().names() == ("console", "telegram", "sms", "whatsapp")
    assert len({s.name for s in BUILT_IN}) == len(BUILT_IN)
    # The channels with tables of their own.
    assert MIGRATIONS == ("channels.sms", "channels.whatsapp")
    assert [s.name for s in BUILT_IN if s.onboard] == ["telegram", "sms", "whatsapp"]


def test_a_module_of_valet_yaml_adds_its_channel_after_valet_s_own():
    found = specs(with_modules("tests.fakes.toy_channel.spec"))
    assert found.names() == ("console", "telegram", "sms", "whatsapp", "toy")
    toy = found.named("toy")
    assert toy is not None and toy.title == "Toy" and toy.webhook_prefix == "toy"
    assert [t.name for t in found.traits()][-1] == "toy"
    assert [s.name for s in found.configured(Settings(), {"VALET_TOY_URL": "http://x"})] \
        == ["toy"]


@pytest.mark.parametrize(("module", "said"), [
    ("tests.fakes.no_such_channel", "channel_modules: tests.fakes.no_such_channel: cannot be "
                                    "imported (No module named 'tests.fakes.no_such_channel')"),
    ("tests.fakes.toy_channel.channel", "channel_modules: tests.fakes.toy_channel.channel: has "
                                        "no SPEC (a channels.spec.ChannelSpec)"),
    ("channels.sms.spec", "channel_modules: channels.sms.spec: a channel named 'sms' exists "
                          "already"),
])
def test_a_module_that_cannot_be_used_is_one_clear_error(module, said):
    with pytest.raises(ConfigError) as err:
        specs(with_modules(module))
    assert str(err.value) == said


async def test_what_a_spec_says_a_channel_can_do_is_what_its_sender_does():
    from channels.sms.adapter import SmsSender, TwilioAccount
    from channels.telegram.adapter import TelegramChannel
    from channels.whatsapp.sender import WhatsAppSender

    sms = SmsSender(TwilioAccount(account_sid="AC" + "0" * 32, auth_token="t",
                                  from_number="+15005550006"),
                    store=None, identities=None, clock=None, lines=DEFAULT)
    await sms.close()
    whatsapp = WhatsAppSender(TwilioAccount(account_sid="AC" + "0" * 32, auth_token="t",
                                            from_number="+14155238886"),
                              store=None, identities=None, door=None, clock=None,
                              lines=DEFAULT, templates={})
    await whatsapp.close()
    senders = {"telegram": TelegramChannel.features, "console": ConsoleChannel.features,
               "sms": sms.features, "whatsapp": whatsapp.features, "toy": ToySender.features}
    found = specs(with_modules("tests.fakes.toy_channel.spec"))
    assert sorted(senders) == sorted(found.names())
    for spec in found:
        features = senders[spec.name]
        assert (spec.can.edit, spec.can.buttons) == (features.edit, features.buttons)
        # Billed in segments: a reply is held to what fits, the rest sent on MORE.
        assert spec.can.segments == (features.reply_brevity is not None)
