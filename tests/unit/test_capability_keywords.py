"""The capability router reads a message's words against the registry's `keywords:`: whole
words, case and apostrophes ignored, `#` for a number (digits or a word), `word*` for a word's
beginning; a part's words open its tools only; a message naming nothing is read with the last
turn; too many names open nothing. The registry checks the words when it loads: every
example opens its capability, a part names its capability's tools, a deployment's entry
extends a declared capability."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.registry import load_registry
from bot.config import ConfigError
from bot.config.registries import registry_paths
from bot.tools.capabilities import CapabilityPart, CapabilitySpec
from bot.tools.capability_router import CapabilityRouter, phrase_pattern, words


def router_of(*specs: CapabilitySpec, max_open: int = 3) -> CapabilityRouter:
    return CapabilityRouter({s.name: s for s in specs}, max_open=max_open)


@pytest.fixture(scope="module")
def built_in() -> CapabilityRouter:
    return CapabilityRouter(load_registry(registry_paths([])).capabilities)


@pytest.mark.parametrize(("text", "capability", "tool"), [
    ("remind me tomorrow at 3pm to call mom", "tasks", "draft_reminder"),
    ("What's the weather in Lyon?", "weather", "weather"),
    ("6 times 7", "time", "calculate"),
    ("what is six times seven", "time", "calculate"),
    ("6x7?", "time", "calculate"),
    ("what time is it in Tokyo", "time", "current_time"),
    ("text Ana that I'm late", "contacts", "message_someone"),
    ("Remember that I'm allergic to peanuts", "memory", "remember"),
    ("summarise https://example.com/a", "web", "web_fetch"),
])
def test_the_issues_examples_open_the_capability_they_name(built_in, text, capability, tool):
    route = built_in.route(text)
    assert route.opened == (capability,)
    spec = load_registry(registry_paths([])).capabilities[capability]
    offered = set(spec.tools) if capability in route.groups else route.tools
    assert tool in offered


@pytest.mark.parametrize("text", ["hi", "thanks!", "I have to go to the doctor",
                                  "three times a day is too much", "how are you today?"])
def test_a_message_that_names_no_capability_opens_nothing(built_in, text):
    route = built_in.route(text)
    assert route.opened == () and not route.groups and not route.tools


def test_words_ignore_case_and_apostrophes_and_split_numbers_from_letters():
    assert words("What’s 6x7 at 3PM? C'est l'été") == ["whats", "6", "x", "7", "at", "3",
                                                      "pm", "cest", "lété"]
    assert words("1,5 + 2.25 = ?") == ["1,5", "+", "2.25", "="]
    assert words("a " * 500, limit=200) == ["a"] * 200


def test_keyword_patterns_number_and_prefix():
    assert phrase_pattern("# times #") == ("#", "times", "#")
    assert phrase_pattern("remind*") == ("remind*",)
    assert phrase_pattern("what's on") == ("whats", "on")
    assert phrase_pattern("# * #") == ("#", "*", "#")
    assert phrase_pattern("  ?! ") == ()
    router = router_of(CapabilitySpec("time", "t", keywords=("# times #",)),
                       CapabilitySpec("tasks", "t", keywords=("remind*",)))
    assert router.route("twelve times 3").opened == ("time",)
    assert router.route("3 times a day").opened == ()
    assert router.route("set a reminder").opened == ("tasks",)
    assert router.route("premind").opened == ()  # a prefix is a word's beginning


def test_a_parts_words_open_its_tools_and_a_capabilitys_words_open_it_whole():
    tasks = CapabilitySpec("tasks", "t", tools=("draft", "listing", "automate"),
                           keywords=("every day",),
                           parts=(CapabilityPart(("draft", "listing"), ("remind*",)),))
    router = router_of(tasks)
    part = router.route("remind me at 5")
    assert part.groups == frozenset() and part.tools == {"draft", "listing"}
    whole = router.route("remind me every day at 5")
    assert whole.groups == {"tasks"}
    assert whole.named == {"tasks": ("remind*", "every day")}


def test_a_follow_up_is_read_with_the_last_turn_only_when_it_names_nothing():
    router = router_of(CapabilitySpec("contacts", "c", keywords=("text",)),
                       CapabilitySpec("weather", "w", keywords=("weather",)))
    history = [{"role": "user", "content": "what's the weather?"},
               {"role": "assistant", "content": "Sunny."},
               {"role": "user", "content": "I need to text Ana"},
               {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
               {"role": "tool", "tool_call_id": "c", "content": "weather: irrelevant"},
               {"role": "assistant", "content": "What should I say?"}]
    route = router.route("that I'm late", history)
    assert route.opened == ("contacts",) and route.read == "last turn"
    assert router.route("and the weather?", history).opened == ("weather",)
    assert router.route("ok", history[:2]).opened == ("weather",)
    assert router.route("ok", []).opened == ()


def test_more_names_than_it_may_open_is_unsure_and_opens_nothing():
    router = router_of(*(CapabilitySpec(n, n, keywords=(n,)) for n in ("a", "b", "c")),
                       max_open=2)
    assert router.route("a and b").opened == ("a", "b")
    unsure = router.route("a, b and c")
    assert unsure.opened == () and unsure.unsure == ("a", "b", "c")
    assert not unsure.groups and not unsure.tools
    assert unsure.entry()["opened"] == {}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "words.yaml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as err:
        load_registry(registry_paths([str(write(tmp_path, text))]))
    return str(err.value)


def test_every_built_in_example_opens_its_capability():
    capabilities = load_registry(registry_paths([])).capabilities
    router = CapabilityRouter(capabilities)
    for spec in capabilities.values():
        assert spec.examples, f"{spec.name} has no example"
        for example in spec.examples:
            assert spec.name in router.route(example).opened, example
        for part in spec.parts:
            for example in part.examples:
                assert set(part.tools) <= router.route(example).tools, example


def test_a_deployment_file_adds_words_to_a_built_in_capability(tmp_path):
    path = write(tmp_path, "capabilities:\n  - name: weather\n    keywords: [parapluie]\n"
                           "    examples: [un parapluie demain]\n")
    capabilities = load_registry(registry_paths([str(path)])).capabilities
    assert "parapluie" in capabilities["weather"].keywords
    assert "forecast" in capabilities["weather"].keywords  # the built-in words stay
    assert CapabilityRouter(capabilities).route("Parapluie ?").opened == ("weather",)


def test_an_example_its_words_do_not_open_is_an_error_with_its_line(tmp_path):
    found = problems(tmp_path, "capabilities:\n  - name: weather\n    keywords: [parapluie]\n"
                               "    examples: [faut-il un manteau]\n")
    assert "words.yaml:4: capabilities.0.examples: the example 'faut-il un manteau' does " \
           "not open weather: no keyword matches it; add a keyword it contains" in found


def test_words_for_an_unknown_capability_and_a_stranger_in_a_part_are_errors(tmp_path):
    found = problems(tmp_path, """
capabilities:
  - name: wether
    keywords: [rain]
  - name: parcels
    summary: where my parcels are
    keywords: [parcel]
    parts:
      - tools: [track_parcel]
        keywords: [tracking]
  - name: empty
    summary: nothing to match
    keywords: ["?!"]
""")
    assert "words.yaml:3: capabilities.0.name: unknown capability 'wether'" in found
    assert "words.yaml:9: capabilities.1.parts.0.tools: 'track_parcel' not a tool of " \
           "parcels" in found
    assert "capabilities.2.keywords: '?!' has no word the router can match" in found
