"""Which registry files a deployment has: the built-in one shipped with the agents package
(`agents/registry.yaml`, located as package data), then the deployment's own
(`agents.registries`, relative to valet.yaml). The registry loader (agents.registry) reads
them; configuration reads only the tool module names they list, to check `tools:` keys."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from pathlib import Path

BUILTIN_REGISTRY = Path(str(resources.files("agents").joinpath("registry.yaml")))


def registry_paths(extra: Iterable[str], base_dir: Path | None = None) -> list[Path]:
    """The built-in file, then the deployment's (relative to `base_dir`)."""
    paths = [BUILTIN_REGISTRY]
    for name in extra:
        path = Path(name).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        paths.append(path)
    return paths
