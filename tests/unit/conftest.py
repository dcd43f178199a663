"""What the unit tests share."""

from __future__ import annotations

import pytest

from channels import registry
from channels.spec import ChannelSpec
from tests.fakes.toy_channel.spec import SPEC as TOY


# The channel tests read the registry, never a list of their own: each that takes `built_in`
# runs on Valet's channels, and again with the toy channel added as one of Valet's own (one
# more line of BUILT_IN, nothing else), which is what adding a channel is
# (docs/extending.md, "Adding a channel"): they pass without editing any list.
@pytest.fixture(params=["valet's own", "with the toy channel built in"])
def built_in(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
             ) -> tuple[ChannelSpec, ...]:
    if request.param != "valet's own":
        monkeypatch.setattr(registry, "BUILT_IN", (*registry.BUILT_IN, TOY))
    return registry.BUILT_IN
