"""The guide's set-ups give Valet the guide's settings. The environment of each set-up is
built exactly as its runner builds it, then `valet doctor` runs in it and says which
configuration, data directory and address Valet uses:

- systemd (systemd.exec(5)): every `Environment=` of the unit, then every `EnvironmentFile=`
  read OVER them, in order; /etc/valet/valet.env is .env.example filled in as
  docs/going-live.md says, /etc/valet/ROLE.env what the guide echoes into it;
- compose: the image's ENV, then `env_file` (every line, empty ones too), then the service's
  `environment:`, its secrets as files.

Paths of the real machine (/etc/valet, /var/lib/valet, /opt/valet, /run/secrets) are mapped
into the test's directory; nothing else differs. A control shows the check catches the trap
this guards against: an env file with an empty `VALET_CONFIG=` line empties the unit's value.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.deploy_files import (
    DEPLOY,
    ROOT,
    Dockerfile,
    compose,
    compose_environment,
    env_example,
    systemd_environment,
    unit_lines,
)
from tests.fakes.fake_openai import Reply

GUIDE = ROOT / "docs" / "going-live.md"
VALET = shutil.which("valet", path=str(Path(sys.executable).parent))
OWNER = {"name": "Sam", "telegram_ids": ["42"], "phone_numbers": ["+15551230000"]}


def _guide_block(after: str) -> str:
    """The first ```sh block of the guide after the line containing `after`."""
    text = GUIDE.read_text()
    start = text.index(after)
    block = re.search(r"```sh\n(.*?)```", text[start:], re.DOTALL)
    assert block, f"no sh block after {after!r} in {GUIDE}"
    return block.group(1)


def _guide_valet_env(**test_only: str) -> str:
    """/etc/valet/valet.env as the guide has it made: .env.example, each value the guide
    gives filled in (its lines, comments dropped), then the test's own lines (fakes instead
    of the internet), written as an operator's editor leaves the file."""
    example = (DEPLOY / ".env.example").read_text()
    given: dict[str, str] = {}
    for line in _guide_block("In `valet.env`").splitlines():
        if re.match(r"^[A-Z_]+=", line):
            key, _, value = line.partition("=")
            given[key] = value.split("#", 1)[0].strip()
    given.update(test_only)
    lines = []
    for line in example.splitlines():
        key = line.partition("=")[0]
        lines.append(f"{key}={given.pop(key)}" if key in given and "=" in line
                     and not line.startswith("#") else line)
    assert not set(given) - set(test_only), f"the guide sets what .env.example lacks: {given}"
    return "\n".join(lines + [f"{k}={v}" for k, v in given.items()]) + "\n"


def _role_env_files() -> dict[str, str]:
    """What the guide writes into /etc/valet/ROLE.env (`echo X=Y | sudo tee ...`)."""
    found = re.findall(r"echo (VALET_[A-Z_]+=\S+) \| sudo tee /etc/valet/(\w+)\.env",
                       GUIDE.read_text())
    assert found, "the guide no longer writes a role's env file"
    return {f"/etc/valet/{role}.env": line + "\n" for line, role in found}


@pytest.fixture(autouse=True)
def _llm_answers(fake_llm):
    fake_llm.responder = lambda body: Reply(content="ready")


def _machine(tmp_path: Path) -> dict[str, Path]:
    etc, state = tmp_path / "etc" / "valet", tmp_path / "var" / "lib" / "valet"
    etc.mkdir(parents=True)
    state.mkdir(parents=True, mode=0o700)  # StateDirectory=valet makes it
    config = yaml.safe_load((DEPLOY / "valet.example.yaml").read_text())
    config["owner"] = OWNER
    config["memory"] = {"enabled": False}
    (etc / "valet.yaml").write_text(yaml.safe_dump(config))  # install -m 0644 ... valet.yaml
    return {"/etc/valet": etc, "/var/lib/valet": state}


def _mapped(text: str, paths: dict[str, Path]) -> str:
    for real, here in paths.items():
        text = text.replace(real, str(here))
    return text


async def _doctor(env: dict[str, str], cwd: Path) -> list[str]:
    """`valet doctor` in that environment (a subprocess: the fake servers keep answering)."""
    assert VALET is not None
    proc = await asyncio.create_subprocess_exec(
        VALET, "doctor", env={**env, "PATH": os.environ["PATH"], "HOME": str(cwd)}, cwd=cwd,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert b"Traceback" not in err, err.decode()
    return out.decode().splitlines()


def _unit_env(unit_name: str, instance: str, paths: dict[str, Path],
              files: dict[str, str]) -> tuple[dict[str, str], Path]:
    unit = _mapped((DEPLOY / unit_name).read_text(), paths)
    env = systemd_environment(unit, instance, {_mapped(k, paths): v for k, v in files.items()})
    [workdir] = [v for k, v in unit_lines(unit) if k == "WorkingDirectory"]
    return env, Path(workdir)


def _says_the_guides_settings(lines: list[str], paths: dict[str, Path], listens: str) -> None:
    assert f"configuration: {paths['/etc/valet'] / 'valet.yaml'}" in lines, lines
    assert f"data directory: {paths['/var/lib/valet']}" in lines, lines
    assert f"valet serve listens on: {listens}" in lines, lines
    assert "  ok    owner 'Sam': 2 address(es)" in lines, lines  # valet.yaml's owner


async def test_valet_service_runs_on_the_guides_settings(tmp_path, fake_llm):
    paths = _machine(tmp_path)
    files = {"/etc/valet/valet.env": _guide_valet_env(VALET_LLM_BASE_URL=fake_llm.base_url,
                                                      VALET_TELEGRAM_API_URL=fake_llm.base_url,
                                                      VALET_TWILIO_API_URL=fake_llm.base_url)}
    env, workdir = _unit_env("valet.service", "", paths, files)
    _says_the_guides_settings(await _doctor(env, workdir), paths, "127.0.0.1:8080")


@pytest.mark.parametrize(("role", "port"), [("web", 8080), ("worker", 8081),
                                            ("scheduler", 8082)])
async def test_each_valet_at_role_runs_on_the_guides_settings(tmp_path, fake_llm, postgres_dsn,
                                                        redis_url, role, port):
    paths = _machine(tmp_path)
    files = {"/etc/valet/valet.env": _guide_valet_env(
        VALET_LLM_BASE_URL=fake_llm.base_url, VALET_TELEGRAM_API_URL=fake_llm.base_url,
        VALET_TWILIO_API_URL=fake_llm.base_url, VALET_DATABASE_URL=postgres_dsn,
        VALET_REDIS_URL=redis_url), **_role_env_files()}
    env, workdir = _unit_env("valet@.service", role, paths, files)
    lines = await _doctor(env, workdir)
    _says_the_guides_settings(lines, paths, f"127.0.0.1:{port}")
    assert any(line.startswith("  ok    redis redis://") for line in lines), lines


def test_no_unit_setting_is_in_the_env_example():
    """A line in the env file, even an empty one, wins over the unit's Environment=."""
    values, _ = env_example()
    for name in ("valet.service", "valet@.service"):
        set_by_unit = {assignment.partition("=")[0]
                       for key, value in unit_lines((DEPLOY / name).read_text())
                       if key == "Environment" for assignment in value.split()}
        assert set_by_unit, name
        assert set_by_unit & set(values) == set(), name


async def test_the_check_catches_an_env_file_that_empties_a_unit_setting(tmp_path, fake_llm):
    """The trap itself: `VALET_CONFIG=` (empty) in the env file throws the unit's value away
    and Valet runs on its defaults, data in the user's home. The check above would fail."""
    paths = _machine(tmp_path)
    files = {"/etc/valet/valet.env": "VALET_CONFIG=\nVALET_DATA_DIR=\n"
                                     f"VALET_LLM_BASE_URL={fake_llm.base_url}\n"
                                     "VALET_LLM_MODEL=fake-model\n"}
    env, workdir = _unit_env("valet.service", "", paths, files)
    assert env["VALET_CONFIG"] == "" and env["VALET_DATA_DIR"] == ""
    lines = await _doctor(env, workdir)
    assert "configuration: <defaults>" in lines
    assert f"configuration: {paths['/etc/valet'] / 'valet.yaml'}" not in lines


@pytest.mark.parametrize("role", ["web", "worker", "scheduler"])
async def test_each_compose_service_runs_on_the_guides_settings(tmp_path, fake_llm, postgres_dsn,
                                                          redis_url, role):
    paths = _machine(tmp_path)
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    for name in compose()["secrets"]:  # as the guide makes them; unused ones empty
        (secrets / name).write_text("e" * 32 if name.endswith("token") else "")
    dotenv = (DEPLOY / ".env.example").read_text().replace(
        "VALET_DOMAIN=\n", "VALET_DOMAIN=valet.example.com\n").replace(
        "VALET_LLM_MODEL=\n", "VALET_LLM_MODEL=fake-model\n").replace(
        "VALET_LLM_BASE_URL=\n", f"VALET_LLM_BASE_URL={fake_llm.base_url}\n").replace(
        "VALET_TELEGRAM_API_URL=\n", f"VALET_TELEGRAM_API_URL={fake_llm.base_url}\n")
    service = compose()["services"][role]
    env = compose_environment(service, Dockerfile.read().env(), dotenv,
                              {"VALET_DOMAIN": "valet.example.com"})
    container = {"/etc/valet": paths["/etc/valet"], "/var/lib/valet": paths["/var/lib/valet"],
                 "/run/secrets": secrets}
    env = {k: _mapped(v, container) for k, v in env.items()}
    env["VALET_DATABASE_URL"], env["VALET_REDIS_URL"] = postgres_dsn, redis_url  # host names
    env.pop("VALET_DATABASE_PASSWORD_FILE")  # the test server trusts its local clients
    lines = await _doctor(env, paths["/var/lib/valet"])  # the image's WORKDIR
    assert f"configuration: {paths['/etc/valet'] / 'valet.yaml'}" in lines, lines
    assert f"data directory: {paths['/var/lib/valet']}" in lines, lines
    assert "valet serve listens on: 0.0.0.0:8080" in lines, lines
    assert "  ok    owner 'Sam': 2 address(es)" in lines, lines
    # Its own secrets only: the events token is the web service's (POST /events).
    events = "  ok    VALET_EVENTS_TOKEN set (POST /events)"
    assert (events in lines) == (role == "web"), lines


def test_the_guides_compose_commands_name_real_services():
    """`docker compose stop valet` once named a service that does not exist."""
    services = set(compose()["services"])
    named = []
    for page in (GUIDE, ROOT / "docs" / "operations.md", DEPLOY / "docker-compose.yml"):
        for verb, words in re.findall(r"docker compose (stop|start|restart|logs|exec|run)"
                                      r"(?: -[-\w]+)* ([a-z][a-z ]*[a-z])", page.read_text()):
            # stop/start/restart/logs take services; exec and run one, then its command
            named += words.split() if verb in ("stop", "start", "restart", "logs") else \
                words.split()[:1]
    assert set(named) <= services, set(named) - services
    assert len(named) >= 8  # the guide's commands were found at all


def test_every_test_the_guide_names_exists():
    """`# tested: FILE::TEST` in the guide's blocks names a test that is there."""
    for path, test in re.findall(r"(tests/[\w/]+\.py)::(\w+)", GUIDE.read_text()):
        assert f"def {test}(" in (ROOT / path).read_text(), f"{path}::{test}"
