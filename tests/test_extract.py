"""Code extraction from model replies and the prompt a problem makes."""

from __future__ import annotations

import ast

from pkg.benchmarks import load_humaneval
from pkg.evaluation.extract import code_blocks, code_from_reply, sanitize
from pkg.evaluation.prompts import build_messages
from retrieval.prompt import TRUNCATED, fit_snippets

REPLY = """Here is the solution:

```python
import math

def area(r):
    return math.pi * r ** 2

print(area(2))
assert area(1) > 3
if __name__ == "__main__":
    area(3)
```

And an example:

```python
area(5)
```
"""


def test_fenced_block_that_defines_the_entry_point_is_taken_and_sanitized() -> None:
    code = code_from_reply(REPLY, "area")
    assert code == "import math\n\ndef area(r):\n    return math.pi * r ** 2\n"


def test_a_fence_cut_off_by_the_token_limit_still_counts() -> None:
    assert code_blocks("```python\ndef f():\n    return 1\n") == ["def f():\n    return 1\n"]


def test_tags_and_bare_replies() -> None:
    assert code_blocks("[BEGIN]\ndef f(): return 2\n[DONE]") == ["def f(): return 2"]
    assert code_blocks("def g():\n    return 3") == ["def g():\n    return 3"]
    assert code_blocks("```js\nlet a = 1\n```") == ["```js\nlet a = 1\n```"]


def test_sanitize_keeps_decorators_classes_constants_and_leaves_broken_code_alone() -> None:
    code = "LIMIT = 3\n@staticmethod\ndef f():\n    return LIMIT\nclass A:\n    pass\nf()\n"
    assert sanitize(code) == "LIMIT = 3\n\n@staticmethod\ndef f():\n    return LIMIT\n\nclass A:\n    pass\n"
    assert sanitize("def f(:\n    pass") == "def f(:\n    pass\n"


def test_sanitize_keeps_guarded_definitions_and_drops_what_runs_examples() -> None:
    code = (
        "import sys\ntry:\n    from math import gcd\nexcept ImportError:\n    gcd = None\n"
        "if sys.version_info >= (3, 8):\n    def f(a, b):\n        return gcd(a, b)\n"
        "LIMIT = 10\nLIMIT += 5\n"
        "if __name__ == '__main__':\n    LIMIT = 0\n"
        "if LIMIT:\n    print(f(4, 6))\n"
        "try:\n    assert f(4, 6) == 2\nexcept AssertionError:\n    pass\n"
        "for case in [(1, 2)]:\n    f(*case)\n"
    )
    kept = sanitize(code)
    assert kept == (
        "import sys\n\ntry:\n    from math import gcd\nexcept ImportError:\n    gcd = None\n\n"
        "if sys.version_info >= (3, 8):\n    def f(a, b):\n        return gcd(a, b)\n\nLIMIT = 10\n\nLIMIT += 5\n"
    )
    namespace: dict[str, object] = {}
    exec(kept, namespace)
    assert namespace["f"](4, 6) == 2 and namespace["LIMIT"] == 15  # type: ignore[operator]


def test_humaneval_messages_show_the_prompt_and_the_context() -> None:
    problem = load_humaneval()[0]
    plain = build_messages(problem)
    with_context = build_messages(problem, ["def close(a, b):\n    return abs(a - b) < 1e-9"])
    assert len(plain) == 1 and plain[0]["role"] == "user"
    assert problem.prompt.rstrip() in plain[0]["content"] and "<context>" not in plain[0]["content"]
    content = with_context[0]["content"]
    assert content.index("<context>") < content.index(problem.prompt.rstrip())
    assert "return abs(a - b) < 1e-9" in content


def test_every_humaneval_canonical_solution_survives_extraction() -> None:
    for problem in load_humaneval():
        full = problem.canonical_solution
        reply = f"Sure.\n```python\n{full}\n```\nThis works."
        code = code_from_reply(reply, problem.entry_point)
        ast.parse(code)
        assert f"def {problem.entry_point}(" in code


def test_snippets_are_cut_to_the_token_budget_at_line_boundaries() -> None:
    words = lambda text: len(text.split())  # noqa: E731 - a counter simple enough to check by hand
    page = "\n".join(f"line {i} of the page" for i in range(100))  # 5 words a line
    kept, cut = fit_snippets(["def f(): pass", page, "never reached"], 30, words)
    assert cut and kept[0] == "def f(): pass"
    assert kept[1] == "\n".join(f"line {i} of the page" for i in range(4)) + "\n" + TRUNCATED
    assert sum(words(k) for k in kept) <= 30
    assert fit_snippets(["a b", "c d"], 10, words) == (["a b", "c d"], False)
