"""The one list of channels (channels/registry.py): Valet's own, then those valet.yaml's
`channel_modules:` adds; a module that cannot be used is a configuration error naming it."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

from bot.channel import ChannelSender
from bot.config import ConfigError, Settings
from channels.registry import BUILT_IN, MIGRATIONS, specs
from channels.spec import ChannelSpec
from persona.lines import DEFAULT

ROOT = Path(__file__).resolve().parents[2]


def with_modules(*modules: str) -> Settings:
    return Settings(channel_modules=list(modules))


def test_valet_s_own_channels_in_their_order_each_named_once(built_in):
    names = specs().names()
    assert names == tuple(s.name for s in built_in) and names[0] == "console"
    assert len(set(names)) == len(names)
    # The packages whose migrations make channels' tables, each there (SMS keeps its own).
    assert MIGRATIONS == tuple(s.migrations for s in BUILT_IN if s.migrations)
    assert "channels.sms" in MIGRATIONS
    for package in MIGRATIONS:
        assert (ROOT / package.replace(".", "/") / "migrations").is_dir(), package
    # Every channel `valet serve` runs has its step in `valet onboard`; the terminal has none.
    assert [s.name for s in built_in if s.onboard] == [s.name for s in built_in if s.build]
    for spec in built_in:
        assert spec.onboard is None or spec.onboard().title, spec.name


def test_a_module_of_valet_yaml_adds_its_channel_after_valet_s_own():
    found = specs(with_modules("tests.fakes.toy_channel.spec"))
    assert found.names() == (*specs().names(), "toy")
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


def senders_of(spec: ChannelSpec) -> list[type[ChannelSender]]:
    """The sender classes of the channel's package (the package of the module whose SPEC it
    is), found by what they carry: the spec's own traits."""
    home = next(m for m in list(sys.modules.values()) if getattr(m, "SPEC", None) is spec)
    package = home.__name__.rpartition(".")[0]
    for found in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        importlib.import_module(found.name)

    def below(cls: type[ChannelSender]) -> list[type[ChannelSender]]:
        return [c for sub in cls.__subclasses__() for c in (sub, *below(sub))]

    return [c for c in below(ChannelSender) if c.__module__.startswith(package + ".")
            and vars(c).get("traits") is spec.traits]


# What a sender does itself when its traits say the channel can (else the base's nothing).
DOES = {"edit": "edit", "buttons": "answer_button", "typing": "typing", "progress": "progress",
        "media": "fetch_media"}


async def test_what_a_spec_says_a_channel_can_do_is_what_its_sender_does(built_in):
    from channels.sms.adapter import SmsSender, TwilioAccount

    found = specs()
    for spec in found:
        senders = senders_of(spec)
        assert senders, f"{spec.name}: no ChannelSender carries its traits"
        for sender in senders:
            for can, method in DOES.items():
                if getattr(spec.traits, can):
                    assert getattr(sender, method) is not getattr(ChannelSender, method), \
                        (spec.name, sender.__name__, method)
            # It costs money exactly when the spec says in what unit (its Usage).
            assert spec.traits.priced == (spec.usage is not None)
            assert spec.traits.priced == (sender.quote is not ChannelSender.quote)
    # Billed in segments: a reply is held to what fits, the rest sent on MORE.
    sms = SmsSender(TwilioAccount(account_sid="AC" + "0" * 32, auth_token="t",
                                  from_number="+15005550006"),
                    store=None, identities=None, clock=None, lines=DEFAULT)
    await sms.close()
    assert sms.traits.segments and sms.brevity(triggered=False) is not None
    for spec in found:
        if not spec.traits.segments:
            assert all(s.brevity is ChannelSender.brevity for s in senders_of(spec)), spec.name
