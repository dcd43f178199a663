"""MCP entries in a registry file: mistakes are `file:line: key: what is wrong` at start-up
(exit 2 from the command line), secrets are references only; tool names and results as the
model sees them."""

from __future__ import annotations

import base64
from pathlib import Path

import mcp_types
import pytest

from agents.mcp.config import McpServerConfig, problems
from agents.mcp.results import result_text
from agents.mcp.source import McpTool, McpToolSource, valet_name
from agents.registry import load_registry
from bot.cli.main import main
from bot.config import ConfigError
from bot.config.registries import registry_paths

GOOD = """\
mcp:
  - name: github
    command: [npx, -y, "@modelcontextprotocol/server-github"]
    env: {GITHUB_TOKEN: "credential:github", LOG_LEVEL: debug}
    description: "Your GitHub: issues, pull requests, notifications"
    tools:
      search_issues: {approval: never}
      create_issue: {approval: always, timeout_seconds: 30}
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return load_registry(registry_paths([str(path)]))


def problems_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, text)
    return str(err.value)


def test_an_mcp_entry_becomes_a_capability_with_nothing_started(tmp_path):
    registry = load(tmp_path, GOOD)
    spec = registry.capabilities["github"]
    assert spec.summary == "Your GitHub: issues, pull requests, notifications"
    source = registry.mcp_servers["github"]
    assert spec.source is source and source.connection.starts == 0
    assert source.config.policy("create_issue").timeout_seconds == 30
    # A tool of a server that has not started is a stand-in that asks first (fail closed),
    # unless the registry says it never needs to.
    assert registry.tools.get("github_create_issue").requires_approval
    assert not registry.tools.get("github_search_issues").requires_approval
    assert registry.tools.get("github_anything_else").requires_approval
    assert registry.tools.get("gitlab_x") is None


def test_an_entry_missing_its_command_is_one_line_with_file_line_and_key(tmp_path, capsys):
    registry = tmp_path / "mine.yaml"
    registry.write_text("mcp:\n  - name: github\n    description: no way to start it\n")
    config = tmp_path / "valet.yaml"
    config.write_text(f"database_url: sqlite:///{tmp_path}/v.db\n"
                      "agents:\n  registries: [mine.yaml]\n")
    assert main(["mcp", "list", "--config", str(config)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"{registry}:2: mcp.0.command: a server needs `command:`" in line


@pytest.mark.parametrize(("entry", "expected"), [
    ("    command: [x]\n    env: {GITHUB_TOKEN: ghp_abc}\n",
     "mine.yaml:5: mcp.0.env.GITHUB_TOKEN: a secret is never written in the file"),
    ("    url: https://mcp.example.com/mcp\n    headers: {Authorization: Bearer abc}\n",
     "mine.yaml:5: mcp.0.headers.Authorization: a secret is never written in the file"),
    ("    command: [x]\n    url: https://mcp.example.com/mcp\n",
     "mine.yaml:5: mcp.0.url: give either `command:` (stdio) or `url:` (HTTP), not both"),
    ("    command: [x]\n    env: {A: 'env:not a name'}\n",
     "mine.yaml:5: mcp.0.env.A: 'env:not a name' is not a valid reference"),
    ("    command: [x]\n    tools: {create: {approval: sometimes}}\n",
     "mine.yaml:5: mcp.0.tools.create.approval: Input should be 'always', 'never' or 'auto'"),
])
def test_mistakes_name_the_file_line_and_key(tmp_path, entry, expected):
    text = "mcp:\n  - name: github\n    description: d\n" + entry
    assert expected in problems_of(tmp_path, text)


def test_a_server_name_may_not_take_the_prefix_of_existing_tools(tmp_path):
    found = problems_of(tmp_path, "mcp:\n  - name: list\n    command: [x]\n"
                                  "    description: d\n")
    assert "mine.yaml:2: mcp name 'list': tools named list_... already exist (list_contacts, "\
        in found
    found = problems_of(tmp_path, "mcp:\n  - name: notes\n    command: [x]\n"
                                  "    description: d\n")
    assert "duplicate capability 'notes'" in found


def test_references_in_text_and_plain_settings_are_allowed():
    config = McpServerConfig(name="home", url="https://h.example/mcp", description="d",
                             headers={"Authorization": "Bearer ${credential:home}",
                                      "X-Client": "valet"})
    assert problems(config) == []


async def test_secrets_are_read_from_the_environment_when_asked(monkeypatch):
    from agents.mcp.secrets import SecretMissing, SecretReader

    reader = SecretReader({"TOKEN": "t0k"})
    assert await reader.resolve({"Authorization": "Bearer ${env:TOKEN}",
                                 "X": "env:TOKEN", "Y": "plain"}) == {
        "Authorization": "Bearer t0k", "X": "t0k", "Y": "plain"}
    with pytest.raises(SecretMissing, match="env:NOPE"):
        await reader.resolve({"X": "env:NOPE"})
    assert await reader.missing({"X": "credential:github"}) == ["credential:github"]


def test_tool_names_are_prefixed_valid_and_unique():
    assert valet_name("github_", "search_issues", {}) == "github_search_issues"
    assert valet_name("github_", "repo.list", {}) == "github_repo_list"
    taken = {"github_repo_list": object()}
    other = valet_name("github_", "repo/list", taken)
    assert other.startswith("github_repo_list_") and other != "github_repo_list"
    long = valet_name("github_", "x" * 100, {})
    assert len(long) == 64 and long.startswith("github_x")


def _result(*content, structured=None, error=False) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=list(content), structured_content=structured,
                                    is_error=error)


def test_results_are_quoted_images_described_and_long_ones_cut():
    image = mcp_types.ImageContent(data=base64.b64encode(b"x" * 300).decode(),
                                   mime_type="image/png")
    text = result_text("cam", "snap", _result(mcp_types.TextContent(text="Front door"), image),
                       1000)
    assert "<<<untrusted data" in text and "Front door" in text
    assert "[image: image/png, 300 bytes; not shown to you]" in text
    both = result_text("t", "get", _result(mcp_types.TextContent(text='{"a": 1}'),
                                           structured={"a": 1}), 1000)
    assert both.count('"a"') == 1  # the same content said once
    long = result_text("t", "get", _result(mcp_types.TextContent(text="y" * 5000)), 1000)
    assert "cut to 1000 of 5000 characters" in long and "y" * 1001 not in long
    failed = result_text("t", "get", _result(mcp_types.TextContent(text="no such repo"),
                                             error=True), 1000)
    assert failed.startswith("Error: get failed") and "no such repo" in failed


def _learnt(trusted: bool) -> dict[str, McpTool]:
    """A server's tools with every combination of hints, and the registry's word on two."""
    source = McpToolSource(McpServerConfig(
        name="t", command=["x"], description="d", trusted=trusted,
        tools={"delete": {"approval": "never"}, "wire_never": {"approval": "never"},
               "lookup_always": {"approval": "always"}}))
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    hints = mcp_types.ToolAnnotations
    source._learn([
        mcp_types.Tool(name="find", input_schema=schema, annotations=hints(read_only_hint=True)),
        mcp_types.Tool(name="change", input_schema=schema),
        mcp_types.Tool(name="delete", input_schema=schema),
        mcp_types.Tool(name="wire_money", input_schema=schema,
                       annotations=hints(read_only_hint=True, destructive_hint=True)),
        mcp_types.Tool(name="wire_never", input_schema=schema,
                       annotations=hints(destructive_hint=True)),
        mcp_types.Tool(name="lookup_always", input_schema=schema,
                       annotations=hints(read_only_hint=True))])
    return {t.name.removeprefix("t_"): t for t in source.known() if isinstance(t, McpTool)}


def test_a_servers_hints_only_add_caution():
    """Issue 34 item 3: a tool asks unless the registry says `approval: never`, or the server
    is trusted and the tool says read-only (and not destructive); destructive always asks."""
    asks = {name: tool.requires_approval for name, tool in _learnt(trusted=False).items()}
    assert asks == {"find": True, "change": True, "delete": False, "wire_money": True,
                    "wire_never": True, "lookup_always": True}
    asks = {name: tool.requires_approval for name, tool in _learnt(trusted=True).items()}
    assert asks == {"find": False, "change": True, "delete": False, "wire_money": True,
                    "wire_never": True, "lookup_always": True}


def test_a_servers_schema_checks_the_arguments_and_the_card_names_the_call():
    tools = _learnt(trusted=False)
    find, change = tools["find"], tools["change"]
    with pytest.raises(ValueError, match="'q' is a required property"):
        find.parse_arguments("{}")
    assert change.summarize is not None
    assert change.summarize({"q": "gate"}) == "t (MCP server): change (q: gate)"
