"""`valet service install|status|uninstall` from the install the tests run in.

`--dry-run` prints files whose units pass `systemd-analyze verify` (all in one, and the role
template's instances). Installed for real into another root (`--root`, as `systemctl --root`:
these machines run no systemd to start it), the files have their owners and modes, the
units are enabled by the real `systemctl`, and the environment systemd would give the unit
(Environment=, then the env file over it) makes `valet doctor` read the configuration and data
directory the unit names. `status` finds an env file line that throws a unit's value away;
`uninstall` removes the units and keeps the settings."""

from __future__ import annotations

import asyncio
import os
import pwd
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.service import units
from tests.e2e.deploy_files import DEPLOY, systemd_environment, unit_lines
from tests.e2e.reachable_valet import reachable_valet
from tests.e2e.test_console_pipe import ROOT
from tests.e2e.test_deploy import _tool
from tests.fakes.fake_openai import Reply

SECRET = "sk-service-install-KEY"
# Installing for real writes root's files (even into --root) and valet refuses it otherwise:
# as an ordinary user these stories skip, saying so; CI runs as root.
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="`valet service install` (not --dry-run) "
                             "needs root: run the suite as root, as CI does")


@pytest.fixture(scope="module")
def valet() -> Iterator[str]:
    """Valet installed where the service user can reach it: the product refuses otherwise
    (test_an_install_the_service_user_cannot_reach_is_refused), and the clone running the
    tests may live under a 0700 or 0750 directory."""
    with reachable_valet() as command:
        yield command


@pytest.fixture
def config(tmp_path, fake_llm) -> Path:
    fake_llm.responder = lambda body: Reply(content="ready")
    path = tmp_path / "home" / "valet.yaml"
    path.parent.mkdir()
    path.write_text("owner:\n  name: Sam\n  telegram_ids: ['42']\nmemory:\n  enabled: false\n")
    return path


def _env(config: Path, fake_llm, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VALET_", "OPENAI_"))}
    env.update({"VALET_CONFIG": str(config), "VALET_LLM_BASE_URL": fake_llm.base_url,
                "VALET_LLM_MODEL": "fake-model", "VALET_LLM_API_KEY": SECRET,
                "VALET_DATABASE_URL": f"sqlite:///{config.parent}/data/valet.db",
                "VALET_DATA_DIR": str(config.parent / "data"), "VALET_HTTP_PORT": "8080",
                **extra})
    return env


async def _valet(valet: str, args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        valet, *args, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


def _files(out: str) -> dict[str, str]:
    """The `==> PATH (MODE OWNER) <==` blocks of --dry-run's output."""
    found: dict[str, str] = {}
    for match in re.finditer(r"^==> (\S+) \([0-7]{4} \S+\) <==\n(.*?)(?=\n\n==> |\n\nand run:)",
                             out, re.MULTILINE | re.DOTALL):
        found[match.group(1)] = match.group(2) + "\n"
    return found


def _mode_owner(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def test_the_shipped_units_are_what_service_install_writes():
    for name, text in [("valet.service", units.all_in_one(units.UnitSettings())),
                       ("valet@.service", units.template(units.UnitSettings()))]:
        shipped = (DEPLOY / name).read_text()
        assert shipped[shipped.index("[Unit]"):] == text, name


async def _verified(files: dict[str, str], tmp_path: Path, names: list[str]) -> None:
    analyze = _tool("systemd-analyze")
    here = tmp_path / "verify"
    here.mkdir()
    for path, text in files.items():
        if path.startswith("/etc/systemd/system/"):
            (here / Path(path).name).write_text(text)
    for name in names:
        proc = await asyncio.create_subprocess_exec(
            analyze, "verify", str(here / name), cwd=here, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        said, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert (proc.returncode, said.decode()) == (0, ""), name


async def test_dry_run_prints_an_all_in_one_unit_that_systemd_accepts(valet, config, fake_llm,
                                                                     tmp_path):
    code, out, err = await _valet(valet, ["service", "install", "--dry-run"],
                                  _env(config, fake_llm))
    assert code == 0, err
    files = _files(out)
    assert set(files) == {"/etc/valet/valet.yaml", "/etc/valet/valet.env",
                          "/etc/systemd/system/valet.service"}
    assert f"ExecStart={valet} serve\n" in files["/etc/systemd/system/valet.service"]
    assert "VALET_LLM_API_KEY=***" in files["/etc/valet/valet.env"] and SECRET not in out
    for unit_set in units.SET_BY_UNIT:  # the env file never overrides the unit's own
        assert not re.search(rf"^{unit_set}=", files["/etc/valet/valet.env"], re.MULTILINE)
    assert "systemctl enable --now valet.service" in out
    assert "note: the database sqlite:///" in out  # the one here stays here: it is said
    await _verified(files, tmp_path, ["valet.service"])


async def test_dry_run_with_postgres_and_redis_prints_the_roles(valet, config, fake_llm, tmp_path):
    env = _env(config, fake_llm, VALET_DATABASE_URL="postgresql://valet:pw@db.example/valet",
               VALET_REDIS_URL="redis://redis.example:6379/0")
    code, out, err = await _valet(valet, ["service", "install", "--dry-run"], env)
    assert code == 0, err
    files = _files(out)
    assert files["/etc/valet/worker.env"] == "".join(units.role_env(8081))
    assert files["/etc/valet/scheduler.env"].endswith("VALET_HTTP_PORT=8082\n")
    assert "VALET_DATABASE_URL=postgresql://valet:***@db.example/valet" in out
    assert "systemctl enable --now valet@web.service valet@worker.service " \
           "valet@scheduler.service" in out
    assert "valet migrate" in out
    await _verified(files, tmp_path, ["valet@web.service", "valet@worker.service",
                                      "valet@scheduler.service"])


@AS_ROOT
async def test_installed_into_a_root_with_owners_modes_enabled_and_the_right_settings(valet,
        config, fake_llm, tmp_path):
    root = tmp_path / "root"
    env = _env(config, fake_llm)
    code, out, err = await _valet(valet, ["service", "install", "--root", str(root), "--user",
                                   "nobody"], env)
    assert code == 0, out + err
    etc = root / "etc" / "valet"
    nobody_gid = pwd.getpwnam("nobody").pw_gid
    assert _mode_owner(etc) == (0o750, 0, nobody_gid)
    assert _mode_owner(etc / "valet.yaml") == (0o640, 0, nobody_gid)  # the service reads it
    assert _mode_owner(etc / "valet.env") == (0o600, 0, 0)  # systemd reads it, as root
    unit = root / "etc" / "systemd" / "system" / "valet.service"
    assert _mode_owner(unit) == (0o644, 0, 0)
    assert (root / "etc" / "systemd" / "system" / "multi-user.target.wants" /
            "valet.service").is_symlink()  # enabled, by the real systemctl
    assert f"wrote {etc / 'valet.env'} (0600 root:root)" in out
    assert f"ran systemctl --root={root} enable valet.service" in out
    assert "not started" in out
    assert config.read_text() == (etc / "valet.yaml").read_text()

    # The environment systemd would give it: doctor reads the unit's configuration and data.
    state = root / "var" / "lib" / "valet"
    state.mkdir(parents=True, mode=0o700)
    text = unit.read_text().replace("/etc/valet", str(etc)).replace("/var/lib/valet",
                                                                    str(state))
    service_env = systemd_environment(text, "", {str(etc / "valet.env"):
                                                 (etc / "valet.env").read_text()})
    [workdir] = [v for k, v in unit_lines(text) if k == "WorkingDirectory"]
    code, out, err = await _valet(valet, ["doctor"], {"PATH": os.environ["PATH"], "HOME": workdir,
                                               **service_env})
    assert f"configuration: {etc / 'valet.yaml'}" in out, out + err
    assert f"data directory: {state}" in out and "  ok    owner 'Sam': 1 address(es)" in out
    assert "valet serve listens on: 127.0.0.1:8080" in out

    code, out, err = await _valet(valet, ["service", "status", "--root", str(root)], env)
    assert code == 0, out + err
    assert "valet.service: enabled" in out and out.rstrip().endswith("all good")

    with (etc / "valet.env").open("a") as fh:  # the trap, written by hand
        fh.write("VALET_CONFIG=\n")
    code, out, err = await _valet(valet, ["service", "status", "--root", str(root)], env)
    assert code == 1
    assert f"  FAIL  {etc / 'valet.env'} sets VALET_CONFIG: systemd reads it over the " \
           "unit's Environment=" in out

    code, out, err = await _valet(valet, ["service", "uninstall", "--root", str(root)], env)
    assert code == 0, out + err
    assert not unit.exists() and not (root / "etc" / "systemd" / "system" /
                                      "multi-user.target.wants" / "valet.service").exists()
    assert (etc / "valet.env").exists()  # settings and secrets stay
    assert f"kept {etc}" in out


@AS_ROOT
async def test_roles_installed_into_a_root_are_migrated_and_enabled(valet, config, fake_llm,
                                                                   tmp_path, postgres_dsn,
                                                                   redis_url):
    root = tmp_path / "root"
    env = _env(config, fake_llm, VALET_DATABASE_URL=postgres_dsn, VALET_REDIS_URL=redis_url)
    code, out, err = await _valet(valet, ["service", "install", "--root", str(root), "--user",
                                   "nobody"], env)
    assert code == 0, out + err
    assert re.search(r"^applied \d+ migration\(s\)$", out, re.MULTILINE), out
    wants = root / "etc" / "systemd" / "system" / "multi-user.target.wants"
    assert sorted(p.name for p in wants.iterdir()) == [
        "valet@scheduler.service", "valet@web.service", "valet@worker.service"]
    assert (root / "etc" / "valet" / "worker.env").read_text().endswith("=8081\n")
    code, out, _ = await _valet(valet, ["migrate"], env)
    assert out.startswith("nothing to apply")


async def test_what_cannot_be_installed_is_one_line(valet, config, fake_llm, tmp_path):
    code, _, err = await _valet(valet, ["service", "install", "--role", "web", "--dry-run"],
                                _env(config, fake_llm))
    assert code == 2
    assert err.strip() == ("valet: --role needs Postgres and Redis (VALET_DATABASE_URL, "
                           "VALET_REDIS_URL): one SQLite process runs every role")


@AS_ROOT
async def test_an_unknown_service_user_is_one_line(valet, config, fake_llm, tmp_path):
    code, _, err = await _valet(valet, ["service", "install", "--root", str(tmp_path / "r"),
                                 "--user", "no-such-user-here"], _env(config, fake_llm))
    assert code == 2 and "Traceback" not in err
    assert err.strip().startswith("valet: no user 'no-such-user-here' on this machine")


@AS_ROOT
async def test_a_configuration_the_service_could_not_use_is_refused_before_it_is_enabled(valet,
        config, fake_llm, tmp_path):
    """A relative SQLite path in valet.yaml would point into /etc/valet, where the service may
    not write: said in one line, and nothing is enabled."""
    config.write_text(config.read_text() + "database_url: sqlite:///data/valet.db\n")
    env = _env(config, fake_llm)
    del env["VALET_DATABASE_URL"]
    root = tmp_path / "root"
    code, out, err = await _valet(valet, ["service", "install", "--root", str(root), "--user",
                                   "nobody"], env)
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert line.startswith("valet: the files are written but Valet would refuse them: the "
                           f"database would be {root}/etc/valet/data/valet.db, but the "
                           "service may write only in /var/lib/valet")
    assert not (root / "etc" / "systemd" / "system" / "multi-user.target.wants").exists()


async def test_an_install_the_service_user_cannot_reach_is_refused(config, fake_llm):
    """The check the `valet` fixture works around: a Valet under a 0700 directory (as a clone
    in `mktemp -d` is) is refused in one line naming that directory, nothing written."""
    with reachable_valet() as command:
        home = Path(command).parents[2]
        home.chmod(0o700)
        code, out, err = await _valet(command, ["service", "install", "--dry-run"],
                                      _env(config, fake_llm))
    assert code == 2 and "Traceback" not in err, out + err
    assert err.strip() == (f"valet: {home} is not open to other users (mode 0700): the "
                           f"service user cannot run {command}; install Valet where every "
                           "user may read it, such as /opt/valet")
    assert "==> " not in out
