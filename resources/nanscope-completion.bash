# bash completion for nanscope: its commands, their options and the values those options take.
# Installed as /usr/share/bash-completion/completions/nanscope, which bash-completion loads the first
# time `nanscope` is completed. It needs nothing from bash-completion itself, so it also works when
# sourced by hand. tests/packaging/check_bash_completion.sh fails when `nanscope help` or a
# command's --help lists something this file does not.

_nanscope_commands="info scan compare stats diff replay triage report import demo help"

# The options of one command ("" is the window: `nanscope RUN_DIR [options]`), as its --help lists them.
_nanscope_options()
{
    local common="-h --help --help-all"
    case $1 in
        info) echo "--json --rank $common" ;;
        scan) echo "--json --config --set --print-config --rank $common" ;;
        stats) echo "--json --device --histogram --spectral-norm --norm-threshold --optimizer --names-from $common" ;;
        diff) echo "--json $common" ;;
        compare) echo "--json $common" ;;
        replay) echo "--step --checkpoint --batch --layer --bisect --dtype --device --eval --json --eager --model-factory --python --rank $common" ;;
        triage) echo "--step --json --rank $common" ;;
        report) echo "-o --output --no-replay --compare --rank --progress-lines --replayed --config $common" ;;
        import) echo "--checkpoints $common" ;;
        demo) echo "--only --force --quiet $common" ;;
        help) ;;
        "") echo "--screenshot --screenshot-size --view --step --layer --compare --config --x-axis --help --version" ;;
    esac
}

# Adds the paths matching the word being completed: -d directories, -f files and directories.
_nanscope_paths()
{
    compopt -o filenames 2>/dev/null # quote and mark folders with '/' as bash does for paths
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen "$1" -- "$cur")
}

_nanscope_words()
{
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -W "$1" -- "$cur")
}

_nanscope()
{
    COMPREPLY=()
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=${COMP_WORDS[COMP_CWORD - 1]}
    # `--dtype=bf<TAB>`: bash splits the word at '=', so the option is one word further back.
    if [[ $cur == "=" ]]; then
        cur=""
        prev=${COMP_WORDS[COMP_CWORD - 1]}
    elif [[ $prev == "=" ]]; then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    fi

    # The command, if any, is the first argument; anything else there is the window's RUN_DIR.
    local command=""
    if ((COMP_CWORD > 1)) && [[ " $_nanscope_commands " == *" ${COMP_WORDS[1]} "* ]]; then
        command=${COMP_WORDS[1]}
    fi

    # Options that take a value: offer the values, or paths where the value is a file.
    case $prev in
        --device)
            if [[ $command == stats ]]; then _nanscope_words "auto cpu cuda"; else _nanscope_words "cpu cuda"; fi
            return ;;
        --dtype) _nanscope_words "float16 bfloat16 float32 float64"; return ;;
        --checkpoints) _nanscope_words "link copy none"; return ;;
        --view) _nanscope_words "overview layers heatmap bn checkpoints replay"; return ;;
        --x-axis) _nanscope_words "step wall-time epoch"; return ;;
        --only) _nanscope_words "healthy sudden-blowup gradual-blowup division-by-zero batchnorm-poisoned"; return ;;
        --config | --checkpoint | --batch | -o | --output | --screenshot | --names-from | --compare | --replayed) _nanscope_paths -f; return ;;
        --step | --layer | --set | --histogram | --norm-threshold) return ;; # free text: nothing to offer
    esac

    if [[ $cur == -* ]]; then
        _nanscope_words "$(_nanscope_options "$command")"
        return
    fi
    if ((COMP_CWORD == 1)); then
        _nanscope_words "$_nanscope_commands"
        _nanscope_paths -d
        return
    fi
    case $command in
        stats | diff) _nanscope_paths -f ;; # checkpoint files
        help) ;;
        demo) _nanscope_paths -d ;;         # OUT_DIR
        *) _nanscope_paths -f ;;            # runs: folders, or a log file (trainer_state.json, an event file)
    esac
}

complete -F _nanscope nanscope
