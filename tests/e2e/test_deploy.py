"""deploy/ as an operator uses it, short of a container engine (none on these machines): Valet
installed as the Dockerfile installs it (its wheel into a fresh virtual environment), the
compose services' exact commands and environment (Dockerfile ENV, then .env, then the
service's `environment:`) run as processes against a real Postgres and Redis; a signed text
and a Telegram update answered; health checks, the image's HEALTHCHECK and /metrics; Caddy
publishing only the webhooks; the units verified by systemd-analyze, the compose file by
docker-compose, the Dockerfile by hadolint.

Where the image and this test differ, on purpose: the wheel's dependencies come from the test
environment (a .pth line) rather than PyPI, because tests have no network; paths inside the
container (/etc/valet, /var/lib/valet) and the services' host names (postgres, redis) are
mapped to this machine's (MAPPED below); the server listens on 127.0.0.1, not 0.0.0.0.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web

from bot.cli.service.units import command_path
from bot.config.channel_sections import HTTPSettings
from tests.e2e.deploy_files import (
    DEPLOY,
    ROOT,
    SECRET_NAME,
    Dockerfile,
    compose,
    compose_environment,
    env_example,
    env_example_set_elsewhere,
)
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.ports import free_port
from tests.server_fixtures import _skip_or_fail

OWNER_CHAT = 42
OWNER_PHONE = "+15551230000"
POSTGRES_PASSWORD = "pg-secret-not-used-here"  # the test server trusts its local clients
# The compose environment's container-only values, mapped to this machine's (see the docstring).
MAPPED = {"VALET_DATABASE_URL", "VALET_REDIS_URL", "VALET_CONFIG", "VALET_DATA_DIR",
          "VALET_PUBLIC_URL", "VALET_HTTP_HOST", "VALET_HTTP_PORT"}


# How to get each tool: pip cannot bring these (hadolint comes with the test dependencies).
INSTALL = {"caddy": "apt-get install caddy", "systemd-analyze": "apt-get install systemd",
           "docker-compose": "apt-get install docker-compose",
           "hadolint": "make .venv/.installed-test"}


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        how = INSTALL.get(name, f"apt-get install {name}")
        _skip_or_fail(f"{name} not found: {how} (tests/ci_services.sh does)")
    return str(found)


# --- Valet installed as the image installs it ---------------------------------------------


def _source(base: Path) -> Path:
    """The checkout as the image's COPY sees it: the files git knows (committed or not) and
    none it ignores. Building in the checkout itself would use setuptools' `build/` there,
    which keeps copies of files since renamed."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    source = base / "source"
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    return source


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with Valet's wheel in it; returns its bin directory."""
    base = tmp_path_factory.mktemp("image")
    wheels, venv = base / "wheels", base / "opt-valet"
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "pip wheel --no-cache-dir --wheel-dir /wheels ." in dockerfile
    assert "/opt/valet/bin/pip install --no-cache-dir --no-index --find-links=/wheels" \
        in re.sub(r"\\\n\s*", "", dockerfile)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-cache-dir", "-q", "--wheel-dir", str(wheels), str(_source(base))],
                   check=True, cwd=base)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv)}))
    # The dependencies the image installs from its wheels; here, the test environment's.
    (site / "_valet_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    [wheel] = wheels.glob("valet-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                    "install", "--no-cache-dir", "--no-index", "--no-deps", "-q", str(wheel)],
                   check=True, cwd=base)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import bot; print(bot.__file__)"],
                           check=True, cwd=base, capture_output=True, text=True,
                           env=_clean_environ()).stdout
    assert where.startswith(str(site)), where  # the wheel's copy, not this checkout
    return venv / "bin"


def _clean_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("VALET_", "OPENAI_", "PYTHON"))}


ROLES = ("web", "worker", "scheduler")  # the compose services that run Valet


def _environment(bin_dir: Path, dotenv: dict[str, str], mapped: dict[str, str],
                 name: str, secrets: Path) -> dict[str, str]:
    """What a Valet container sees (deploy_files.compose_environment: the image's ENV, then
    env_file with every line, empty ones too, then the service's `environment:`), container
    paths mapped: this machine's for the MAPPED settings, and /run/secrets/NAME to
    `secrets`/NAME, checked to be a secret the service is given."""
    service = compose()["services"][name]
    assert service["env_file"] == ".env"
    text = "".join(f"{k}={v}\n" for k, v in dotenv.items())
    env = {**_clean_environ(), **compose_environment(service, Dockerfile.read().env(), text,
                                                      dotenv)}
    env["PATH"] = env["PATH"].replace("/opt/valet/bin", str(bin_dir)).replace(
        "$PATH", os.environ["PATH"])
    for key, value in list(env.items()):
        if key in mapped:
            env[key] = mapped[key]
        elif value.startswith("/run/secrets/"):
            secret = value.removeprefix("/run/secrets/")
            assert secret in service["secrets"], f"{name}: {key} names a secret it lacks"
            env[key] = str(secrets / secret)
    assert set(mapped) <= set(service["environment"]) | {"VALET_PUBLIC_URL"}
    return env


def _secrets(base: Path, **values: str) -> Path:
    """deploy/secrets/ as an operator fills it: one file per secret compose lists, those not
    given empty (a part the set-up does not use)."""
    folder = base / "secrets"
    folder.mkdir(mode=0o700)
    for name in compose()["secrets"]:
        (folder / name).write_text(values.get(name, ""))
    return folder


def _dotenv(**values: str) -> dict[str, str]:
    """.env.example filled in as an operator would; only variables it lists."""
    example, _ = env_example()
    unknown = set(values) - set(example)
    assert not unknown, f"not in .env.example: {unknown}"
    return {**example, **values}


async def _run(command: list[str], env: dict[str, str], cwd: Path
               ) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *command, env=env, cwd=cwd, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


async def _until_ready(url: str, proc: asyncio.subprocess.Process) -> dict:
    async with aiohttp.ClientSession() as http:
        for _ in range(600):
            if proc.returncode is not None:
                said = (await proc.stderr.read()).decode() if proc.stderr else ""
                raise AssertionError(f"valet serve exited early: {said[-2000:]}")
            try:
                async with http.get(url) as resp:
                    if resp.status == 200:
                        return dict(await resp.json())
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("valet serve never became ready")


async def test_compose_services_answer_a_text_and_a_telegram_update(
        installed, postgres_dsn, redis_url, fake_llm, tmp_path):
    fake_llm.responder = lambda body: Reply(content="Hello from the deployment.")
    image, services = Dockerfile.read(), compose()["services"]
    assert image.cmd() == ["valet", "serve"]  # the image alone: everything in one process
    for role in ROLES:
        assert services[role]["command"] == ["valet", "serve", "--role", role]
    ports = {role: free_port() for role in ROLES}
    base = f"http://127.0.0.1:{ports['web']}"
    config = yaml.safe_load((DEPLOY / "valet.example.yaml").read_text())
    config["owner"].update(telegram_ids=[str(OWNER_CHAT)], phone_numbers=[OWNER_PHONE])
    config["memory"] = {"enabled": False}  # its background call would take a scripted reply
    (tmp_path / "valet.yaml").write_text(yaml.safe_dump(config))
    async with FakeTelegram() as tg, FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        dotenv = _dotenv(  # settings that are not secret; the secrets are files
            VALET_DOMAIN="valet.example.com",
            VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="fake-model",
            VALET_TELEGRAM_API_URL=tg.api_url, VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
            VALET_TWILIO_API_URL=twilio.base_url, VALET_SMS_FROM_NUMBER="+15005550006",
            VALET_LOG_LEVEL="INFO")
        secrets = _secrets(tmp_path, postgres_password=POSTGRES_PASSWORD,
                           llm_api_key="sk-test-key", telegram_token=TOKEN,
                           telegram_webhook_secret="tg-webhook-secret",
                           twilio_auth_token=twilio.auth_token, metrics_token="metrics-secret",
                           events_token="e" * 32)  # secret_key left empty: not used here
        envs = {role: _environment(installed, dotenv, {
            "VALET_DATABASE_URL": postgres_dsn, "VALET_REDIS_URL": redis_url,
            "VALET_CONFIG": str(tmp_path / "valet.yaml"), "VALET_DATA_DIR": str(tmp_path / "data"),
            "VALET_PUBLIC_URL": base, "VALET_HTTP_HOST": "127.0.0.1",
            "VALET_HTTP_PORT": str(ports[role])}, role, secrets) for role in ROLES}
        env = {**_environment(installed, dotenv, {
            "VALET_DATABASE_URL": postgres_dsn, "VALET_CONFIG": str(tmp_path / "valet.yaml"),
            "VALET_DATA_DIR": str(tmp_path / "data")}, "migrate", secrets)}
        assert envs["web"]["VALET_TELEGRAM_MODE"] == "webhook"
        assert envs["web"]["VALET_LOG_FORMAT"] == "json"
        for role, role_env in {**envs, "migrate": env}.items():
            # No secret in any container's environment: only the names of its secret files.
            for secret in (POSTGRES_PASSWORD, "sk-test-key", TOKEN, "tg-webhook-secret",
                           twilio.auth_token, "metrics-secret"):
                assert secret not in "\n".join(role_env.values()), role
        assert "VALET_LLM_API_KEY_FILE" not in envs["web"]  # web never calls the LLM

        status, out, err = await _run(services["migrate"]["command"], env, tmp_path)
        assert status == 0, err
        assert re.search(r"^applied \d+ migration\(s\): ", out, re.MULTILINE), out
        assert (await _run(services["migrate"]["command"], env, tmp_path))[1].startswith(
            "nothing to apply")

        procs = {role: await asyncio.create_subprocess_exec(
            *services[role]["command"], env=envs[role], cwd=tmp_path,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
            for role in ROLES}
        logs: dict[str, str] = {}
        try:
            ready = {role: await _until_ready(f"http://127.0.0.1:{ports[role]}/readyz", proc)
                     for role, proc in procs.items()}
            assert ready["web"]["checks"] == {"database": True, "redis": True,
                                              "telegram": True, "sms": True}
            assert ready["worker"]["checks"] == {"database": True, "redis": True,
                                                 "telegram": True, "sms": True,
                                                 "work stream": True}
            assert ready["scheduler"]["checks"] == {"database": True, "redis": True}
            async with http.get(f"{base}/healthz") as resp:
                assert resp.status == 200
            status, _, err = await _run(image.healthcheck(), envs["web"], tmp_path)
            assert status == 0, err

            params = inbound_params(OWNER_PHONE, "hi", sid="SM" + "3" * 32)
            async with await post_signed(http, f"{base}/sms/inbound", f"{base}/sms/inbound",
                                         params, twilio.auth_token) as resp:
                assert resp.status == 200
            await twilio.wait_for(1, timeout=30)
            assert twilio.bodies_to(OWNER_PHONE) == ["Hello from the deployment."]

            assert tg.webhook["url"] == f"{base}/telegram/webhook"
            assert await tg.deliver_webhook(tg.user_says(OWNER_CHAT, "hello")) == 200
            await tg.wait_for(lambda: tg.texts(OWNER_CHAT), timeout=30)
            assert tg.texts(OWNER_CHAT) == ["Hello from the deployment."]

            metrics: dict[str, str] = {}
            for role in ROLES:  # every role serves /metrics; only web serves the webhooks
                local = f"http://127.0.0.1:{ports[role]}"
                async with http.get(f"{local}/metrics") as resp:
                    assert resp.status == 401  # VALET_METRICS_TOKEN is set
                async with http.get(f"{local}/metrics", headers={
                        "Authorization": "Bearer metrics-secret"}) as resp:
                    assert resp.status == 200
                    metrics[role] = await resp.text()
                async with http.post(f"{local}/sms/inbound") as resp:
                    assert (resp.status == 404) == (role != "web"), role
            assert 'valet_turns_total{stop="final_answer"} 2.0' in metrics["worker"]
            assert 'valet_webhook_requests_total{channel="sms",result="acknowledged"} 1.0' \
                in metrics["web"]
            assert 'valet_users_active_today 1.0' in metrics["web"]
            for role, proc in procs.items():
                proc.send_signal(signal.SIGTERM)
                _, err_bytes = await asyncio.wait_for(proc.communicate(), 60)
                logs[role] = err_bytes.decode()
        finally:
            for proc in procs.values():
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    for role, proc in procs.items():
        log = logs[role]
        assert proc.returncode == 0, log
        lines = log.strip().splitlines()
        assert lines and all(line.startswith("{") and line.endswith("}") for line in lines)
    # One log stream per process, its output: no log file rotated by three processes in the
    # shared data volume.
    assert not list((tmp_path / "data").glob("valet.log*"))
    for log in logs.values():
        for secret in ("sk-test-key", TOKEN.split(":")[1], "tg-webhook-secret",
                       twilio.auth_token, "metrics-secret"):
            assert secret not in log


async def test_caddy_publishes_only_the_webhooks(tmp_path):
    caddy = _tool("caddy")
    reached: list[str] = []

    async def upstream(request: web.Request) -> web.Response:
        reached.append(request.path)
        return web.Response(text="valet")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    upstream_port = runner.addresses[0][1]
    port = free_port()
    env = {**_clean_environ(), "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "VALET_DOMAIN": f"http://127.0.0.1:{port}",
           "VALET_UPSTREAM": f"127.0.0.1:{upstream_port}",
           "CADDY_ADMIN": f"127.0.0.1:{free_port()}"}
    proc = await asyncio.create_subprocess_exec(
        caddy, "run", "--config", str(DEPLOY / "Caddyfile"), "--adapter", "caddyfile",
        env=env, cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    public = ["/telegram/webhook", "/sms/inbound", "/sms/status", "/events"]
    private = ["/healthz", "/readyz", "/metrics", "/", "/console", "/telegram/other",
               "/eventsx"]
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(300):
                try:
                    async with http.post(f"http://127.0.0.1:{port}/sms/inbound") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            for path in public + private:
                async with http.post(f"http://127.0.0.1:{port}{path}") as resp:
                    assert resp.status == (200 if path in public else 404), path
                async with http.get(f"http://127.0.0.1:{port}{path}") as resp:
                    assert resp.status == (200 if path in public else 404), path
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), 30)
        await runner.cleanup()
    assert set(reached) == set(public)


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    analyze = _tool("systemd-analyze")
    valet = shutil.which("valet", path=str(Path(sys.executable).parent))
    assert valet is not None
    for name in ("valet.service", "valet@.service"):
        # /opt/valet/bin/valet does not exist here: the same unit, pointed at this valet (as
        # `valet service install` writes it: the clone's path may hold a space).
        text = (DEPLOY / name).read_text()
        (tmp_path / name).write_text(text.replace("/opt/valet/bin/valet", command_path(valet)))
    for unit in ("valet.service", "valet@all.service", "valet@web.service",
                 "valet@worker.service", "valet@scheduler.service"):
        done = subprocess.run([analyze, "verify", str(tmp_path / unit)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout + done.stderr) == (0, ""), unit


@pytest.mark.parametrize("name", ["valet.service", "valet@.service"])
def test_the_units_are_hardened_and_drain_as_long_as_valet_does(name):
    unit = (DEPLOY / name).read_text()
    settings = dict(re.findall(r"^(\w+)=(.*)$", unit, re.MULTILINE))
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict",
                       "StateDirectory": "valet", "Restart": "on-failure",
                       "KillSignal": "SIGTERM", "User": "valet"}.items():
        assert settings.get(key) == value, key
    grace = HTTPSettings().shutdown_grace_seconds
    assert float(settings["TimeoutStopSec"]) >= grace + 5
    assert f"http.shutdown_grace_seconds ({grace:g}" in unit
    serve = "serve --role %i" if "@" in name else "serve"
    assert settings["ExecStart"] == f"/opt/valet/bin/valet {serve}"


def test_compose_stops_valet_after_its_drain():
    for role in ROLES:
        assert compose()["services"][role]["stop_grace_period"] == "30s"
    assert HTTPSettings().shutdown_grace_seconds + 5 <= 30


def test_the_compose_file_is_valid(tmp_path):
    tool = _tool("docker-compose")
    for name in ("docker-compose.yml", "Caddyfile", "valet.example.yaml"):
        shutil.copy(DEPLOY / name, tmp_path / name)
    shutil.copy(DEPLOY / "valet.example.yaml", tmp_path / "valet.yaml")
    dotenv = _dotenv(VALET_DOMAIN="valet.example.com")
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in dotenv.items()))
    _secrets(tmp_path, postgres_password="pw")
    done = subprocess.run([tool, "--project-directory", str(tmp_path), "-f",
                           str(tmp_path / "docker-compose.yml"), "config"],
                          capture_output=True, text=True, timeout=120,
                          env={**_clean_environ(), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    published = {name for name, s in resolved["services"].items() if s.get("ports")}
    assert published == {"caddy"}  # Valet, Postgres and Redis are not reachable from outside
    for name in ("postgres", "redis", *ROLES):
        assert resolved["services"][name]["depends_on" if name in ROLES else "healthcheck"]
    for role in ROLES:  # one schema change at a time: the one-shot `migrate` service first
        assert resolved["services"][role]["depends_on"]["migrate"]["condition"] == \
            "service_completed_successfully"
    assert resolved["services"]["caddy"]["environment"]["VALET_UPSTREAM"] == "web:8080"
    # Caddy forwards to a web process that answers /healthz, not to one still starting.
    assert resolved["services"]["caddy"]["depends_on"] == {
        "web": {"condition": "service_healthy"}}
    web = resolved["services"]["web"]
    assert web["healthcheck"]["test"] == ["CMD", *Dockerfile.read().healthcheck()]
    # Passwords and tokens are compose secrets (files), never values in an environment.
    for name, service in resolved["services"].items():
        for key, value in (service.get("environment") or {}).items():
            assert not (SECRET_NAME.search(key) and not key.endswith("_FILE") and value), \
                (name, key)
    assert resolved["services"]["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"] == \
        "/run/secrets/postgres_password"
    assert {s["source"] for s in resolved["services"]["caddy"].get("secrets", [])} == set()
    assert resolved["services"]["postgres"]["image"] == "postgres:16"
    assert resolved["services"]["redis"]["image"] == "redis:7"


def test_the_dockerfile_lints_clean():
    hadolint = _tool("hadolint")
    done = subprocess.run([hadolint, "--no-color", str(DEPLOY / "Dockerfile")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_the_image_runs_valet_unprivileged_with_no_secret_and_no_test_dependency():
    image = Dockerfile.read()
    assert len(image.stages) == 2  # the wheel is built in the first stage
    assert all(stage[0][1].startswith("python:3.11-slim") for stage in image.stages)
    [user] = image.runtime("USER")
    assert not user.startswith(("root", "0"))
    assert not [k for k in image.env() if SECRET_NAME.search(k)]
    copied = {src for stage in image.stages for word, args in stage if word == "COPY"
              for src in args.split()[:-1]}
    # The package and its metadata only: no tests, no .env, no test extras ([test]).
    assert copied == {"pyproject.toml", "README.md", "bot/", "persona/", "agents/",
                      "channels/", "triggers/", "--from=build", "/wheels"}
    assert "[test]" not in (DEPLOY / "Dockerfile").read_text()
    assert image.runtime("VOLUME") == ['["/var/lib/valet"]']
    assert "/healthz" in " ".join(image.healthcheck())


def test_env_example_names_every_variable_the_readme_names_with_a_comment():
    readme = "".join(page.read_text() for page in [ROOT / "README.md",
                                                   *sorted((ROOT / "docs").glob("*.md"))])
    named = set(re.findall(r"\b((?:VALET|OPENAI)_[A-Z0-9_]+)\b", readme))
    named -= {"VALET_X_FILE", "VALET_X"}  # the _FILE convention's example
    # The test suite's own (docs/operations.md#tests): they choose servers, not settings.
    named -= {"VALET_TEST_SERVERS", "VALET_PG_BIN", "VALET_REDIS_SERVER", "VALET_REFERENCE_DATA"}
    named = {n for n in named if not n.endswith("_FILE")}
    values, comments = env_example()
    elsewhere = env_example_set_elsewhere()  # the units and compose set these: `#NAME=`
    assert named - set(values) - set(elsewhere) == set()
    assert [k for k, c in {**comments, **elsewhere}.items() if not c] == []
    assert [k for k, v in values.items() if SECRET_NAME.search(k) and v] == []
