# lib.sh: shared helpers for the integration tests (sourced, not run).
B=${B:-build}
SCORCH=${SCORCH:-./scorch}
TMP=$(mktemp -d /tmp/scorch-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

# Tests that load BPF need root and BTF; without them they SKIP loudly (never pass).
need_bpf() {
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: needs root to load BPF programs (run make test as root)"; exit 0
	fi
	if [ ! -r /sys/kernel/btf/vmlinux ]; then
		echo "SKIP: this kernel has no BTF (/sys/kernel/btf/vmlinux missing)"; exit 0
	fi
}

# count_matching FILE REGEX: sum of counts of folded lines whose stack matches REGEX.
count_matching() {
	awk -v re="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ re) s += n } END { print s + 0 }' "$1"
}
total_count() {
	awk '{ s += $NF } END { print s + 0 }' "$1"
}
