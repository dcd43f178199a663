"""A `valet` command the service user can reach, wherever the clone running the tests lives.

`valet service install` refuses a Valet that the service user cannot run (a clone under a
0700 `mktemp -d` or a 0750 home): right for the product, but the tests must not depend on
where the clone is. So they install from a small virtual environment under a 0755 directory
in /tmp whose site-packages reach this one's (a `.pth` line: the same packages, Valet's
source included, nothing copied), with a `valet` script as pip writes it."""

from __future__ import annotations

import os
import shutil
import site
import sysconfig
import tempfile
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCRIPT = """#!{python}
import sys

from bot.cli import main

if __name__ == "__main__":
    sys.exit(main())
"""


@contextmanager
def reachable_valet() -> Iterator[str]:
    """The path of a `valet` command under a 0755 directory; removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix="valet-install-", dir="/tmp"))
    try:
        os.chmod(home, 0o755)
        env_dir = home / "venv"
        venv.EnvBuilder(symlinks=True, with_pip=False).create(env_dir)
        python = env_dir / "bin" / "python"
        purelib = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir),
                                                             "platbase": str(env_dir)}))
        # `import site` lines in a .pth run: addsitedir also reads this venv's .pth files
        # (the editable install of Valet's source).
        lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
        (purelib / "valet-tests-parent.pth").write_text("\n".join(lines) + "\n")
        valet = env_dir / "bin" / "valet"
        valet.write_text(SCRIPT.format(python=python))
        valet.chmod(0o755)
        yield str(valet)
    finally:
        shutil.rmtree(home, ignore_errors=True)

