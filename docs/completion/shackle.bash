# bash completion for shackle(1)                           -*- shell-script -*-
# Commands and options as `shackle help COMMAND` lists them.

_shackle()
{
	local cur prev cmd sub opts
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	local commands="approve attach audit conformance defer detach doctor escalate help keygen modify pending policy reject reset watch"

	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
		return
	fi
	cmd=${COMP_WORDS[1]}
	sub=${COMP_WORDS[2]:-}
	case $cmd in
	audit)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "verify show export replay --help" -- "$cur"))
			return
		fi
		case $sub in
		verify) opts="--pubkey --bundle --shared --json --live --help" ;;
		show) opts="--verdict --tool --since --until --no-checkpoints --color --no-color --json --help" ;;
		export) opts="--pubkey --out --live --help" ;;
		replay) opts="--pubkey --live --json --help" ;;
		esac
		[ "$prev" = --verdict ] && { COMPREPLY=($(compgen -W "ALLOW DENY HITL" -- "$cur")); return; }
		;;
	policy)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "check explain --help" -- "$cur"))
			return
		fi
		case $sub in
		check) opts="--json --help" ;;
		explain) opts="--json --exec --connect --proto --op --help" ;;
		esac
		case $prev in
		--proto) COMPREPLY=($(compgen -W "tcp udp" -- "$cur")); return ;;
		--op) COMPREPLY=($(compgen -W "connect send bind listen" -- "$cur")); return ;;
		esac
		;;
	help)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		elif [ "$COMP_CWORD" -eq 3 ]; then
			case $sub in
			audit) COMPREPLY=($(compgen -W "verify show export replay" -- "$cur")) ;;
			policy) COMPREPLY=($(compgen -W "check explain" -- "$cur")) ;;
			esac
		fi
		return
		;;
	approve | reject) opts="--as --digest --session --json --help" ;;
	defer | escalate) opts="--as --digest --session --help" ;;
	modify) opts="--connect --as --session --help" ;;
	pending) opts="--json --session --help" ;;
	reset) opts="--as --session --help" ;;
	watch) opts="--json --wait --session --help" ;;
	attach) opts="--cgroup --policy --audit --key --session --exec --pin --duration --fsync --control --non-interactive --resolve-every --gateway --sdk-socket --help" ;;
	detach) opts="--pin --help" ;;
	doctor) opts="--json --policy --clean --help" ;;
	keygen) opts="--out --help" ;;
	conformance) opts="--verbose --seal --help" ;;
	esac
	if [ "$prev" = --fsync ]; then
		COMPREPLY=($(compgen -W "none checkpoint entry" -- "$cur"))
	elif [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _shackle shackle
