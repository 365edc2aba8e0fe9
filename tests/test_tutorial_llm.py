"""The optional LLM tutorial structurer: validation, retries with the error shown, fallback to the
deterministic converter; through the OpenAI-compatible client against a local server speaking the
API's wire format, and with a real local model through `pkg build --structurer`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.tutorials import tutorial_to_json
from pkg.generators.openai_compat import OpenAICompatGenerator
from pkg.generators.structurer import LlmStructurer, parse_reply, schema_errors
from tests.chat_server import ChatServer, completion
from tests.conftest import run_cli

DOCS = Path("/usr/share/doc/python3.11/html/_sources")
TUTORIAL = """# Sorting

Use `sorted` for a new list.

```python
sorted([3, 1, 2])
```

## In place

`list.sort` sorts in place.
"""
GOOD = {
    "title": "Sorting",
    "sections": [
        {
            "title": "Sorting",
            "content": [
                {"type": "text", "text": "Use sorted for a new list."},
                {"type": "code", "language": "python", "text": "sorted([3, 1, 2])"},
                {"type": "list", "items": ["one", "two"]},
            ],
            "sections": [
                {
                    "title": "In place",
                    "content": [{"type": "text", "text": "list.sort sorts in place."}],
                    "sections": [],
                }
            ],
        }
    ],
}


class _Replies:
    """Answers with the scripted replies in order, then with text holding no JSON."""

    def __init__(self) -> None:
        self.replies: list[str] = []

    def __call__(self, body: dict) -> tuple[int, dict]:
        return completion(self.replies.pop(0) if self.replies else "no JSON here")


@pytest.fixture()
def scripted() -> Iterator[ChatServer]:
    with ChatServer(_Replies()) as server:
        yield server


def _structurer(server: ChatServer) -> LlmStructurer:
    return LlmStructurer(OpenAICompatGenerator("structurer", base_url=server.url, retries=0), retries=2)


def test_the_deterministic_converters_produce_the_schema_the_model_is_held_to() -> None:
    pages = sorted(DOCS.glob("tutorial/*.rst.txt")) + sorted(DOCS.glob("library/*.rst.txt"))[:40]
    assert len(pages) > 50
    for page in pages:
        assert schema_errors(tutorial_to_json(page)) == [], page


def test_schema_errors_name_the_problem() -> None:
    assert schema_errors(GOOD) == []
    assert schema_errors([]) == ["the top level must be an object"]
    bad = {
        "title": "t",
        "sections": [
            {"title": "s", "content": [{"type": "poem", "text": "x"}, {"type": "list", "items": "x"}], "sections": "no"}
        ],
    }
    errors = schema_errors(bad)
    assert [e for e in errors if "content" in e] == [
        "sections[0].content[0] is not a text, code, doctest or list block",
        "sections[0].content[1] is not a text, code, doctest or list block",
    ]
    assert any("sections[0].sections" in e for e in errors)
    assert parse_reply('Here:\n```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_reply('Sure {"a": [1, 2]} done') == {"a": [1, 2]}
    with pytest.raises(ValueError):
        parse_reply("no json")


def test_bad_answers_are_retried_with_the_error_and_a_good_one_is_used(scripted: ChatServer, tmp_path: Path) -> None:
    page = tmp_path / "sorting.md"
    page.write_text(TUTORIAL)
    scripted.answer.replies = [
        "I think the JSON is {title: Sorting",
        json.dumps({"title": 3, "sections": []}),
        json.dumps(GOOD),
    ]
    structurer = _structurer(scripted)
    document = structurer(page, TUTORIAL)
    assert document == {**GOOD, "source": str(page)}
    assert (structurer.stats.from_model, structurer.stats.fallbacks, structurer.stats.attempts) == (1, 0, 3)
    second = scripted.requests[1]["messages"]
    assert second[1]["role"] == "assistant" and "not valid JSON" in second[2]["content"]
    assert "`title` must be a string" in scripted.requests[2]["messages"][-1]["content"]


def test_when_every_attempt_fails_the_deterministic_document_is_used(scripted: ChatServer, tmp_path: Path) -> None:
    page = tmp_path / "sorting.md"
    page.write_text(TUTORIAL)
    structurer = _structurer(scripted)
    assert structurer(page, TUTORIAL) == tutorial_to_json(page)
    assert (structurer.stats.fallbacks, structurer.stats.attempts, len(scripted.requests)) == (1, 3, 3)
    long_page = tmp_path / "long.md"
    long_page.write_text(TUTORIAL * 400)
    assert structurer(long_page, long_page.read_text()) == tutorial_to_json(long_page)
    assert len(scripted.requests) == 3  # too long for one prompt: no model call


@pytest.mark.cli
@pytest.mark.llm
def test_pkg_build_with_a_local_model_structurer(tmp_path: Path) -> None:
    page = tmp_path / "sorting.md"
    page.write_text(TUTORIAL)
    # one llama.cpp thread: on a busy 2-core machine two wait for each other (3.4x slower at load 10) and
    # the first build alone ran past 17 minutes
    env = {"PKG_CACHE_DIR": str(tmp_path / "cache"), "PKG_LLAMA_THREADS": "1"}
    db = tmp_path / "db"
    done = run_cli(
        "build", str(page), "--db", str(db), "--structurer", "llama:smollm2-135m", "--format", "json", env_extra=env
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    stats = report["structurer"]
    assert stats["pages"] == 1 and stats["from_model"] + stats["fallbacks"] == 1 and 1 <= stats["attempts"] <= 3
    again = run_cli(
        "build", str(page), "--db", str(db), "--structurer", "llama:smollm2-135m", "--format", "json", env_extra=env
    )
    assert json.loads(again.stdout)["unchanged_files"] == 1
    deterministic = run_cli("build", str(page), "--db", str(db), "--format", "json", env_extra=env)
    assert json.loads(deterministic.stdout)["files"] == 1  # another structurer: the page is rebuilt
    query = run_cli("query", "sort a list in place", "--mode", "json", "--db", str(db), "-k", "1", env_extra=env)
    assert query.returncode == 0 and "sort" in query.stdout.lower()
