"""Settings: `valet.yaml` (optional) plus environment overrides, checked whole at start-up.

Secrets come only from the environment and are kept in `SecretStr` (never printed). Every
mistake of the file is reported at once, each as `file:line: key: what is wrong`.

The package's modules: `settings` (the whole, `Settings`), `loading` (`load_settings`), the
sections in `sections`, `llm_sections` and `channel_sections`, and `problems` (`ConfigError`).
The three names almost every part needs are importable from here too.
"""

from bot.config.loading import load_settings
from bot.config.problems import ConfigError
from bot.config.settings import Settings

__all__ = ["ConfigError", "Settings", "load_settings"]
