"""A careless operator runs `valet`: each mistake is one plain line naming what to fix, exit
status 2, never a traceback, and no secret from a URL on the screen."""

from __future__ import annotations

from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.fakes.fake_openai import Reply
from tests.ports import free_port

SECRET = "s3cr3t-PASSWORD"


def llm_env(tmp_path, fake_llm, **extra: str) -> dict[str, str]:
    return clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                     VALET_LLM_MODEL="fake-model", **extra)


def assert_stopped_plainly(code: int, out: str, err: str, *, lines: int = 1) -> list[str]:
    said = err.strip().splitlines()
    assert code == 2, err
    assert "Traceback" not in err and "Traceback" not in out
    assert len(said) == lines, err
    assert all(line.startswith("valet: ") for line in said)
    return said


async def test_every_mistake_of_the_file_is_reported_at_once_with_its_line(tmp_path, fake_llm):
    env = llm_env(tmp_path, fake_llm)
    (tmp_path / "valet.yaml").write_text(
        "loop:\n"
        "  max_turns: -3\n"
        "tools:\n"
        "  web_fech:\n"
        "    allowed_hosts: [intranet]\n"
        "approvals:\n"
        "  timeout_minute: 5\n"
        "llm:\n"
        "  extra_body:\n"
        "    api_key: sk-in-the-file\n")
    code, out, err = await run_valet(["chat"], env, "hi\n")
    said = assert_stopped_plainly(code, out, err, lines=4)
    path = tmp_path / "valet.yaml"
    assert said[0] == f"valet: {path}:2: loop.max_turns: must be more than 0 (it is -3)"
    assert said[1] == (f"valet: {path}:4: tools.web_fech: no tool module of that name; "
                       "did you mean web_fetch?")
    assert said[2] == (f"valet: {path}:7: approvals.timeout_minute: unknown setting; "
                       "did you mean timeout_minutes?")
    assert said[3].startswith(f"valet: {path}:9: llm.extra_body: api_key looks like a secret")
    assert "sk-in-the-file" not in err


async def test_a_log_level_nobody_knows(tmp_path, fake_llm):
    code, out, err = await run_valet(["chat"], llm_env(tmp_path, fake_llm,
                                                       VALET_LOG_LEVEL="LOUD"), "hi\n")
    [line] = assert_stopped_plainly(code, out, err)
    assert line == ("valet: environment VALET_LOG_LEVEL: log_level: 'LOUD' is not a log "
                    "level; use one of DEBUG, INFO, WARNING, ERROR, CRITICAL")


async def test_a_database_valet_does_not_speak_and_its_password_stays_hidden(tmp_path, fake_llm):
    env = llm_env(tmp_path, fake_llm, VALET_DATABASE_URL=f"mysql://valet:{SECRET}@db/valet")
    code, out, err = await run_valet(["chat"], env, "hi\n")
    [line] = assert_stopped_plainly(code, out, err)
    assert "database_url: 'mysql' databases are not supported" in line
    assert SECRET not in err + out


async def test_a_sqlite_url_with_one_slash_creates_no_stray_file(tmp_path, fake_llm):
    env = llm_env(tmp_path, fake_llm, VALET_DATABASE_URL="sqlite:/data/x.db")
    code, out, err = await run_valet(["chat"], env, "hi\n", cwd=tmp_path)
    [line] = assert_stopped_plainly(code, out, err)
    assert "database_url: 'sqlite:/data/x.db' is not a SQLite URL" in line
    assert not (tmp_path / "sqlite:").exists()


async def test_a_postgres_server_that_is_not_running(tmp_path, fake_llm):
    url = f"postgresql://valet:{SECRET}@127.0.0.1:{free_port()}/valet"
    code, out, err = await run_valet(["chat"], llm_env(tmp_path, fake_llm,
                                                       VALET_DATABASE_URL=url), "hi\n")
    [line] = assert_stopped_plainly(code, out, err)
    assert line.startswith("valet: cannot open the database postgresql://valet:***@127.0.0.1")
    assert "check that the Postgres server is running" in line
    assert SECRET not in err + out


async def test_a_database_in_a_place_that_cannot_be_written(tmp_path, fake_llm):
    (tmp_path / "not-a-dir").write_text("a file where a directory should be")
    url = f"sqlite:///{tmp_path}/not-a-dir/valet.db"
    code, out, err = await run_valet(["chat"], llm_env(tmp_path, fake_llm,
                                                       VALET_DATABASE_URL=url), "hi\n")
    [line] = assert_stopped_plainly(code, out, err)
    assert line.startswith(f"valet: cannot open the database {url}")
    assert "writable" in line


async def test_redis_unreachable_stops_chat_and_doctor_says_so(tmp_path, fake_llm):
    url = f"redis://:{SECRET}@127.0.0.1:{free_port()}/0"
    env = llm_env(tmp_path, fake_llm, VALET_REDIS_URL=url)
    code, out, err = await run_valet(["chat", "--pipe"], env, "hi\n")
    [line] = assert_stopped_plainly(code, out, err)
    assert line.startswith("valet: cannot reach Redis at redis://***@127.0.0.1")
    assert fake_llm.calls == 0

    fake_llm.responder = lambda body: Reply(content="ready")
    code, out, err = await run_valet(["doctor"], env)
    assert code == 1, out + err
    assert "FAIL  cannot reach Redis at redis://***@127.0.0.1" in out
    assert "all good" not in out
    assert SECRET not in out + err


async def test_doctor_checks_a_redis_that_is_there(tmp_path, fake_llm, redis_url):
    fake_llm.responder = lambda body: Reply(content="ready")
    code, out, err = await run_valet(["doctor"], llm_env(tmp_path, fake_llm,
                                                         VALET_REDIS_URL=redis_url))
    assert code == 0, out + err
    assert f"ok    redis {redis_url}" in out


async def test_doctor_names_a_model_the_server_does_not_offer(tmp_path, fake_llm):
    env = llm_env(tmp_path, fake_llm)
    env["VALET_LLM_MODEL"] = "gpt-5-turbo-nonexistent"
    code, out, _ = await run_valet(["doctor"], env)
    assert code == 1
    assert ("does not offer the model 'gpt-5-turbo-nonexistent': set VALET_LLM_MODEL (or "
            "llm.model) to one it lists: fake-model") in out
    assert fake_llm.calls == 0  # no chat call was wasted on it


async def test_credentials_in_the_llm_url_never_reach_the_screen_or_the_log(tmp_path, fake_llm):
    fake_llm.script(Reply(content="Hello."))
    fake_llm.responder = lambda body: Reply(content="ready")  # doctor's requests
    url = fake_llm.base_url.replace("http://", f"http://valet:{SECRET}@")
    env = llm_env(tmp_path, fake_llm, VALET_LOG_LEVEL="DEBUG", VALET_LLM_API_KEY="sk-KEY-42")
    env["VALET_LLM_BASE_URL"] = url
    code, out, err = await run_valet(["chat", "--pipe"], env, "hi\n")
    assert code == 0, err
    assert out.strip() == "Hello."
    log = (tmp_path / "valet.log").read_text()  # the chat logs to its file, not the screen
    assert "valet:***@127.0.0.1" in log  # the debug log did show the URL, masked
    assert SECRET not in log and "sk-KEY-42" not in log
    code, doctor_out, doctor_err = await run_valet(["doctor"], env)
    assert code == 0, doctor_out
    assert "at http://valet:***@127.0.0.1" in doctor_out
    everything = out + err + doctor_out + doctor_err
    assert SECRET not in everything and "sk-KEY-42" not in everything
