#!/bin/sh
# check-deps.sh: what the build needs, checked before anything is compiled, so that a build on
# a machine without them stops at once with one message naming what is missing and the command
# that installs it (instead of failing half-way and leaving partial outputs behind).
#   sh scripts/check-deps.sh CC CLANG BPFTOOL
# Exit status 0 when everything is there; 1 with the list on stderr otherwise.
set -u
CC=${1:-cc} CLANG=${2:-clang} BPFTOOL=${3:-bpftool}
missing="" pkgs=""

need_cmd() { # COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 && return
	missing="$missing $1"
	pkgs="$pkgs $2"
}
need_header() { # HEADER PACKAGE
	printf '#include <%s>\n' "$1" | "$CC" -E -x c - >/dev/null 2>&1 && return
	missing="$missing <$1>"
	pkgs="$pkgs $2"
}

need_cmd "$CC" gcc
need_cmd "$CLANG" clang
need_cmd "$BPFTOOL" bpftool
if command -v "$CC" >/dev/null 2>&1; then
	need_header bpf/libbpf.h libbpf-dev
	need_header libelf.h libelf-dev
	need_header elfutils/libdw.h libdw-dev
	need_header zlib.h zlib1g-dev
	need_header zstd.h libzstd-dev
	need_header sqlite3.h libsqlite3-dev
	need_header curl/curl.h libcurl4-openssl-dev
	need_header libiberty/demangle.h libiberty-dev
fi
[ -z "$missing" ] && exit 0
echo "error: missing to build scorch:$missing" >&2
echo "error: run 'make deps' (as root) to install them, or: apt-get install$pkgs" >&2
exit 1
