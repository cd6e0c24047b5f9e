#!/usr/bin/env bash
# Runs every benchmark at a size that fits in about five minutes on a quiet 2-core machine and
# prints one Markdown table: figure, measured, baseline (measured in the same run), target, and
# whether it was met. The table is what goes into the README and into the notes of issues that
# touch the scan, replay, the readers or the window.
#
#   ./setup.sh bench && bench/run_all.sh [BUILD_DIR]     (default: build)
#
# Each benchmark prints its own readable lines too; they are kept in the work folder named at the
# end when a benchmark failed. Sizes: bench_scan, bench_gui, bench_run_reader and bench_sources
# run at the 100,000-step sizes their targets are set for; bench_logs on three logs of 256 MB (its
# target is a rate, and 2 GB logs would take a minute to write); bench_ranks at 16 ranks (its target
# scale, 64 ranks x 100,000 steps, takes minutes: bench_ranks with no arguments runs it);
# bench_tensor_stats on 48 MB tensors (still beyond the caches; its default 128 MB takes six
# minutes, most of them in the baseline's separate LibTorch calls); bench_guard with 60 pairs, and
# 200 for its MLP rows (a tenth of the transformer's step, and closest to their targets: their
# median moved by 0.01-0.02 between runs of 60). Nothing is written outside a temporary folder:
# HOME and the XDG folders point into it, so the window's settings and recent runs stay out of the
# user's.
set -uo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
if [ ! -x "$build/bench/bench_scan" ]; then
  echo "run_all.sh: no benchmarks in $build/bench; build them with ./setup.sh bench" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/nanscope-bench-all.XXXXXX")
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache"
export XDG_DATA_HOME="$work/home/.local/share" QT_QPA_PLATFORM=offscreen
mkdir -p "$HOME"

failed=0
rows="$work/rows.tsv"
: > "$rows"
timings=()
# run_program NAME COMMAND...: one benchmark; its TABLE lines go into the table, a failure becomes a row.
run_program() {
  local name=$1
  shift
  echo "== $name" >&2
  local start=$SECONDS
  "$@" > "$work/$name.out" 2>&1
  local rc=$?
  grep '^TABLE' "$work/$name.out" | cut -f2- >> "$rows"
  if [ "$rc" -ne 0 ] || ! grep -q '^TABLE' "$work/$name.out"; then
    printf '%s\t%s\t%s\t-\t-\tmissed\n' "$name" "the benchmark failed" "exit code $rc (see $work/$name.out)" >> "$rows"
    failed=1
  fi
  timings+=("$name $((SECONDS - start)) s")
}
# run NAME ARGS...: the benchmark program build/bench/NAME.
run() {
  local name=$1
  shift
  run_program "$name" "$build/bench/$name" "$@"
}

total_start=$SECONDS
run bench_startup "$work/startup"
run bench_scan "$work/scan"
run bench_run_reader "$work/run-reader"
run bench_sources "$work/sources"
run bench_logs "$work/logs" 256
run bench_gui "$work/gui"
run bench_ranks "$work/ranks" 16 100000 1000 100
run bench_replay
run bench_tensor_stats 48
run bench_guard --pairs 60 --mlp-pairs 200
python=${NANSCOPE_BENCH_PYTHON:-.venv/bin/python}
# Replay of torch.export archives: the pinned torch exports the models, then bench_export_replay times them.
run_program bench_export_replay env PYTHONPATH=python "$python" bench/bench_export_replay.py "$build" "$work/export-replay"
# The framework callback's cost on a real transformers model: a Python program on the pinned torch.
run_program bench_hf_callback env PYTHONPATH=python "$python" bench/bench_hf_callback.py

echo
echo "| bench | figure | measured | baseline | target | verdict |"
echo "|---|---|---|---|---|---|"
awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, ($6 == "missed" ? "**missed**" : $6) }' "$rows"
echo
echo "time: ${timings[*]}; $((SECONDS - total_start)) s in all"
if [ "$failed" -eq 0 ]; then
  rm -rf "$work"
else
  echo "a benchmark failed; its output is in $work" >&2
fi
exit "$failed"
