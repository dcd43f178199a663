"""`valet onboard`: set Valet up, step by step, checking each answer against the real
service before going on: the LLM endpoint, Telegram, Twilio, the public address, the
timezone. It generates the secrets Valet needs (VALET_SECRET_KEY, the webhook secret, the
events token), writes valet.yaml (`--config PATH` or VALET_CONFIG: created if it does not
exist) and the env file beside it (0600, loaded by every `valet` command), and ends with
`valet doctor --fix`. Run again, it offers each step that is set up to keep, the rest with
what is there as the defaults, and edits the files in place. In a terminal any question may
be answered "skip" or "back", and Ctrl-C keeps the steps already confirmed (onboard.flow).

In a terminal it asks; with `--yes` it asks nothing: answers come from the flags, the
environment (secrets: VALET_LLM_API_KEY, VALET_TELEGRAM_TOKEN, VALET_TWILIO_ACCOUNT_SID,
VALET_TWILIO_AUTH_TOKEN), the configuration as it is, or the defaults."""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path

from bot.cli.onboard import current
from bot.cli.onboard.flow import Ending, Step, run_steps
from bot.cli.onboard.steps import llm_step, person_step, public_url_step
from bot.config import Settings
from bot.config.env_file import EnvFileError, default_env_file
from bot.config.loading import config_path
from bot.config.yaml_edit import YamlEditError
from bot.setup.ask import OnboardStop, questions
from bot.setup.draft import env_after
from bot.setup.onboarding import Context
from bot.text.redact import redact_text
from channels.registry import BUILT_IN, load_channel_settings

EXIT_STOPPED = 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as for every command


def add_onboard_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("onboard", help="set Valet up step by step (LLM, Telegram, Twilio, the "
                       "public address), each answer checked; writes valet.yaml and the env "
                       "file, then runs valet doctor --fix")
    p.add_argument("--yes", action="store_true", help="ask nothing: answers from the flags, "
                   "the environment (secrets), the configuration as it is, or the defaults")
    p.add_argument("--llm-base-url", help="the OpenAI-compatible endpoint")
    p.add_argument("--llm-model", help="the model")
    for step in CHANNEL_STEPS:
        if step.flags is not None:
            step.flags(p)
    p.add_argument("--public-url", help="where this server is reached (https)")
    p.add_argument("--timezone", help="the owner's timezone (IANA name)")
    p.add_argument("--owner-name", help="what Valet calls its owner")


# Each channel's own step (channels/<name>/onboard.py), in the registry's order: Valet's own
# channels (a channel added by valet.yaml is set up by hand: onboard writes that file).
CHANNEL_STEPS = [spec.onboard() for spec in BUILT_IN if spec.onboard is not None]
STEPS = [
    Step("The LLM (any OpenAI-compatible endpoint)", llm_step, current.llm),
    *CHANNEL_STEPS,
    Step("The public address", partial(public_url_step, CHANNEL_STEPS), current.public_url),
    Step("You", person_step, current.person),
]


async def run_onboard(settings: Settings, args: argparse.Namespace) -> int:
    config, _ = config_path(args.config, dict(os.environ))
    env_file = Path(args.env_file) if getattr(args, "env_file", None) else \
        default_env_file(config)
    try:
        q = questions(args.yes)
        q.say(f"Setting Valet up: {config} and {env_file} (secrets, readable by you only).")
        c = Context(q, args, settings, dict(os.environ))
        ending, done = await run_steps(c, STEPS)
        if ending is Ending.INTERRUPTED:
            return _interrupted(c, config, env_file, done)
        made = c.draft.generate_secrets(c.env)
        after, shadowed = env_after(c.draft, env_file, os.environ)
        c.draft.write(config, env_file)
    except (OnboardStop, YamlEditError, EnvFileError, OSError) as err:
        print(f"valet onboard: {err}", file=sys.stderr)
        return EXIT_STOPPED
    q.say(f"\nWrote {config} and {env_file}" + (f"; generated {', '.join(made)}" if made
                                                 else ""))
    for name in shadowed:
        q.say(f"note: {name} is also set in your shell, and wins over {env_file.name}: unset "
              "it to use the new value")
    for step in c.draft.next_steps:
        q.say(f"next: {step}")
    return await _doctor(config, after)


def _interrupted(c: Context, config: Path, env_file: Path, done: int) -> int:
    """Ctrl-C: what was confirmed is written (the step under way is not), and said."""
    if not c.draft.has_changes():
        print("\nvalet onboard: stopped; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        c.draft.write(config, env_file)
    except (YamlEditError, EnvFileError, OSError) as err:
        print(f"\nvalet onboard: stopped, and what was confirmed could not be written: {err}",
              file=sys.stderr)
        return EXIT_STOPPED
    print(f"\nvalet onboard: stopped; the {done} step(s) confirmed are written to {config} "
          f"and {env_file}. `valet onboard` again offers them as they are and goes on.",
          file=sys.stderr)
    return EXIT_INTERRUPTED


async def _doctor(config: Path, env: dict[str, str]) -> int:
    """`valet doctor --fix` on what was written, as the next `valet` will read it. It never
    ends in a traceback: a check that fails is its own FAIL line, and anything else (the new
    configuration unreadable) one line saying that what was written stays."""
    from bot.cli.doctor import run_doctor

    for name in set(os.environ) - set(env):
        del os.environ[name]
    os.environ.update(env)  # the capability checks read the key from here
    print("\nvalet doctor --fix")
    try:
        settings = load_channel_settings(str(config), env=env)
        code = await run_doctor(settings, print, fix=True, env=env)
    except Exception as err:  # ConfigError, or anything a check did not keep to itself
        print(f"valet onboard: the last step (valet doctor --fix) could not finish: "
              f"{type(err).__name__}: {redact_text(str(err))[:300]}; {config} is written: "
              "run `valet doctor` to see what it says", file=sys.stderr)
        return 1
    if code == 0:
        print("\nReady: `valet serve` runs Valet (and `valet chat` talks to it from here).")
    else:
        print("\nWritten, with the problem(s) above: fix them and run `valet doctor` (or "
              "`valet onboard` again: Enter keeps each answer).")
    return code
