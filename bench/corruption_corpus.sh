#!/usr/bin/env bash
# The whole corruption corpus (tests/corruption): every damaged or hostile case through info, scan,
# stats, replay and the window's screenshot mode, counted by outcome (clear error, success,
# unclear, crash, hang, changed files). The test suite runs a verified subset of it
# (ctest -R corruption_corpus_subset); this is the full picture, for people hardening the readers.
#   bench/corruption_corpus.sh [BUILD_DIR] [run_corpus.py options: --timeout S --jobs J --limit N --kind PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
runs="$build/corruption-runs"
[ -f "$runs/sudden-blowup/run.h5" ] || "$build/bin/nanscope" demo "$runs" --quiet
exec /usr/bin/python3 tests/corruption/run_corpus.py --nanscope "$build/bin/nanscope" --runs "$runs" \
     --work "$build/corruption" "$@"
