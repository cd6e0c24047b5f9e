#!/usr/bin/env bash
# Checks the bash completion (resources/nanscope-completion.bash) against the program it completes:
# it offers every command `nanscope help` lists and every option each command's --help lists, and
# nothing they do not; the demo runs it offers are the ones `nanscope demo` knows; and completing
# a few typical lines gives what a user expects (commands, options, option values, run folders
# for run commands, files for checkpoint commands).
# A new command or option fails this until the completion learns it.
# usage: check_bash_completion.sh NANSCOPE_BINARY COMPLETION_FILE
set -uo pipefail # not -e: a completion function may return non-zero, and every failure is reported
nanscope=$1
completion=$2

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Word lists compare as sorted, de-duplicated lines.
words() { tr ' ' '\n' | sed '/^$/d' | sort -u; }
# Prints what is in list $1 but not in list $2 (both space-separated).
missing_from() { comm -23 <(words <<<"$1") <(words <<<"$2") | tr '\n' ' '; }

# shellcheck source-path=SCRIPTDIR/../.. source=resources/nanscope-completion.bash
source "$completion" || { echo "FAIL: $completion does not load in bash"; exit 1; }
complete -p nanscope >/dev/null || fail "$completion does not register a completion for nanscope"

# Commands: those under "Commands:" in `nanscope help`, plus `help` itself.
listed_commands="help $("$nanscope" help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' | tr '\n' ' ')"
[[ $listed_commands == "help " ]] && fail "found no commands in 'nanscope help' (its format changed?)"
gap=$(missing_from "$listed_commands" "$_nanscope_commands")
[[ -z $gap ]] || fail "commands 'nanscope help' lists but the completion does not offer: $gap"
gap=$(missing_from "$_nanscope_commands" "$listed_commands")
[[ -z $gap ]] || fail "commands the completion offers but 'nanscope help' does not list: $gap"

# Options: the option column of each command's --help ("  -o, --output <FILE>  The report ...").
for command in $listed_commands; do
  [[ $command == help ]] && continue
  help_text=$("$nanscope" "$command" --help)
  listed_options=$(sed -n 's/^  \(-[^ ,]*\(, -[^ ,]*\)*\).*/\1/p' <<<"$help_text" | tr ',' ' ' | tr '\n' ' ')
  [[ -n $listed_options ]] || { fail "found no options in 'nanscope $command --help'"; continue; }
  offered=$(_nanscope_options "$command")
  gap=$(missing_from "$listed_options" "$offered")
  [[ -z $gap ]] || fail "options of '$command' its --help lists but the completion does not offer: $gap"
  gap=$(missing_from "$offered" "$listed_options")
  [[ -z $gap ]] || fail "options the completion offers for '$command' that its --help does not list: $gap"
done

# The demo runs: `nanscope demo` names them when asked for one it does not know (and writes nothing).
known_runs=$("$nanscope" demo "$(mktemp -u)" --only no-such-run 2>&1 | sed -n 's/.*choose from: //p' | tr -d ',')
[[ -n $known_runs ]] || fail "'nanscope demo --only no-such-run' no longer lists the demo runs"

# Completes LINE as if TAB were pressed at its end, from inside FOLDER; prints the candidates sorted.
complete_line()
{
  local line=$1 folder=$2
  (
    cd "$folder" || exit 1
    read -r -a COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _nanscope nanscope "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort | tr '\n' ' '
  )
}

folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
mkdir "$folder/run-a" "$folder/run-b" "$folder/my run"
touch "$folder/ckpt.pt" "$folder/run-notes.txt"

expect()
{
  local line=$1 expected=$2 got
  got=$(complete_line "$line" "$folder")
  [[ $got == "$expected" ]] || fail "completing '$line': expected '$expected', got '$got'"
}
expect "nanscope sc" "scan "
expect "nanscope re" "replay report "
expect "nanscope r" "replay report run-a run-b "   # a command, or the window's RUN_DIR
expect "nanscope replay run-a --d" "--device --dtype "
expect "nanscope replay run-a --dtype " "bfloat16 float16 float32 float64 "
expect "nanscope replay run-a --device " "cpu cuda "
expect "nanscope stats ckpt.pt --device " "auto cpu cuda "
expect "nanscope scan r" "run-a run-b run-notes.txt "     # a run is a folder or a log file
expect "nanscope import run-a --checkpoints " "copy link none "
expect "nanscope demo r" "run-a run-b "                   # demo writes into a folder
expect "nanscope info m" "my run "                          # one candidate, space and all
expect "nanscope stats r" "run-a run-b run-notes.txt "    # checkpoint commands take files
expect "nanscope run-a --view h" "heatmap "
expect "nanscope report run-a -o run-n" "run-notes.txt "
expect "nanscope demo out --only " "$(words <<<"$known_runs" | tr '\n' ' ')"

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "bash completion matches nanscope's commands and options"
