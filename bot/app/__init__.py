"""The composition root: the one place that knows every part (core, channels, triggers,
agents), builds them in order and closes them in reverse. The core never imports it."""

from bot.app.base import build_agents
from bot.app.models import NO_LLM_MESSAGE, build_llm
from bot.app.owner import OWNER_ID
from bot.app.root import App

__all__ = ["NO_LLM_MESSAGE", "OWNER_ID", "App", "build_agents", "build_llm"]
