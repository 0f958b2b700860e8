# bash completion for btpack(1).                                  -*- sh -*-
#
# Installed as .../bash-completion/completions/btpack. The commands, options
# and formats are read from btpack's own --help (the binary being completed),
# so they are always those of the btpack that runs: nothing here goes stale
# when a command, option or format is added.

# The first words of the lines of section "$1:" in the help text on stdin
# (up to the next blank line).
_btpack_section()
{
    awk -v want="$1:" '
        $0 == want { on = 1; next }
        on && NF == 0 { exit }
        on { print $1 }'
}

# The subcommands of a command that has them (`btpack heap record|report|map`):
# the word after the command on each of its usage lines, when it is a plain
# lower-case word rather than an option or an operand.
_btpack_subcommands()
{
    "$1" "$2" --help 2>/dev/null | awk -v cmd="$2" '
        /^usage:/ { usage = 1 }
        usage && NF == 0 { exit }
        usage {
            for (i = 1; i < NF; i++)
                if ($i == "btpack" && $(i + 1) == cmd && $(i + 2) ~ /^[a-z]+$/)
                    print $(i + 2)
        }' | sort -u
}

# Options: those in the help's usage lines (`[--top N]`) and in the lines
# of its option lists before the description (`  -o, --output OUT  write
# to OUT`, `  --word-bits N, --strict: as for convert`).
_btpack_options()
{
    "$@" --help 2>/dev/null | awk '
        /^usage:/ { usage = 1 }
        usage && NF == 0 { usage = 0 }
        {
            line = $0
            if (!usage) {
                if (line !~ /^[ \t]*-/)
                    next
                sub(/^[ \t]+/, "", line)
                sub(/[ \t][ \t].*/, "", line)
            }
            n = split(line, w, /[][ ,|:]+/)
            for (i = 1; i <= n; i++)
                if (w[i] ~ /^--?[A-Za-z][A-Za-z0-9-]*$/)
                    print w[i]
        }' | sort -u
}

# The formats a command's --from ($3 = from) or --to ($3 = to) takes: its
# help's "input formats:" or "output formats:", else those its usage line
# names (`[--from hex|b64|cbf]`), else btpack's "formats:".
_btpack_formats()
{
    local help section=input
    [[ $3 == to ]] && section=output
    help=$("$1" "$2" --help 2>/dev/null)
    if [[ $help == *$'\n'"$section formats:"* ]]; then
        _btpack_section "$section formats" <<<"$help"
    elif [[ $help =~ --$3\ ([a-z0-9-]+(\|[a-z0-9-]+)+) ]]; then
        # the usage line names them: [--from hex|b64|cbf]
        tr '|' '\n' <<<"${BASH_REMATCH[1]}"
    else
        "$1" --help 2>/dev/null | _btpack_section formats
    fi
}

_btpack()
{
    local cur prev words cword split
    if declare -F _init_completion >/dev/null; then
        # -s: `--from=l` completes like `--from l`.
        _init_completion -s || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    local btpack=${words[0]}
    # A btpack that is not on PATH (./build/tools/btpack) is run as typed.
    btpack=${btpack/#\~/$HOME}

    if ((cword == 1)); then
        local cmds
        cmds=$("$btpack" --help 2>/dev/null | _btpack_section commands)
        COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
        return
    fi
    local cmd=${words[1]}
    # A command with subcommands: complete the subcommand, then its options.
    local subs sub=()
    subs=$(_btpack_subcommands "$btpack" "$cmd")
    if [[ -n $subs ]]; then
        if ((cword == 2)); then
            COMPREPLY=($(compgen -W "$subs --help" -- "$cur"))
            return
        fi
        sub=("${words[2]}")
    fi

    case $prev in
    --from)
        COMPREPLY=($(compgen -W "$(_btpack_formats "$btpack" "$cmd" from)" -- "$cur"))
        return
        ;;
    --to)
        COMPREPLY=($(compgen -W "$(_btpack_formats "$btpack" "$cmd" to)" -- "$cur"))
        return
        ;;
    --word-bits)
        COMPREPLY=($(compgen -W "16 32 64" -- "$cur"))
        return
        ;;
    --max-frames | --top | --alloc-size | --zlib | --lzma | --max-nodes | --max-live | --max-expansion | \
        --flush-interval | --block-size | --max-warnings)
        return # a number
        ;;
    --compress)
        COMPREPLY=($(compgen -W "lzma zlib none" -- "$cur"))
        return
        ;;
    --method)
        COMPREPLY=($(compgen -W "fp cfi libgcc libunwind glibc" -- "$cur"))
        return
        ;;
    --thread)
        COMPREPLY=($(compgen -W "crashed all 0 1 2 3" -- "$cur"))
        return
        ;;
    --addr2line)
        COMPREPLY=($(compgen -c -- "$cur"))
        return
        ;;
    -o | --output | --maps | --elf | --preload)
        COMPREPLY=($(compgen -f -- "$cur"))
        compopt -o filenames 2>/dev/null
        return
        ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_btpack_options "$btpack" "$cmd" "${sub[@]}")" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
}
complete -F _btpack btpack
