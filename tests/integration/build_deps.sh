#!/bin/sh
# build_deps.sh: a build on a machine that lacks a tool stops at once with a message naming
# what is missing and `make deps`, and leaves no half-written generated file behind (a later
# build must not take a partial vmlinux.h for up to date).
. tests/integration/lib.inc

command -v make >/dev/null 2>&1 || { echo "SKIP: make is not installed"; exit 0; }
[ -r /sys/kernel/btf/vmlinux ] || { echo "SKIP: this kernel has no BTF"; exit 0; }
OUT=$TMP/b

# No bpftool at all: the dependency check stops the build before anything is written.
make -s B=$OUT BPFTOOL=$TMP/no-such-bpftool $OUT/bpf/vmlinux.h > $TMP/out 2>&1 &&
	fail "make succeeded without bpftool"
grep -q "make deps" $TMP/out || fail "no 'make deps' in: $(cat $TMP/out)"
grep -q "bpftool" $TMP/out || fail "the missing tool is not named: $(cat $TMP/out)"
[ ! -e $OUT/bpf/vmlinux.h ] || fail "vmlinux.h left behind"

# A bpftool that writes part of its output and fails: nothing is left either, and the next
# build with the real one works.
printf '#!/bin/sh\necho "struct partial {"\nexit 1\n' > $TMP/bad-bpftool
chmod +x $TMP/bad-bpftool
make -s B=$OUT BPFTOOL=$TMP/bad-bpftool $OUT/bpf/vmlinux.h > $TMP/out 2>&1 &&
	fail "make succeeded with a failing bpftool"
grep -q "make deps" $TMP/out || fail "no 'make deps' in: $(cat $TMP/out)"
[ ! -e $OUT/bpf/vmlinux.h ] && [ ! -e $OUT/bpf/vmlinux.h.tmp ] || fail "partial vmlinux.h left behind"
if command -v bpftool >/dev/null 2>&1; then
	make -s B=$OUT $OUT/bpf/vmlinux.h > $TMP/out 2>&1 || fail "make with bpftool: $(cat $TMP/out)"
	grep -q 'struct task_struct {' $OUT/bpf/vmlinux.h || fail "vmlinux.h incomplete"
fi
echo "build dependencies: ok"
