#!/bin/sh
# make-corpus.sh: regenerate the replay corpus (tests/replay/*/*.case) from live programs of
# this machine, with `scorch capture`. Run as root from the repository root after `make
# test-build` (the C helpers) on a machine with the runtimes installed; a program that is not
# installed is left out with a note. Each directory is one program; each case one thread at
# one moment, its description saying what runs. `make test` replays them all
# (tests/integration/replay.sh: `scorch replay --expect tests/replay/`).
#
#   sh tests/replay/make-corpus.sh [--only NAME,...]
#
# What each case covers (native frames: the user-space unwinder, the same step as BPF):
#   c-chain      C without frame pointers: a signal frame, a libc callback (qsort)
#   c-deep       600 frames of recursion
#   c-wide       600 frames of 128 bytes (75 KiB of stack)
#   c-fp         C with frame pointers
#   c-leaf-asm   a leaf assembly function without CFI (the leaf rule)
#   c-switch     a stack switch that leaves the old stack pointer in rbp (as Rust's psm)
#   c-ucontext   a makecontext() stack with no way back ([stack switch])
#   go, go-strip every thread of a Go 1.19 program (goroutines, time.now into the vDSO, the
#                system stack), built normal and stripped
#   rust         a Rust program's threads
#   python3, node, java, ruby, php, perl: the native part of each interpreter's threads (the
#                runtimes' own frames come from the BPF walkers, not in these cases); also
#                python3.8-3.13 (pyenv), java -Xint and C1 only, node --jitless, ruby --yjit,
#                php with opcache's tracing JIT
#   php-pcre-jit PHP in PCRE2's JIT code (its links, its prologue and epilogue)
#   rec-*        samples scorch record could not unwind whole (--capture-dir): stack
#                snapshots, with the runtime frames the walkers put in them
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SCORCH=$ROOT/scorch
H=$ROOT/build/helpers
OUT=$ROOT/tests/replay
ONLY=
[ "${1:-}" = --only ] && ONLY=",$2,"
TMP=$(mktemp -d /tmp/replay-corpus.XXXXXX)
trap 'rm -rf "$TMP"; kill $(jobs -p) 2>/dev/null' EXIT
[ -x "$SCORCH" ] || { echo "build scorch first (make)"; exit 1; }

want() { [ -z "$ONLY" ] || case "$ONLY" in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

# capture NAME DESCRIPTION SAMPLES CMD...: start CMD, let it run, capture every thread
capture() {
	name=$1 desc=$2 n=$3
	shift 3
	want "$name" || return 0
	"$@" > "$TMP/$name.out" 2>&1 &
	pid=$!
	sleep "${WARMUP:-1}"
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "$name: skipped ($(tail -1 "$TMP/$name.out"))"
		return 0
	fi
	rm -rf "${OUT:?}/$name"
	mkdir -p "$OUT/$name"
	"$SCORCH" capture -q -p "$pid" -n "$n" -i 7ms -o "$OUT/$name" -m "$desc" ||
		echo "$name: capture failed"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	# file names without the pids of this run
	i=0
	for f in "$OUT/$name"/*.case; do
		[ -f "$f" ] || continue
		mv "$f" "$OUT/$name/$(printf '%03d' $i).case"
		i=$((i + 1))
	done
	echo "$name: $i cases"
}

capture c-chain "C without frame pointers: main > level1 > level2 > qsort > cmp > raise > signal handler > leaf_spin" 4 \
	"$H/unwind_chain" chain 30
capture c-deep "C: 600 frames of recursion (deep_start > recurse x 600 > leaf_spin)" 2 \
	"$H/unwind_chain" deep 600 30
capture c-wide "C: 600 frames of 128 bytes (75 KiB of stack)" 2 "$H/unwind_chain" wide 600 30
capture c-fp "C with frame pointers: main > run > hot_function / cold_function" 4 "$H/fp_hot" 30
capture c-leaf-asm "C: a leaf assembly function without CFI (asm_leaf), the leaf rule" 4 \
	"$H/stack_edges" leaf 30
capture c-switch "C: a switch to an mmap'ed stack, the old stack pointer in rbp (as psm)" 4 \
	"$H/stack_edges" linked 30
capture c-ucontext "C: a makecontext() stack with no link back ([stack switch])" 2 \
	"$H/stack_edges" ucontext 30

if command -v go > /dev/null 2>&1 && (want go || want go-strip); then
	mkdir -p "$TMP/go"
	cp tests/helpers/go/stacks/stacks.go tests/helpers/go/stacks/go.mod "$TMP/go/"
	if (cd "$TMP/go" && go build -o "$TMP/gostk" . && go build -ldflags='-s -w' -o "$TMP/gostk_s" .) \
		> "$TMP/go.log" 2>&1; then
		capture go "Go 1.19: 24 goroutines (time.Now, allocation and recursion, computing)" 3 \
			"$TMP/gostk" 30
		capture go-strip "Go 1.19, stripped (-s -w): the same program" 3 "$TMP/gostk_s" 30
	else
		echo "go: skipped (the build failed)"
	fi
fi

if command -v rustc > /dev/null 2>&1 && want rust; then
	cat > "$TMP/spin.rs" <<'EOF'
use std::thread;
#[inline(never)]
fn work(d: u64, x: u64) -> u64 { if d == 0 { x.wrapping_mul(6364136223846793005).wrapping_add(1) } else { work(d - 1, x ^ d) + 1 } }
fn main() {
    let hs: Vec<_> = (0..3).map(|i| thread::spawn(move || { let mut s = i; loop { s = work(40, s); if s == 7 { println!("{}", s); } } })).collect();
    for h in hs { h.join().unwrap(); }
}
EOF
	if rustc -O -g -o "$TMP/rspin" "$TMP/spin.rs" > "$TMP/rust.log" 2>&1; then
		capture rust "Rust (-O, no frame pointers): 3 threads recursing" 3 "$TMP/rspin"
	else
		echo "rust: skipped (rustc failed)"
	fi
fi

# every CPython under pyenv (each its own build of the interpreter and libpython)
for v in /root/.pyenv/versions/3.*/bin/python3.[0-9]*; do
	[ -x "$v" ] || continue
	case "$v" in *-config | *m) continue ;; esac
	ver=$("$v" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || continue
	capture "python$ver" "CPython $("$v" -V 2>&1) (pyenv): the interpreter's native frames in a hot loop" 3 \
		"$v" -c 'import time
def f(n): return n if n < 2 else f(n-1) + f(n-2)
t = time.time()
while time.time() - t < 30: f(18)'
done
py=$(command -v python3.11 || command -v python3 || true)
[ -n "$py" ] && capture python3 "CPython ($($py -V 2>&1)): the interpreter's native frames in a hot loop" 3 \
	"$py" -c 'import time
def f(n): return n if n < 2 else f(n-1) + f(n-2)
t = time.time()
while time.time() - t < 30: f(18)'
command -v node > /dev/null 2>&1 && capture node "Node $(node -v): a JIT-compiled loop and V8's threads (JIT code by frame pointer)" 2 \
	node -e 'function f(n){return n<2?n:f(n-1)+f(n-2)} const t=Date.now(); while(Date.now()-t<30000) f(20)'
if command -v java > /dev/null 2>&1 && command -v javac > /dev/null 2>&1 && want java; then
	mkdir -p "$TMP/java"
	cat > "$TMP/java/Spin.java" <<'EOF'
public class Spin {
    static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    public static void main(String[] a) {
        long end = System.currentTimeMillis() + 30000, s = 0;
        while (System.currentTimeMillis() < end) { s += fib(22); if (s % 1000003 == 0) new byte[1 << 20].hashCode(); }
        System.out.println(s);
    }
}
EOF
	if javac -d "$TMP/java" "$TMP/java/Spin.java" > "$TMP/javac.log" 2>&1; then
		WARMUP=2 capture java "OpenJDK $(java -version 2>&1 | head -1 | cut -d'"' -f2): every JVM thread (interpreter, compilers, GC)" 1 \
			java -Xmx64m -cp "$TMP/java" Spin
		WARMUP=2 capture java-xint "OpenJDK, interpreted only (-Xint): the JVM's threads" 1 \
			java -Xint -Xmx64m -cp "$TMP/java" Spin
		WARMUP=2 capture java-c1 "OpenJDK, C1 only (-XX:TieredStopAtLevel=1): the JVM's threads" 1 \
			java -XX:TieredStopAtLevel=1 -Xmx64m -cp "$TMP/java" Spin
	fi
fi
command -v ruby > /dev/null 2>&1 && capture ruby "Ruby $(ruby -e 'print RUBY_VERSION'): the VM's native frames" 3 \
	ruby -e 'def f(n) = n < 2 ? n : f(n-1) + f(n-2); t = Time.now; f(20) while Time.now - t < 30'
command -v ruby > /dev/null 2>&1 && capture ruby-yjit "Ruby $(ruby -e 'print RUBY_VERSION') with YJIT: the VM's native frames and YJIT code" 3 \
	ruby --yjit -e 'def f(n) = n < 2 ? n : f(n-1) + f(n-2); t = Time.now; f(20) while Time.now - t < 30'
command -v node > /dev/null 2>&1 && capture node-jitless "Node $(node -v) --jitless: the interpreter's native frames" 2 \
	node --jitless -e 'function f(n){return n<2?n:f(n-1)+f(n-2)} const t=Date.now(); while(Date.now()-t<30000) f(20)'
command -v php > /dev/null 2>&1 && capture php "PHP $(php -r 'echo PHP_VERSION;'): the VM's native frames" 3 \
	php -r 'function f($n){return $n<2?$n:f($n-1)+f($n-2);} $t=microtime(true); while(microtime(true)-$t<30) f(18);'
command -v php > /dev/null 2>&1 && capture php-jit "PHP $(php -r 'echo PHP_VERSION;') with opcache's tracing JIT: native frames and JIT code" 3 \
	php -d opcache.enable_cli=1 -d opcache.jit=tracing -d opcache.jit_buffer_size=32M \
	-r 'function f($n){return $n<2?$n:f($n-1)+f($n-2);} $t=microtime(true); while(microtime(true)-$t<30) f(18);'
command -v perl > /dev/null 2>&1 && capture perl "Perl $(perl -e 'printf "%vd", $^V'): the VM's native frames" 3 \
	perl -e 'sub f { my $n = shift; $n < 2 ? $n : f($n-1) + f($n-2) } my $t = time; f(18) while time - $t < 30'

# from samples of scorch record whose stacks it could not unwind whole (--capture-dir): the
# snapshot path, with the runtime frames the BPF walkers put in the sample
# recorded NAME DESCRIPTION CMD...
recorded() {
	name=$1 desc=$2
	shift 2
	want "$name" || return 0
	rm -rf "${OUT:?}/$name" "$TMP/$name"
	"$SCORCH" record -q -F 499 --capture-dir "$TMP/$name" --capture-max 3 -o "$TMP/$name.folded" \
		-- "$@" > "$TMP/$name.log" 2>&1 || { echo "$name: record failed: $(tail -1 "$TMP/$name.log")"; return 0; }
	mkdir -p "$OUT/$name"
	i=0
	for f in "$TMP/$name"/*.case; do
		[ -f "$f" ] || continue
		mv "$f" "$OUT/$name/$(printf '%03d' $i).case"
		i=$((i + 1))
	done
	echo "$name: $i cases ($desc)"
}
recorded rec-ucontext "record: a makecontext() stack, [stack switch]" "$H/stack_edges" ucontext 2
command -v php > /dev/null 2>&1 && capture php-pcre-jit \
	"PHP $(php -r 'echo PHP_VERSION;') matching regexes with PCRE2's JIT: through the JIT frames by their links" 12 \
	php -d pcre.jit=1 tests/helpers/php/regex.php 30

n=$(find "$OUT" -name '*.case' | wc -l)
bytes=$(find "$OUT" -name '*.case' -exec cat {} + | wc -c)
echo "corpus: $n cases, $bytes bytes"
