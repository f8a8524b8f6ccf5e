#!/bin/sh
# `meson install` puts the man pages and the bash and zsh completion beside
# the programs; the pages render without warnings and the bash completion
# parses. Every command of `shackle help` and every subcommand has its
# section in shackle.1 and its completion entry, and every option a --help
# names is in the man page and in both completions, so none can drift.
# usage: test_cli_install.sh MESON BUILD_DIR SHACKLE SHACKLE_RUN
set -u
MESON=$1
BUILD=$2
SHACKLE=$3
RUN=$4
SRC=${SHACKLE_SOURCE_ROOT:?}
D=$(mktemp -d /tmp/shk-cli-install-XXXXXX)
trap 'rm -rf "$D"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }

if "$MESON" install -C "$BUILD" --no-rebuild --destdir "$D/root" >"$D/install.log" 2>&1; then
	ok "meson install --destdir"
else
	bad "meson install --destdir"; tail -n 20 "$D/install.log"
fi
find_one() { find "$D/root" -path "*/$1" -type f | head -n 1; }
for f in share/man/man1/shackle.1 share/man/man1/shackle-run.1 \
	share/bash-completion/completions/shackle share/bash-completion/completions/shackle-run \
	share/zsh/site-functions/_shackle share/zsh/site-functions/_shackle-run; do
	[ -n "$(find_one "$f")" ] && ok "installed $f" || bad "not installed: $f"
done

for page in shackle.1 shackle-run.1; do
	f=$(find_one "share/man/man1/$page")
	[ -n "$f" ] || continue
	# groff -ww: every warning; man -l renders it as a reader would
	if command -v groff >/dev/null 2>&1; then
		groff -man -ww -z -Tutf8 "$f" 2>"$D/warn"
		[ ! -s "$D/warn" ] && ok "groff renders $page without warnings" || { bad "groff warns on $page"; cat "$D/warn"; }
	fi
	if command -v mandoc >/dev/null 2>&1; then
		mandoc -Tlint -Wwarning "$f" >"$D/warn" 2>&1 && ok "mandoc -Tlint $page" || { bad "mandoc on $page"; cat "$D/warn"; }
	fi
	if command -v man >/dev/null 2>&1; then
		MANWIDTH=80 man --warnings -l "$f" >"$D/page" 2>"$D/warn"
		[ -s "$D/page" ] && [ ! -s "$D/warn" ] && ok "man -l $page" || { bad "man -l $page"; cat "$D/warn"; }
	fi
	command -v groff >/dev/null 2>&1 || command -v man >/dev/null 2>&1 || bad "neither groff nor man to render $page"
done
for c in shackle shackle-run; do
	f=$(find_one "share/bash-completion/completions/$c")
	[ -n "$f" ] && bash -n "$f" && ok "bash -n completion $c" || bad "bash completion $c"
	# the function is defined and registered for the command
	[ -n "$f" ] && bash -c ". '$f' && complete -p $c" >/dev/null 2>&1 && ok "complete -p $c" || bad "complete -p $c"
	f=$(find_one "share/zsh/site-functions/_$c")
	if command -v zsh >/dev/null 2>&1; then
		zsh -n "$f" && ok "zsh -n _$c" || bad "zsh -n _$c"
	fi
	[ -n "$f" ] && head -n 1 "$f" | grep -q "^#compdef $c\$" && ok "_$c is a #compdef $c" || bad "_$c #compdef"
done

# ---- no drift: commands, subcommands and options ----------------------------
man_text() { sed 's/\\-/-/g; s/\\f[BIRP]//g' "$SRC/docs/man/$1"; }
man_text shackle.1 >"$D/shackle.1.txt"
man_text shackle-run.1 >"$D/shackle-run.1.txt"
BASH_C=$SRC/docs/completion/shackle.bash
ZSH_C=$SRC/docs/completion/_shackle
"$SHACKLE" help >"$D/list"
cmds=$(sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' "$D/list")
bash_cmds=$(sed -n 's/^[[:space:]]*local commands="\(.*\)"/\1/p' "$BASH_C")
[ -n "$cmds" ] || bad "no commands in shackle help"
for c in $cmds help; do
	grep -q "^\.SS \"shackle $c\( \|\"\)" "$D/shackle.1.txt" && ok "shackle.1 has a section for $c" ||
		bad "shackle.1 has no section for $c"
	case " $bash_cmds " in *" $c "*) ok "bash completion lists $c" ;; *) bad "bash completion lacks $c" ;; esac
	grep -q "^  '$c:" "$ZSH_C" && ok "zsh completion lists $c" || bad "zsh completion lacks $c"
	[ "$c" = help ] && continue
	"$SHACKLE" "$c" --help >"$D/help" 2>&1
	for s in $(grep -o "shackle $c [a-z][a-z-]*" "$D/help" | awk '{print $3}' | sort -u); do
		grep -q "^\.SS \"shackle $c $s\( \|\"\)" "$D/shackle.1.txt" && ok "shackle.1 has a section for $c $s" ||
			bad "shackle.1 has no section for $c $s"
		grep -q "\b$s\b" "$BASH_C" && grep -q "'$s:" "$ZSH_C" && ok "completions list $c $s" ||
			bad "a completion lacks $c $s"
		"$SHACKLE" "$c" "$s" --help >>"$D/help" 2>&1
	done
	for o in $(grep -o -- "--[a-z][a-z-]*" "$D/help" | sort -u); do
		grep -q -- "$o\b" "$D/shackle.1.txt" || bad "shackle.1 does not name $c $o"
		grep -q -- "$o\b" "$BASH_C" || bad "bash completion lacks $c $o"
		grep -q -- "'$o\[" "$ZSH_C" || grep -q -- "{-h,$o}" "$ZSH_C" || bad "zsh completion lacks $c $o"
	done
	ok "options of $c checked"
done
"$RUN" --help >"$D/help"
for o in $(grep -o -- "--[a-z][a-z-]*" "$D/help" | sort -u); do
	grep -q -- "$o\b" "$D/shackle-run.1.txt" || bad "shackle-run.1 does not name $o"
	grep -q -- "$o\b" "$SRC/docs/completion/shackle-run.bash" || bad "bash completion lacks shackle-run $o"
	grep -q -- "'$o\[" "$SRC/docs/completion/_shackle-run" || grep -q -- "{-h,$o}" "$SRC/docs/completion/_shackle-run" ||
		bad "zsh completion lacks shackle-run $o"
done
ok "options of shackle-run checked"

echo "$fails failure(s)"
[ "$fails" = 0 ]
