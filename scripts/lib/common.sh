# shellcheck shell=bash
# Shared by scripts/setup and scripts/test-all.

SHK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The published SP/1.0 vectors live beside the checkout (never in the tree).
SHK_SHARED_DIR=${SHK_SHARED_DIR:-$SHK_ROOT/../shared}

# Debian 12 packages shackle needs to build, test and benchmark.
SHK_DEB_PACKAGES=(
	gcc pkg-config meson ninja-build python3 python3-venv curl git strace iproute2
	libjansson-dev libsodium-dev libseccomp-dev libbpf-dev check
	libmicrohttpd-dev libcurl4-openssl-dev
	clang llvm bpftool libclang-rt-14-dev
	runc busybox-static groff-base valgrind
	libhiredis-dev redis-server
)

shk_log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

shk_as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Install whatever is missing (idempotent, quiet when nothing is).
shk_install_deps() {
	local missing=() p
	for p in "${SHK_DEB_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	# Node.js runs the SDK's Node client and the agent CLI the tests install
	# from npm; a Node.js from elsewhere (NodeSource) is kept, not replaced
	command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
	[ ${#missing[@]} -eq 0 ] && return 0
	shk_log "installing ${missing[*]}"
	shk_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	shk_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# shk_build DIR [meson options...]: configure once, then build. Output goes
# to DIR.log; on failure its end is shown and the caller's `set -e` stops.
shk_build() {
	local dir=$1; shift
	local log="$SHK_ROOT/$dir.log"
	if [ ! -f "$dir/build.ninja" ]; then
		if ! meson setup "$dir" "$SHK_ROOT" "$@" >"$log" 2>&1; then
			tail -n 40 "$log" >&2
			return 1
		fi
	fi
	if ! ninja -C "$dir" >>"$log" 2>&1; then
		grep -E 'error|FAILED' "$log" | head -n 40 >&2
		return 1
	fi
}
