"""The agent registry: agents/registry.yaml plus a deployment's files, checked at start-up.
Every mistake names its file and line and says what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.registry import load_registry
from agents.runtime import APPROVAL_MARK
from bot.config import ConfigError, load_settings
from bot.config.registries import BUILTIN_REGISTRY, registry_paths


def write(tmp_path: Path, text: str, name: str = "extra.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_registry(registry_paths([str(path)]))
    return str(err.value)


def test_the_built_in_registry_lists_the_tools_and_agents():
    registry = load_registry(registry_paths([]))
    names = registry.tools.names()
    for expected in ("current_time", "convert_time", "calculate", "web_fetch", "ask_user",
                     "update_plan", "cancel_task", "list_notes", "search_notes", "take_note",
                     "draft_reminder"):
        assert expected in names
    assert set(registry.agents) == {"take_note", "draft_reminder"}
    assert registry.tools.get("take_note").is_agent
    assert not registry.tools.get("calculate").is_agent
    assert registry.files == [str(BUILTIN_REGISTRY)]


def test_a_deployment_file_adds_agents_and_tool_modules(tmp_path):
    path = write(tmp_path, """
agents:
  - name: open_ticket
    class: tests.fakes.sample_agents:TicketAgentV1
    description: File a ticket with the help desk.
    timeout: 45
    max_instances: 2
    settings: {queue: it}
  - class: tests.fakes.sample_agents:EmailAgent
    expose_as_tool: false
tools:
  - module: tests.helpers_tools
    only: [shout]
    settings: {volume: 11}
""")
    registry = load_registry(registry_paths([str(path)]), {"helpers_tools": {"volume": 1,
                                                                            "tone": "calm"}})
    ticket = registry.tools.get("open_ticket")
    assert ticket.description == "File a ticket with the help desk."
    assert ticket.timeout == 45 and ticket.is_agent
    assert registry.agents["open_ticket"].max_instances == 2
    assert registry.agents["open_ticket"].settings == {"queue": "it"}
    # Not exposed: loaded and checked, but not a tool the LLM sees.
    assert "email_agent" in registry.agents and registry.tools.get("email_agent") is None
    assert registry.tools.get("shout") is not None and registry.tools.get("whisper") is None
    # Settings from valet.yaml (tools.<module>) and the registry entry: the registry wins.
    assert dict(registry.tools.get("shout").settings) == {"volume": 11, "tone": "calm"}


def test_valet_yaml_tool_settings_still_reach_built_in_tools():
    registry = load_registry(registry_paths([]), {"web_fetch": {"allowed_hosts": ["intra"]}})
    assert dict(registry.tools.get("web_fetch").settings) == {"allowed_hosts": ["intra"]}


def test_unknown_class_names_file_and_line(tmp_path):
    message = problems(tmp_path, "agents:\n  - name: x\n    class: agents.notes:NoSuchAgent\n")
    assert f"{tmp_path}/extra.yaml:3: unknown class 'NoSuchAgent' in module agents.notes" \
        in message


def test_unimportable_module_names_file_and_line(tmp_path):
    message = problems(tmp_path, "tools:\n  - module: agents.tools.calculator\n"
                                 "  - module: no_such_package.tools\n")
    assert "extra.yaml:3: cannot import module 'no_such_package.tools': " \
           "ModuleNotFoundError" in message
    message = problems(tmp_path, "agents:\n  - class: no_such_module:Agent\n")
    assert "extra.yaml:2: cannot import module 'no_such_module'" in message


def test_duplicate_names_point_at_both_places(tmp_path):
    message = problems(tmp_path, """agents:
  - name: take_note
    class: tests.fakes.sample_agents:TicketAgentV1
""")
    assert "extra.yaml:2: duplicate name 'take_note' (already defined at " \
           f"{BUILTIN_REGISTRY}:" in message
    message = problems(tmp_path, "tools:\n  - module: agents.tools.clock\n")
    assert "extra.yaml:2: duplicate name 'current_time'" in message


def test_bad_fields_name_the_key_and_line(tmp_path):
    message = problems(tmp_path, """agents:
  - name: ok_name
    class: tests.fakes.sample_agents:TicketAgentV1
    approval: sometimes
    timeout: -1
    colour: blue
""")
    assert "extra.yaml:4: agents.0.approval: Input should be 'always', 'never', 'agent' or " \
           "'untrusted'" \
        in message
    assert "extra.yaml:5: agents.0.timeout: Input should be greater than 0" in message
    assert "extra.yaml:6: agents.0.colour: Extra inputs are not permitted" in message
    message = problems(tmp_path, "agents:\n  - name: no_class\n")
    assert "extra.yaml:2: agents.0.class: Field required" in message
    message = problems(tmp_path, "agents:\n  - class: not-a-path\n")
    assert "extra.yaml:2: agents.0.class: String should match pattern" in message
    message = problems(tmp_path, "tools:\n  - module: agents.tools.clock\n    only: [sundial]\n")
    assert "extra.yaml:3: no tool named 'sundial' in agents.tools.clock (it has: " \
           "current_time, convert_time)" in message


def test_classes_that_are_not_agents_or_have_bad_fields_are_refused(tmp_path):
    message = problems(tmp_path, """agents:
  - class: tests.fakes.sample_agents:NotAnAgent
  - class: tests.fakes.sample_agents:ReservedFieldAgent
  - class: tests.fakes.sample_agents:BadTypeAgent
""")
    lines = message.splitlines()
    assert any("extra.yaml:2: tests.fakes.sample_agents:NotAnAgent is not a StandardAgent"
               in line for line in lines)
    assert any("extra.yaml:3:" in line and "bad field 'task_instruction': the name is reserved"
               in line for line in lines)
    assert any("extra.yaml:4:" in line and "bad field 'when': PydanticSchemaGenerationError"
               in line for line in lines)


def test_every_problem_is_reported_at_once_and_yaml_errors_have_lines(tmp_path):
    message = problems(tmp_path, """agents:
  - class: agents.notes:Nope
tools:
  - module: nowhere.at_all
""")
    assert "extra.yaml:2:" in message and "extra.yaml:4:" in message
    message = problems(tmp_path, "agents:\n  - class: [unclosed\n")
    assert "extra.yaml:3: invalid YAML" in message or "extra.yaml:2: invalid YAML" in message
    message = problems(tmp_path, "- just a list\n")
    assert "extra.yaml:1: a registry file is a mapping" in message
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read"):
        load_registry(registry_paths([str(tmp_path / "missing.yaml")]))


def test_registry_files_come_from_valet_yaml_or_the_environment(tmp_path):
    config = write(tmp_path, "agents:\n  registries: [mine.yaml]\n  pool_ttl_minutes: 30\n",
                   "valet.yaml")
    settings = load_settings(str(config), env={})
    assert settings.agents.registries == ["mine.yaml"]
    assert settings.agents.pool_ttl_minutes == 30
    assert registry_paths(settings.agents.registries, settings.config_dir())[1] == \
        tmp_path / "mine.yaml"
    from_env = load_settings(str(config),
                             env={"VALET_AGENTS_FILES": "/a/one.yaml, two.yaml:three.yaml"})
    assert from_env.agents.registries == ["/a/one.yaml", "two.yaml", "three.yaml"]
    bad = write(tmp_path, "agents:\n  pool_max_per_user: 0\n", "bad.yaml")
    with pytest.raises(ConfigError, match=r"bad.yaml:2: agents.pool_max_per_user"):
        load_settings(str(bad), env={})


def test_approval_marker_follows_the_policy(tmp_path):
    path = write(tmp_path, """agents:
  - name: mail_by_agent
    class: tests.fakes.sample_agents:EmailAgent
  - name: mail_never
    class: tests.fakes.sample_agents:EmailAgent
    approval: never
  - name: ticket_always
    class: tests.fakes.sample_agents:TicketAgentV1
    approval: always
  - name: ticket_by_agent
    class: tests.fakes.sample_agents:TicketAgentV1
""")
    tools = load_registry(registry_paths([str(path)])).tools
    assert tools.get("mail_by_agent").description.endswith(APPROVAL_MARK)  # overrides it
    assert APPROVAL_MARK not in tools.get("mail_never").description
    assert tools.get("ticket_always").description.endswith(APPROVAL_MARK)
    assert APPROVAL_MARK not in tools.get("ticket_by_agent").description  # base: no approval


def test_only_read_only_built_ins_are_safe_to_repeat_after_a_crash():
    tools = load_registry(registry_paths([])).tools
    safe = sorted(t.name for t in tools if t.safe_to_repeat)
    assert safe == sorted(["current_time", "convert_time", "calculate", "web_fetch",
                           "list_notes", "search_notes", "list_reminders", "weather",
                           "list_events", "next_event", "recall_memories",
                           "find_contact", "list_contacts",
                           "email_unread", "search_email", "read_email"])
    for name in ("take_note", "delete_note", "draft_reminder", "set_my_timezone",
                 "set_quiet_hours", "set_preferred_channel", "ask_user", "update_plan",
                 "set_my_place", "create_event", "move_event", "cancel_event",
                 "remember", "forget", "forget_everything", "save_contact",
                 "propose_contact", "delete_contact", "message_someone"):
        assert not tools.get(name).safe_to_repeat, name


def test_a_deployment_declares_its_tools_and_agents_safe_to_repeat(tmp_path):
    path = write(tmp_path, """
agents:
  - name: look_up_ticket
    class: tests.fakes.sample_agents:TicketAgentV1
    safe_to_repeat: true
  - name: open_ticket
    class: tests.fakes.sample_agents:TicketAgentV1
tools:
  - module: tests.fakes.risky_tools
    only: [slow_balance]
    safe_to_repeat: true
  - module: tests.fakes.risky_tools
    only: [send_email]
""")
    tools = load_registry(registry_paths([str(path)])).tools
    assert tools.get("look_up_ticket").safe_to_repeat
    assert not tools.get("open_ticket").safe_to_repeat  # not safe unless declared
    assert tools.get("slow_balance").safe_to_repeat
    assert not tools.get("send_email").safe_to_repeat
    assert "safe_to_repeat" in problems(tmp_path, """
tools:
  - module: tests.fakes.risky_tools
    only: [send_email]
    safe_to_repeat: sometimes
""")


def test_every_built_in_tool_describes_its_arguments():
    # Built-in tools are shaped when first offered (start-up stays fast): each must be able to.
    registry = load_registry(registry_paths([]))
    for t in registry.tools:
        schema = t.schema()["function"]["parameters"]
        assert schema.get("type") == "object", t.name
        assert "$ref" not in str(schema), t.name  # definitions in place, for every server


def test_a_deployment_tool_whose_arguments_cannot_be_described_is_refused(tmp_path):
    found = problems(tmp_path, "tools:\n  - module: tests.fakes.opaque_tools\n")
    assert "extra.yaml:2: tests.fakes.opaque_tools.opaque: its arguments cannot be " \
           "described: PydanticSchemaGenerationError" in found
