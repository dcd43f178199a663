"""Every sentence a person receives comes from the persona's lines (persona/lines.py and the
groups it gathers, persona/lines_*.py), so a rewording is one place. This reads the code
(bot/, channels/, triggers/, agents/) for the ways text reaches a person and fails on a
sentence written in place:

- the text handed to whatever sends it (a reply, a notification, a button's answer, a
  channel's own answer, a turn step's answer, a question back about approvals...);
- what a slash command's handler returns (its /help line too), and a button's answer.

Words inside the values that fill a line (a summary, a name) are data, not sentences; an
f-string of values alone ("{heard}\\n\\n{text}") is fine. The web console's pages are the
owner's screens, like the command line's output, not messages: only its /console command is
read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "channels", "triggers", "agents")
SCREENS = "bot/app/console/"  # web pages (templates, flash lines); its command.py is read

# Where text leaves for a person: the callable's name -> (position, keyword) of each text
# argument.
SINKS: dict[str, tuple[tuple[int | None, str], ...]] = {
    "notify_user": ((1, "text"),),
    "notify_owner": ((0, "text"),),
    "answer_directly": ((2, "text"),),
    "answer_at_the_door": ((1, "reply"),),
    "answer_button": ((1, "text"),),
    "Reply": ((0, "text"),),
    "Answered": ((None, "text"),),
    "Notification": ((1, "text"),),
    "Notice": ((1, "line"),),
    "Admission": ((None, "reply"), (None, "notify_owner")),
    "ParsedReply": ((None, "clarify"),),
    "Command": ((1, "help"), (None, "refusal")),
    "MenuCommand": ((1, "description"),),
    "LLMFailure": ((0, "line"),),
}
# Functions whose return value is what the person reads.
SPEAKERS = ("answer_button", "listing", "forgotten_line", "outcome_line", "render_prompts",
            "render_prompt", "cancel_latest", "expired_line", "interrupted_line", "notice_line",
            "tasks_text", "line_for", "not_done_line", "card_line", "card_word", "state_word",
            "lately", "_still_waiting", "_not_done")


def sources() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            if not where.startswith(SCREENS) or where.endswith("/command.py"):
                yield path


def worded(node: ast.AST) -> list[str]:
    """The string literals with a letter in them anywhere inside `node` (a key looked up,
    `done["text"]`, is a name, not words)."""
    keys = {id(n.slice) for n in ast.walk(node) if isinstance(n, ast.Subscript)}
    found = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and \
                id(inner) not in keys and any(c.isalpha() for c in inner.value):
            found.append(inner.value)
    return found


def callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def text_arguments(call: ast.Call) -> Iterator[ast.AST]:
    for position, keyword in SINKS.get(callee(call), ()):
        if position is not None and position < len(call.args):
            yield call.args[position]
        yield from (k.value for k in call.keywords if k.arg == keyword)


def handlers(tree: ast.Module) -> set[str]:
    """The functions a `Command(...)` in this module names as its handler."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and callee(node) == "Command":
            given = [*node.args[2:3], *(k.value for k in node.keywords if k.arg == "handler")]
            for handler in given:
                target = handler.func if isinstance(handler, ast.Call) else handler
                names.add(target.attr if isinstance(target, ast.Attribute)
                          else getattr(target, "id", ""))
    return names


def bypasses() -> list[str]:
    found = []
    for path in sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(ROOT)
        speakers = set(SPEAKERS) | handlers(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for argument in text_arguments(node):
                    found += [f"{where}:{node.lineno}: {callee(node)}: {text!r}"
                              for text in worded(argument)]
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and \
                    node.name in speakers:
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Return) and inner.value is not None:
                        found += [f"{where}:{inner.lineno}: {node.name} returns {text!r}"
                                  for text in worded(inner.value)]
    return found


def test_no_sentence_for_a_person_is_written_outside_the_lines_module():
    assert bypasses() == []


def test_the_scan_sees_the_ways_text_reaches_a_person():
    """The scan finds what it looks for (a scan that sees nothing passes for nothing)."""
    tree = ast.parse('Answered(text=f"I stopped {x}.")\nReply("Hi!")\n'
                     'Notification(u, "⏰ Reminder: " + t)\nReply(self.lines.cancelled)\n')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [t for c in calls for a in text_arguments(c) for t in worded(a)] == [
        "I stopped ", "Hi!", "⏰ Reminder: "]
    commands = ast.parse("Command('/help', lines.about_help, self._help)\n")
    assert handlers(commands) == {"_help"}
    assert sum(1 for _ in sources()) > 150
