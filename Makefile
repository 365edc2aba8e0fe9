# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STDLIB := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
DEMO_DB := .pkg-demo
DEMO_CORPUS := $(addprefix $(STDLIB)/,json textwrap.py heapq.py bisect.py statistics.py difflib.py shlex.py fractions.py) README.md

.PHONY: demo test

$(BIN)/pkg: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# Build a PKG from a slice of the standard library and this README (a tutorial) on the embedded
# store, then ask it for code and for tutorial text.
demo: $(BIN)/pkg
	$(BIN)/pkg build $(DEMO_CORPUS) --db $(DEMO_DB)
	$(BIN)/pkg stats --db $(DEMO_DB)
	$(BIN)/pkg query "split a shell command line into arguments, honouring quotes" --db $(DEMO_DB) -k 2
	$(BIN)/pkg query "find the longest matching block in two sequences" --mode block --db $(DEMO_DB) -k 2
	$(BIN)/pkg query "median of the data" --mode bm25-func --db $(DEMO_DB) -k 1
	$(BIN)/pkg query "how do I start Neo4j without Docker" --mode json --with-titles --db $(DEMO_DB) -k 2

# Debian packages the tests read: the Python documentation is the real tutorial corpus.
TEST_PACKAGES := python3.11-doc

# The whole test suite; it starts the Neo4j it needs itself (docker/neo4j-start.sh).
test: $(BIN)/pkg
	@dpkg -s $(TEST_PACKAGES) >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq $(TEST_PACKAGES) >/dev/null; }
	$(BIN)/pytest
