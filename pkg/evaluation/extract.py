"""Code out of a model's reply: fenced or tagged blocks, then only what a solution module needs."""

from __future__ import annotations

import ast
import re

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_TAGGED = re.compile(r"\[BEGIN\]\s*(.*?)\s*(?:\[DONE\]|\Z)|<code>(.*?)(?:</code>|\Z)", re.DOTALL)
_PYTHON_TAGS = {"", "python", "py", "python3"}


def code_blocks(reply: str) -> list[str]:
    """Python blocks of `reply` in order: ``` fences (a last fence cut off by the token limit counts),
    else [BEGIN]…[DONE] or <code>…</code> tags, else the whole reply."""
    fenced = [body for tag, body in _FENCE.findall(reply) if tag.lower() in _PYTHON_TAGS]
    if fenced:
        return fenced
    tagged = [a or b for a, b in _TAGGED.findall(reply)]
    if any(block.strip() for block in tagged):
        return [block for block in tagged if block.strip()]
    return [reply]


def _defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None


def code_from_reply(reply: str, entry_point: str) -> str:
    """The block that defines `entry_point` (the first such), else the first block, sanitized."""
    blocks = code_blocks(reply)
    chosen = next((block for block in blocks if _defines(block, entry_point)), blocks[0])
    return sanitize(chosen)


_DEFINITIONS = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Pass,
)


def _only_defines(node: ast.stmt) -> bool:
    """Whether running `node` only defines names: a definition, or an `if` / `try` (but not the
    `__main__` guard) made of definitions alone, such as an import with a fallback."""
    if isinstance(node, _DEFINITIONS):
        return True
    if isinstance(node, ast.If):
        return "__name__" not in ast.unparse(node.test) and all(map(_only_defines, node.body + node.orelse))
    if isinstance(node, ast.Try):
        bodies = node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
        return all(map(_only_defines, bodies))
    return False


def sanitize(code: str) -> str:
    """Keeps the top-level statements that only define names (imports, functions, classes,
    assignments, and `if` / `try` made of those); drops example calls, prints, asserts, loops and
    `if __name__ == "__main__":` blocks, which would run (and may fail) before the real tests.
    Code that does not parse is returned unchanged: its SyntaxError is the candidate's to report."""
    text = code.strip("\n")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text + "\n"
    lines = text.splitlines()
    kept: list[str] = []
    for node in tree.body:
        if _only_defines(node):
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            kept.append("\n".join(lines[start - 1 : node.end_lineno]))
    return "\n\n".join(kept) + "\n" if kept else text + "\n"
