"""An optional LLM structurer for tutorials (the paper used Gemma-2 with constrained prompting): the
model is asked for the same JSON shape the deterministic converters produce; its answer is parsed
and validated, a bad answer is retried with the error shown to the model, and when every attempt
fails — or the page is too long for one prompt — the deterministic converter's document is used."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.tutorials import tutorial_to_json
from pkg.errors import PromptTooLongError
from pkg.generators.base import GenerationParams, Generator, Message

BLOCK_TYPES = ("text", "code", "list", "doctest")
#: Characters of tutorial text one prompt carries; longer pages go to the deterministic converter.
#: With the answer's budget below, a prompt and its answer fit a 4k-token context.
MAX_CHARS = 4000
INSTRUCTION = (
    "Turn the tutorial below into JSON of exactly this shape, "
    "keeping its text and code verbatim and in order:\n"
    '{"title": "<page title>", "sections": [{"title": "<heading>", "content": [<blocks>], '
    '"sections": [<subsections, same shape>]}]}\n'
    'A block is one of: {"type": "text", "text": "<paragraph>"}, {"type": "code", '
    '"language": "<language or empty>", "text": "<code>"}, {"type": "doctest", '
    '"text": "<>>> lines and their output>"}, {"type": "list", "items": ["<item>", ...]}.\n'
    "Nest sections by heading level. Answer with the JSON only."
)
_JSON_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)(?:```|\Z)", re.DOTALL)


def schema_errors(document: Any) -> list[str]:
    """What keeps `document` from being a tutorial document (empty when it is one)."""
    if not isinstance(document, dict):
        return ["the top level must be an object"]
    errors = [] if isinstance(document.get("title"), str) else ["`title` must be a string"]
    return errors + _section_list_errors(document.get("sections"), "sections")


def _section_list_errors(sections: Any, where: str) -> list[str]:
    if not isinstance(sections, list):
        return [f"`{where}` must be a list"]
    errors: list[str] = []
    for index, section in enumerate(sections):
        at = f"{where}[{index}]"
        if not isinstance(section, dict) or not isinstance(section.get("title"), str):
            errors.append(f"{at} must be an object with a string `title`")
            continue
        content = section.get("content", [])
        if not isinstance(content, list):
            errors.append(f"{at}.content must be a list")
        else:
            for number, block in enumerate(content):
                if not _valid_block(block):
                    errors.append(f"{at}.content[{number}] is not a text, code, doctest or list block")
        errors += _section_list_errors(section.get("sections", []), f"{at}.sections")
    return errors


def _valid_block(block: Any) -> bool:
    if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
        return False
    if block["type"] == "list":
        items = block.get("items")
        return isinstance(items, list) and all(isinstance(item, str) for item in items)
    if block["type"] == "code" and not isinstance(block.get("language", ""), str):
        return False
    return isinstance(block.get("text"), str)


def _block(block: dict[str, Any]) -> dict[str, Any]:
    """A valid block with only the keys the deterministic converters write."""
    if block["type"] == "list":
        return {"type": "list", "items": list(block["items"])}
    if block["type"] == "code":
        return {"type": "code", "language": block.get("language", ""), "text": block["text"]}
    return {"type": block["type"], "text": block["text"]}


def parse_reply(reply: str) -> Any:
    """The JSON value in a reply: a fenced block if there is one, else from the first brace to the
    last. Raises ValueError (json.JSONDecodeError) when there is none."""
    fenced = _JSON_FENCE.search(reply)
    body = fenced.group(1) if fenced else reply[reply.find("{") : reply.rfind("}") + 1]
    return json.loads(body)


def _normalised(document: dict[str, Any], source: str) -> dict[str, Any]:
    def section(s: dict[str, Any]) -> dict[str, Any]:
        return {
            "title": s["title"],
            "content": [_block(b) for b in s.get("content", [])],
            "sections": [section(child) for child in s.get("sections", [])],
        }

    return {"title": document["title"], "source": source, "sections": [section(s) for s in document["sections"]]}


@dataclass
class StructurerStats:
    """How the structurer's pages ended: from the model, or from the deterministic converter."""

    pages: int = 0
    from_model: int = 0
    fallbacks: int = 0
    attempts: int = 0


class LlmStructurer:
    """Calls the generator for each tutorial page; see the module docstring."""

    def __init__(self, generator: Generator, retries: int = 2, max_chars: int = MAX_CHARS) -> None:
        self.generator = generator
        self.retries = retries
        self.max_chars = max_chars
        self.name = f"llm:{generator.model_id}"
        self.stats = StructurerStats()

    def __call__(self, path: Path, text: str) -> dict[str, Any]:
        self.stats.pages += 1
        if len(text) <= self.max_chars:
            # The JSON repeats the page with some markup: twice its tokens and a margin suffice.
            params = GenerationParams(max_new_tokens=2 * self.generator.count_tokens(text) + 256)
            messages: list[Message] = [{"role": "user", "content": f"{INSTRUCTION}\n\nTutorial ({path.name}):\n{text}"}]
            for _ in range(1 + self.retries):
                self.stats.attempts += 1
                try:
                    reply = self.generator.generate(messages, params).text
                except PromptTooLongError:
                    break  # the page (or the retry's conversation) does not fit: use the converter
                try:
                    document = parse_reply(reply)
                    problems = schema_errors(document)
                except ValueError as exc:
                    problems = [f"not valid JSON: {exc}"]
                if not problems:
                    self.stats.from_model += 1
                    return _normalised(document, str(path))
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply},
                    {
                        "role": "user",
                        "content": "That is not valid: "
                        + "; ".join(problems[:5])
                        + ". Answer with the corrected JSON only.",
                    },
                ]
        self.stats.fallbacks += 1
        return tutorial_to_json(path)
