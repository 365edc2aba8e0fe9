#!/bin/sh
# The comparisons whose outputs are committed under bench/results/compare-*/. Resumable: each
# folder's generations.jsonl caches every reply, so running this again regenerates nothing that
# exists and only fills in what is missing. Usage: bench/compare.sh [humaneval|mbpp|repo] [ARMS] [OPTIONS...]
# (OPTIONS go to pkg compare as they are, e.g. the repo benchmark's --layout, --context-budget, --names).
set -eu
cd "$(dirname "$0")/.."
benchmark="${1:-humaneval}"
default_arms=all
[ "$benchmark" = mbpp ] && default_arms=paper,reranked
arms="${2:-$default_arms}"
[ $# -gt 2 ] && shift 2 || shift $#
out="bench/results/compare-$benchmark"
mkdir -p "$out"
command=".venv/bin/pkg compare --benchmark $benchmark --arms $arms --out $out $*"
echo "$command  # PKG_MBPP_PATH=${PKG_MBPP_PATH:-pkg/benchmarks/data/mbpp}, $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ)" >> "$out/COMMAND"
exec $command
