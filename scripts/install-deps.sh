#!/bin/sh
# install-deps.sh: install the Debian packages scorch needs to build, test and run, if any are
# missing (nodejs and npm build the web UI, chromium runs its browser test, python3-protobuf
# encodes OTLP independently in the OTLP tests, the JDK records JFR for the JFR test and is the
# JVM the Java stack tests profile, ruby, php-cli and php-fpm run the Ruby and PHP stack tests).
# Idempotent: does nothing (and needs no network) when everything is present.
set -eu

PKGS="make gcc g++ clang llvm lld binutils xz-utils bpftool libbpf-dev libelf-dev libdw-dev
libdebuginfod-dev debuginfod liblzma-dev zlib1g-dev libzstd-dev libsqlite3-dev
libcurl4-openssl-dev libiberty-dev pkg-config golang-go linux-perf python3
procps python3-protobuf openjdk-17-jdk-headless clickhouse-server ruby php-cli php-fpm"
# The web UI needs node and npm (any origin: Debian's or another packaging), its browser test
# chromium; asked from Debian only when the command is missing.
command -v node >/dev/null 2>&1 || PKGS="$PKGS nodejs"
command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
command -v chromium >/dev/null 2>&1 || PKGS="$PKGS chromium"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

echo "scorch: installing missing packages:$missing"
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "error: packages missing ($missing) and not root: run 'sudo make deps' or install them yourself" >&2
		exit 1
	fi
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
# shellcheck disable=SC2086
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends $missing
