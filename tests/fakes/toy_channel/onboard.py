"""The toy channel's step of `valet onboard`: where its service's API is (VALET_TOY_URL)."""

from __future__ import annotations

from bot.setup.ask import Question
from bot.setup.onboarding import Context, Parser, Step
from tests.fakes.toy_channel.traits import NAME

URL_ENV = "VALET_TOY_URL"


def flags(p: Parser) -> None:
    p.add_argument("--toy-url", help="the toy service's API address")


def current(c: Context) -> str | None:
    url = c.env.get(URL_ENV)
    return f"the toy service at {url}" if url else None


async def run(c: Context) -> None:
    c.draft.env[URL_ENV] = await c.q.answer(Question(
        "The toy service's API address", "--toy-url", default=c.env.get(URL_ENV),
        given=c.args.toy_url))


STEP = Step(title=f"The {NAME} channel", run=run, current=current, flags=flags)
