"""Issue 45 items 4 and 5 end to end: a real `valet chat` against the fake server answering
exactly as the recorded llama.cpp server did (tests/recordings/real_llamacpp/), and checking
requests as it does (a history call whose arguments are not JSON: HTTP 500).

- unreadable_call_breaks_llamacpp: the answer with `<tool_call>` inside a sentence is the
  reply, in one request (it failed the turn after four requests and 11 s);
- a call whose arguments are not JSON goes back as `{}` beside its tool error, and the server
  takes the next request;
- tool_response_shown: "Saved note 12 “buy milk”" is never passed off as done: the person is
  told nothing was done, and nothing was saved;
- template tokens, `<tools>`, made-up calls and escaped entities never reach the person.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from persona.lines import DEFAULT
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.fakes.fake_openai import FakeOpenAI, Reply
from tests.fakes.recordings import exchange, recorded

NEVER = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>",
         "<|im_end|>", "<|im_start|>", "&#39;", '"arguments"')


def env_for(fake: FakeOpenAI, tmp_path: Path) -> dict[str, str]:
    fake.checks_call_arguments = True  # as llama.cpp with a tool template
    return clean_env(tmp_path, VALET_LLM_BASE_URL=fake.base_url, VALET_LLM_MODEL="smollm2")


def replies(out: str) -> list[str]:
    return [json.loads(line)["reply"] for line in out.splitlines() if line.strip()]


def notes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])


async def test_a_tool_call_tag_in_a_sentence_is_answered_in_one_request(fake_llm, tmp_path):
    fake_llm.script(recorded(exchange("unreadable_call_breaks_llamacpp", 35)))
    code, out, err = await run_valet(["chat", "--pipe"], env_for(fake_llm, tmp_path),
                                     "remind me tomorrow at 3pm to call mom\n")
    assert code == 0, err
    assert fake_llm.calls == 1
    assert out.startswith("Theres no way to keep track of a function call like this.")
    assert "use the options within to make it look like a function call" in out
    assert not any(marker in out for marker in NEVER)


async def test_unreadable_arguments_go_back_as_an_empty_object(fake_llm, tmp_path):
    fake_llm.script(
        Reply(message={"role": "assistant", "content":
                       '<tool_call>\n{"name": "calculate", "arguments": {"expression": "6*7"\n'
                       "</tool_call>"}),
        Reply(content="Six times seven is 42."))
    code, out, err = await run_valet(["chat", "--pipe"], env_for(fake_llm, tmp_path),
                                     "what is six times seven\n")
    assert code == 0, err
    assert out.strip() == "Six times seven is 42."
    assert fake_llm.calls == 2  # the server took the second request: no 500, no retry
    sent = fake_llm.requests[1]["messages"]
    call = next(m for m in sent if m.get("tool_calls"))["tool_calls"][0]
    assert call["function"] == {"name": "calculate", "arguments": "{}"}
    result = next(m for m in sent if m["role"] == "tool")["content"]
    assert "not valid JSON" in result


async def test_an_imitated_tool_result_is_not_passed_off_as_done(fake_llm, tmp_path):
    fake_llm.script(recorded(exchange("tool_response_shown", 1)),
                    recorded(exchange("tool_response_shown", 8)))
    env = env_for(fake_llm, tmp_path)
    code, out, err = await run_valet(["chat", "--jsonl"], env,
                                     "save a note: buy milk\nwhat's the weather in Lyon\n")
    assert code == 0, err
    said = replies(out)
    assert said == [DEFAULT.imitated_result, DEFAULT.imitated_result]
    assert notes(tmp_path / "valet.db") == 0


async def test_nothing_of_a_template_reaches_the_person(fake_llm, tmp_path):
    fake_llm.script(recorded(exchange("template_tokens_shown_doctor_all_good", 16)),
                    recorded(exchange("tools_tag_shown", 28)),
                    recorded(exchange("bare_json_shown", 25)),
                    recorded(exchange("html_entities_shown", 9)),
                    recorded(exchange("bare_json_shown", 24)))
    code, out, err = await run_valet(
        ["chat", "--jsonl"], env_for(fake_llm, tmp_path),
        "hi\nsave a note: buy milk\ndelete my note about milk\nwhat's the weather in Lyon\n"
        "save a note: buy milk\n")
    assert code == 0, err
    said = replies(out)
    assert len(said) == 5
    for text in said:
        assert not any(marker in text for marker in NEVER), text
    assert said[0] == "hi"
    assert said[1].startswith("A: You can use the following script to save a note")
    assert said[2].startswith('What is the code to delete a note that is marked with '
                              '"remove_item"?')
    assert said[2].endswith(DEFAULT.imitated_result)
    # The server ended that answer for length (its 2,048-token context was full): the person
    # is told it was cut (issue 45 item 2).
    assert said[3] == ("A few hours ago, I was in Lyon and it's not a day. It is a two-week "
                       f"vacation!\n\n{DEFAULT.cut_short}")
    assert said[4] == DEFAULT.imitated_result
