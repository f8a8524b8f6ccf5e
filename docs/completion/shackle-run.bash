# bash completion for shackle-run(1)                       -*- shell-script -*-

_shackle_run()
{
	local cur prev i
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	# after --, the agent's command line: complete it as a command
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [ "${COMP_WORDS[i]}" = -- ]; then
			if [ $((i + 1)) -eq "$COMP_CWORD" ]; then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
	done
	case $prev in
	--fsync) COMPREPLY=($(compgen -W "checkpoint entry none" -- "$cur")); return ;;
	--net-verify) COMPREPLY=($(compgen -W "auto bpf emulate" -- "$cur")); return ;;
	--exec-verify) COMPREPLY=($(compgen -W "auto bpf ptrace" -- "$cur")); return ;;
	--user) COMPREPLY=($(compgen -u -- "$cur")); return ;;
	--session) return ;;
	--policy | --audit | --key | --control) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	COMPREPLY=($(compgen -W "--policy --audit --key --session --fsync --user --non-interactive --control --print-audit-path --verbose --quiet --net-verify --exec-verify --help --version --" -- "$cur"))
}
complete -o filenames -F _shackle_run shackle-run
