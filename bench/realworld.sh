#!/bin/sh
# realworld.sh: scorch on real programs of each runtime, next to perf --call-graph dwarf.
#
# Each program below is profiled by `scorch record -F HZ -- sh -c CMD` (every process it
# starts), then by `perf record -e cpu-clock -F HZ --call-graph dwarf` on the same command, in
# the same run; inputs are generated in a scratch directory and put back to the same state
# before each of the two runs. bench/realworld_classify.py reads both profiles (its
# --self-test runs first) and gives, per program:
#
#   samples         samples of the run
#   % broken        samples with a marker frame ([unwind error], [unknown], [truncated], a
#                   runtime's [python: unknown code], [perl: unknown sub], [java: bad frame],
#                   [v8: unreadable frame], [ruby: C function], ...; perf: a frame with neither
#                   symbol nor file) or whose outermost user frame is not a process or thread
#                   entry (_start, clone3, start_thread, the loader's entry, runtime.goexit,
#                   runtime.mstart, runtime.clone); after it (marker / no root), the two parts;
#                   details.tsv names the markers and the outermost frames
#   runtime frames  interpreted programs: of the interpreter's samples (its comm; a JVM's main
#                   thread; Node without V8's compiler and GC threads), the % with at least
#                   one frame of its runtime
#   foreign         samples with a frame of a runtime their process does not run (a Java or
#                   Python frame in a Go or Ruby process, any runtime frame in a native tool);
#                   the frames are listed in details.tsv
#   module+0x       distinct module+0xOFFSET rows (code without symbols), and in brackets the
#                   functions they are (distinct .eh_frame FDEs holding them); perf: distinct
#                   unsymbolized addresses, the same way
#
# Programs (names for --only): go-build go-vet go-compile py-pytest py-pylint py-black rb-gem
# rb-rdoc pl-pod2man php-composer php-preg rust-cargo java-javac node-tsc node-http xz git.
# What is missing is installed with apt-get (npm for TypeScript, into --cache); a program
# that cannot run gets the row "skipped: REASON", the others still run.
#
# Needs root, ./scorch (make scorch), perf (linux-perf) for its columns.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)

usage() {
	cat <<'EOF'
usage: sudo sh bench/realworld.sh [--hz N] [--out DIR] [--only NAME,NAME] [--quick]
                                  [--no-perf] [--perf-stack BYTES] [--cache DIR]

Profiles real programs of each runtime with scorch record (and perf record --call-graph
dwarf), and prints per program: samples, % broken, % of the interpreter's samples with runtime
frames, foreign-runtime frames, module+0x rows of code without symbols.

  --hz N        sampling frequency of both profilers (default 499)
  --out DIR     results: results.tsv, details.tsv (foreign and broken frames), the profiles
                (default: a new directory under /tmp, printed at the end)
  --only LIST   run only these programs (comma-separated names, see the top of the script)
  --quick       smaller inputs (about a third of the work)
  --no-perf     scorch only
  --perf-stack BYTES  user stack perf copies per sample (default 8192, perf's own; at most
                65528): deeper stacks end early in perf's columns
  --cache DIR   where generated inputs and npm packages are kept between runs
                (default /var/tmp/scorch-realworld)
EOF
}

HZ=499
OUT=
ONLY=
QUICK=0
PERF=1
PERF_STACK=8192
CACHE=/var/tmp/scorch-realworld
while [ $# -gt 0 ]; do
	case $1 in
	--hz) HZ=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--no-perf) PERF=0; shift ;;
	--perf-stack) PERF_STACK=$2; shift 2 ;;
	--cache) CACHE=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
case $HZ$PERF_STACK in ''|*[!0-9]*) echo "error: --hz and --perf-stack want numbers" >&2; exit 2 ;; esac

[ "$(id -u)" = 0 ] || { echo "error: needs root" >&2; exit 1; }
SCORCH=${SCORCH:-$ROOT/scorch}
[ -x "$SCORCH" ] || { echo "error: build ./scorch first (make scorch)" >&2; exit 1; }
CLASSIFY="python3 $ROOT/bench/realworld_classify.py"
$CLASSIFY --self-test || { echo "error: the classifier's self-test failed" >&2; exit 1; }
if [ "$PERF" = 1 ] && ! command -v perf > /dev/null; then
	echo "note: perf is missing (apt-get install linux-perf): its columns are left out"
	PERF=0
fi
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/realworld.XXXXXX)
mkdir -p "$OUT" "$CACHE" || exit 1
OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d /tmp/realworld-work.XXXXXX)
trap 'rm -rf "$W"' EXIT
PATH=$PATH:/root/.cargo/bin:/usr/local/go/bin
export PATH
# sz FULL QUICK: an input size for the mode
sz() { if [ "$QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }

# --- helpers -------------------------------------------------------------------------------

# need_pkg PKG...: installs the Debian packages missing; 1 (and SKIP set) when that fails
need_pkg() {
	missing=
	for p in "$@"; do
		dpkg-query -W -f '${Status}' "$p" 2> /dev/null | grep -q 'ok installed' ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "installing:$missing" >&2
	# shellcheck disable=SC2086
	if ! DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q \
		--no-install-recommends $missing > "$W/apt.log" 2>&1; then
		SKIP="apt-get install$missing failed: $(tail -1 "$W/apt.log")"
		return 1
	fi
}

need_cmd() { # need_cmd CMD REASON
	command -v "$1" > /dev/null 2>&1 && return 0
	SKIP=$2
	return 1
}

pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else printf "-" }'; }
fig() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- programs --------------------------------------------------------------------------
# Each setup_NAME prepares inputs (once, in $CACHE, or in $W) and sets:
#   CMD      the shell command profiled (run in $W/run, a fresh directory)
#   PREP     a shell command run before each profiled run, outside the profile
#   RUNTIME  the runtime of the interpreter's processes (empty: a native program)
#   VM       the interpreter's comm (a Python regex): where frames of RUNTIME belong
#   COVER    the comm of the threads counted for the runtime frames column (default: VM)
#   HELPERS  a frame of the runtime's helper threads (JIT compiler, GC), left out of that
#            column (a Python regex; default: none)
#   LABEL    the row's description
# or return 1 with SKIP set.

GOWARM=$CACHE/go-warm-$(go env GOVERSION 2> /dev/null)
go_warm() { # a build cache holding net/http and its dependencies, built once
	[ -d "$GOWARM" ] && return 0
	echo "building a warm Go cache in $GOWARM" >&2
	GOCACHE=$GOWARM.new GOFLAGS= go build -o /dev/null net/http go/types \
		> "$W/go.log" 2>&1 || { SKIP="go build of the warm cache failed: $(tail -1 "$W/go.log")"; return 1; }
	mv "$GOWARM.new" "$GOWARM"
}

setup_go_build() {
	need_cmd go "go is missing (apt-get install golang-go)" || return 1
	pkg=net/http
	[ "$QUICK" = 1 ] && pkg=encoding/json
	LABEL="go build -a $pkg, empty GOCACHE (go $(go env GOVERSION | sed 's/^go//'))"
	PREP="rm -rf $W/gocache"
	CMD="GOCACHE=$W/gocache GOFLAGS= go build -a -o /dev/null $pkg"
}

setup_go_vet() {
	need_cmd go "go is missing (apt-get install golang-go)" || return 1
	go_warm || return 1
	pkgs="net/http fmt"
	[ "$QUICK" = 1 ] && pkgs="encoding/json"
	LABEL="go vet $pkgs (compiled dependencies cached, vet results not)"
	PREP="rm -rf $W/gocache && cp -a $GOWARM $W/gocache"
	CMD="GOCACHE=$W/gocache GOFLAGS= go vet $pkgs"
}

setup_go_compile() {
	need_cmd go "go is missing (apt-get install golang-go)" || return 1
	go_warm || return 1
	# the package itself is left out of the warm cache by a flag only it gets
	pkg=net/http
	[ "$QUICK" = 1 ] && pkg=go/types
	LABEL="one compile: go build $pkg, dependencies cached"
	PREP="rm -rf $W/gocache && cp -a $GOWARM $W/gocache"
	CMD="GOCACHE=$W/gocache GOFLAGS= go build -gcflags=$pkg=-d=ssa/check/off -o /dev/null $pkg"
}

gen_pytests() { # gen_pytests DIR FILES: tests doing real stdlib work
	mkdir -p "$1"
	i=0
	while [ $i -lt "$2" ]; do
		cat > "$1/test_m$i.py" <<EOF
import decimal, difflib, json, re, textwrap
import pytest

TEXT = " ".join("word%d value=%d" % (k, k * $i) for k in range(400))


@pytest.mark.parametrize("n", range(12))
def test_json_roundtrip(n):
    doc = {"k%d" % k: [k, str(k), {"v": k * n}] for k in range(300)}
    assert json.loads(json.dumps(doc, sort_keys=True)) == doc


@pytest.mark.parametrize("n", range(6))
def test_regex(n):
    found = re.findall(r"word(\d+) value=(\d+)", TEXT)
    assert len(found) == 400


def test_decimal():
    decimal.getcontext().prec = 60
    x = sum(decimal.Decimal(1) / decimal.Decimal(k) for k in range(1, 800))
    assert x > 7


def test_difflib():
    a = TEXT.split()
    b = a[::-1]
    assert difflib.SequenceMatcher(None, a[:300], b[:300]).ratio() < 1


def test_wrap():
    assert len(textwrap.wrap(TEXT, 37)) > 10
EOF
		i=$((i + 1))
	done
}

setup_py_pytest() {
	need_pkg python3-pytest python3-pytest-xdist || return 1
	n=$(sz 40 16)
	gen_pytests "$W/pytests" "$n"
	LABEL="python3 -m pytest -n 2 (pytest-xdist), $n generated test files"
	PREP=
	CMD="cd $W/pytests && /usr/bin/python3 -m pytest -q -n 2 -p no:cacheprovider > /dev/null"
	RUNTIME=python
	VM='^(python3|pytest)'
}

setup_py_pylint() {
	need_pkg pylint || return 1
	d=/usr/lib/python3.11/json
	[ "$QUICK" = 1 ] || d="$d /usr/lib/python3.11/email"
	LABEL="pylint $(echo $d | sed 's|/usr/lib/python3.11/||g')"
	PREP=
	CMD="pylint --jobs=1 --persistent=n $d > /dev/null; true"
	RUNTIME=python
	VM='^(python3|pylint)'
}

setup_py_black() {
	need_pkg black || return 1
	n=$(sz 20 8)
	files=$(ls /usr/lib/python3.11/*.py | head -"$n" | tr '\n' ' ')
	LABEL="black --check on stdin, $n stdlib files, one process each (short-lived)"
	PREP=
	CMD="for f in $files; do black -q --check - < \$f; done; true"
	RUNTIME=python
	VM='^(python3|black)'
}

setup_rb_gem() {
	need_cmd gem "gem is missing (apt-get install ruby)" || return 1
	n=$(sz 8 3)
	LABEL="gem list and gem env, $n times each (short-lived, ruby $(ruby -e 'print RUBY_VERSION'))"
	PREP=
	CMD="for i in \$(seq $n); do gem list > /dev/null; gem env > /dev/null; done"
	RUNTIME=ruby
	VM='^(ruby|gem)'
}

setup_rb_rdoc() {
	need_cmd rdoc "rdoc is missing (apt-get install ruby)" || return 1
	files="/usr/lib/ruby/3.1.0/net /usr/lib/ruby/3.1.0/csv /usr/lib/ruby/3.1.0/optparse.rb"
	[ "$QUICK" = 1 ] && files="/usr/lib/ruby/3.1.0/csv"
	LABEL="rdoc --ri of $(echo $files | sed 's|/usr/lib/ruby/3.1.0/||g')"
	PREP="rm -rf $W/rdoc"
	CMD="rdoc -q --ri -o $W/rdoc $files > /dev/null"
	RUNTIME=ruby
	VM='^(ruby|rdoc)'
}

setup_pl_pod2man() {
	need_pkg perl-doc || return 1
	n=$(sz 40 15)
	files=$(ls /usr/share/perl/5.36/pod/*.pod | head -"$n" | tr '\n' ' ')
	LABEL="pod2man, $n core pods, one process each (perl $(perl -e 'printf "%vd", $^V'))"
	PREP=
	CMD="for f in $files; do pod2man \$f > /dev/null; done"
	RUNTIME=perl
	VM='^(perl|pod2man)'
}

setup_php_composer() {
	need_pkg composer || return 1
	d=$W/composer
	mkdir -p "$d/src"
	cat > "$d/composer.json" <<'EOF'
{
    "name": "bench/app",
    "description": "generated classes for a classmap",
    "type": "project",
    "license": "MIT",
    "require": {"php": ">=8.1", "ext-json": "*", "ext-pcre": "*"},
    "autoload": {"classmap": ["src/"]}
}
EOF
	n=$(sz 600 200)
	awk -v n="$n" -v d="$d/src" 'BEGIN {
		for (i = 0; i < n; i++) {
			f = sprintf("%s/C%d.php", d, i)
			printf "<?php\nnamespace App\\Gen%d;\n\n/** class %d */\nfinal class C%d\n{\n", i % 20, i, i > f
			for (m = 0; m < 12; m++)
				printf "    public function m%d(int $x): int\n    {\n        return $x * %d + %d; // \"class X\"\n    }\n\n", m, m, i > f
			printf "}\n" > f
			close(f)
		}
	}'
	k=$(sz 5 2)
	LABEL="composer validate, show --platform, dump-autoload -o ($n classes), $k times"
	PREP="rm -rf $d/vendor"
	CMD="cd $d && export COMPOSER_HOME=$W/composer-home COMPOSER_ALLOW_SUPERUSER=1 COMPOSER_DISABLE_NETWORK=1 COMPOSER_NO_INTERACTION=1 && for i in \$(seq $k); do composer -q validate --no-check-publish; composer -q show --platform; composer -q dump-autoload -o; done"
	RUNTIME=php
	VM='^(php|composer)'
}

setup_php_preg() {
	need_cmd php "php is missing (apt-get install php-cli)" || return 1
	cat > "$W/preg.php" <<'EOF'
<?php
// Log lines parsed, rewritten and split with preg_* (pcre.jit on): the regex engine's JIT code
// and PHP frames around it.
function make_log(int $n): array {
    $out = [];
    for ($i = 0; $i < $n; $i++)
        $out[] = sprintf('10.0.%d.%d - - [28/Nov/2026:20:%02d:%02d +0000] "GET /api/v%d/items/%d?q=%s HTTP/1.1" %d %d "ua/%d"',
            $i % 250, $i % 200, $i % 60, $i % 60, $i % 3, $i, md5((string)$i), 200 + $i % 5, $i * 7, $i % 9);
    return $out;
}
function parse(array $lines): int {
    $n = 0;
    foreach ($lines as $l) {
        if (preg_match('~^(\S+) \S+ \S+ \[([^\]]+)\] "(\w+) (/api/v(\d)/(\w+)/(\d+))\?q=([0-9a-f]+) [^"]+" (\d{3}) (\d+)~', $l, $m))
            $n += (int)$m[9];
    }
    return $n;
}
function rewrite(array $lines): int {
    $s = implode("\n", $lines);
    $s = preg_replace_callback('~/items/(\d+)~', fn($m) => '/items/' . ($m[1] * 2), $s);
    $s = preg_replace('~\b([0-9a-f]{8})[0-9a-f]{24}\b~', '$1', $s);
    return count(preg_split('~\s+|"~', $s));
}
$secs = (float)($argv[1] ?? 6);
$lines = make_log(20000);
$t = microtime(true);
$total = 0;
while (microtime(true) - $t < $secs)
    $total += parse($lines) + rewrite($lines) + count(preg_grep('~ 50[0-4] ~', $lines));
echo $total, "\n";
EOF
	s=$(sz 6 3)
	PCRE_JIT=${PCRE_JIT:-1}  # PCRE_JIT=0 in the environment: the same without pcre2's JIT
	LABEL="PHP script: preg_match/replace/split/grep on 20000 log lines for $s s, pcre.jit=$PCRE_JIT (php $(php -r 'echo PHP_VERSION;'))"
	PREP=
	CMD="php -d pcre.jit=$PCRE_JIT $W/preg.php $s > /dev/null"
	RUNTIME=php
	VM='^php'
}

setup_rust_cargo() {
	need_cmd cargo "cargo is missing (rustup in /root/.cargo/bin)" || return 1
	d=$W/crate
	mkdir -p "$d/src"
	printf '[package]\nname = "benchcrate"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n' > "$d/Cargo.toml"
	n=$(sz 30 12)
	awk -v n="$n" -v d="$d/src" 'BEGIN {
		lib = d "/lib.rs"
		for (i = 0; i < n; i++) {
			printf "pub mod m%d;\n", i > lib
			f = sprintf("%s/m%d.rs", d, i)
			printf "use std::collections::HashMap;\nuse std::fmt;\n\n" > f
			printf "#[derive(Debug, Clone, PartialEq)]\npub enum Op%d { Add(i64), Mul(i64), Name(String), Nest(Vec<Op%d>) }\n\n", i, i > f
			printf "pub trait Eval%d { fn eval(&self, acc: i64) -> i64; }\n\n", i > f
			printf "impl Eval%d for Op%d {\n    fn eval(&self, acc: i64) -> i64 {\n        match self {\n", i, i > f
			printf "            Op%d::Add(v) => acc.wrapping_add(*v),\n            Op%d::Mul(v) => acc.wrapping_mul(*v),\n", i, i > f
			printf "            Op%d::Name(s) => acc + s.len() as i64,\n            Op%d::Nest(v) => v.iter().fold(acc, |a, o| o.eval(a)),\n        }\n    }\n}\n\n", i, i > f
			printf "impl fmt::Display for Op%d {\n    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, \"{:?}\", self) }\n}\n\n", i > f
			printf "pub struct Store%d<T: Clone + fmt::Debug> { items: HashMap<String, Vec<T>> }\n\n", i > f
			printf "impl<T: Clone + fmt::Debug> Store%d<T> {\n    pub fn new() -> Self { Store%d { items: HashMap::new() } }\n", i, i > f
			printf "    pub fn put(&mut self, k: &str, v: T) { self.items.entry(k.to_string()).or_default().push(v); }\n" > f
			printf "    pub fn dump(&self) -> Vec<String> { let mut v: Vec<String> = self.items.iter().map(|(k, x)| format!(\"{}={:?}\", k, x)).collect(); v.sort(); v }\n}\n\n" > f
			for (j = 0; j < 8; j++) {
				printf "pub fn f%d_%d(input: &[i64]) -> (i64, Vec<String>) {\n", i, j > f
				printf "    let ops: Vec<Op%d> = input.iter().map(|x| match x %% 4 { 0 => Op%d::Add(*x), 1 => Op%d::Mul(*x), 2 => Op%d::Name(format!(\"n{}\", x)), _ => Op%d::Nest(vec![Op%d::Add(1), Op%d::Mul(*x)]) }).collect();\n", i, i, i, i, i, i, i > f
				printf "    let mut s: Store%d<Op%d> = Store%d::new();\n    for (k, o) in ops.iter().enumerate() { s.put(&format!(\"k{}\", k %% %d), o.clone()); }\n", i, i, i, j + 3 > f
				printf "    let total = ops.iter().fold(%d, |a, o| o.eval(a));\n    (total, s.dump().into_iter().filter(|l| l.contains(\"Nest\")).collect())\n}\n\n", j > f
			}
			close(f)
		}
	}'
	LABEL="cargo build --offline (debug), a generated crate of $n modules, no dependencies ($(rustc --version | cut -d' ' -f1-2))"
	PREP="rm -rf $W/crate-target"
	CMD="cd $d && CARGO_TARGET_DIR=$W/crate-target cargo build -q --offline"
	RUNTIME=
	VM=
}

setup_java_javac() {
	need_cmd javac "javac is missing (apt-get install openjdk-17-jdk-headless)" || return 1
	d=$W/java/src/bench
	mkdir -p "$d"
	n=$(sz 160 60)
	awk -v n="$n" -v d="$d" 'BEGIN {
		for (i = 0; i < n; i++) {
			f = sprintf("%s/C%d.java", d, i)
			printf "package bench;\n\nimport java.util.*;\nimport java.util.function.*;\nimport java.util.stream.*;\n\n" > f
			printf "public final class C%d<T extends Comparable<T>> {\n    private final Map<String, List<T>> items = new HashMap<>();\n\n", i > f
			printf "    public void put(String k, T v) { items.computeIfAbsent(k, x -> new ArrayList<>()).add(v); }\n\n" > f
			for (m = 0; m < 8; m++) {
				printf "    public Optional<T> max%d(Predicate<T> p) {\n        return items.values().stream().flatMap(List::stream).filter(p).max(Comparator.naturalOrder());\n    }\n\n", m > f
				printf "    public static String s%d(int x) {\n        switch (x %% 4) { case 0: return \"a\" + x; case 1: return String.valueOf(x * %d); default: return IntStream.range(0, x).mapToObj(Integer::toString).collect(Collectors.joining(\",\")); }\n    }\n\n", m, i > f
			}
			if (i > 0)
				printf "    public int prev() { C%d<String> c = new C%d<>(); c.put(\"k\", s0(%d)); return c.max0(s -> !s.isEmpty()).map(String::length).orElse(0); }\n", i - 1, i - 1, i > f
			printf "}\n" > f
			close(f)
		}
	}'
	LABEL="javac of $n generated source files ($(javac -version 2>&1))"
	PREP="rm -rf $W/java/classes"
	CMD="javac -d $W/java/classes $d/*.java"
	RUNTIME=java
	VM='^(?!(sh|bash|dash)$)'  # every thread of the JVM, named by Java
	COVER='^main$'            # the thread running javac (not the JIT compilers and GC)
}

TSVER=5.9.3
setup_node_tsc() {
	need_cmd node "node is missing" || return 1
	tsc=$CACHE/npm/node_modules/typescript/bin/tsc
	if [ ! -f "$tsc" ]; then
		need_cmd npm "npm is missing" || return 1
		echo "installing typescript@$TSVER from npm into $CACHE/npm" >&2
		(cd "$CACHE" && timeout 300 npm install --no-audit --no-fund --silent --prefix "$CACHE/npm" \
			"typescript@$TSVER") > "$W/npm.log" 2>&1 ||
			{ SKIP="npm install typescript@$TSVER failed: $(tail -1 "$W/npm.log")"; return 1; }
	fi
	d=$W/ts
	mkdir -p "$d/src"
	printf '{"compilerOptions": {"target": "es2020", "module": "commonjs", "strict": true, "outDir": "out"}, "include": ["src"]}\n' > "$d/tsconfig.json"
	n=$(sz 150 60)
	awk -v n="$n" -v d="$d/src" 'BEGIN {
		for (i = 0; i < n; i++) {
			f = sprintf("%s/m%d.ts", d, i)
			if (i > 0)
				printf "import { Store%d, Item%d } from \"./m%d\";\n", i - 1, i - 1, i - 1 > f
			printf "export interface Item%d { id: number; name: string; tags: string[]; meta?: Record<string, number> }\n", i > f
			printf "export type Key%d<T> = { [K in keyof T]: T[K] extends number ? K : never }[keyof T];\n", i > f
			printf "export class Store%d<T extends Item%d = Item%d> {\n  private items = new Map<number, T>();\n", i, i, i > f
			printf "  put(x: T): this { this.items.set(x.id, x); return this; }\n" > f
			printf "  find(p: (x: T) => boolean): T[] { return [...this.items.values()].filter(p); }\n" > f
			printf "  names(): string[] { return this.find((x) => x.tags.length > %d).map((x) => x.name.toUpperCase()).sort(); }\n", i % 3 > f
			printf "  sum<K extends Key%d<T>>(k: K): number { let s = 0; for (const x of this.items.values()) s += x[k] as unknown as number; return s; }\n}\n", i > f
			if (i > 0)
				printf "export function link%d(s: Store%d, t: Store%d): number { return s.names().length + t.find((x: Item%d) => x.id > %d).length; }\n", i, i - 1, i, i, i > f
			close(f)
		}
	}'
	LABEL="tsc (typescript $TSVER) on $n generated modules (node $(node --version))"
	PREP="rm -rf $d/out"
	CMD="cd $d && node $tsc -p ."
	RUNTIME=v8
	VM='^node'
	HELPERS='PlatformWorkerThread'  # V8's compiler and GC threads
}

setup_node_http() {
	need_cmd node "node is missing" || return 1
	cat > "$W/server.js" <<'EOF'
const http = require('http');
const server = http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  const n = Number(u.searchParams.get('n') || 10);
  const body = JSON.stringify({ path: u.pathname, items: Array.from({ length: n }, (_, i) => ({ i, s: 'v' + i })) });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\n'));
EOF
	cat > "$W/load.js" <<'EOF'
const http = require('http');
const [port, secs] = [Number(process.argv[2]), Number(process.argv[3])];
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const end = Date.now() + secs * 1000;
let done = 0;
function one() {
  if (Date.now() > end) { if (--running === 0) { console.log(done); agent.destroy(); } return; }
  http.get({ host: '127.0.0.1', port, path: '/items?n=' + (done % 50), agent }, (res) => {
    let len = 0; res.on('data', (c) => { len += c.length; }); res.on('end', () => { done++; one(); });
  });
}
let running = 8;
for (let i = 0; i < 8; i++) one();
EOF
	s=$(sz 6 3)
	LABEL="node http server under $s s of load from a node keep-alive client (8 connections)"
	PREP=
	CMD="node $W/server.js > port.txt & while [ ! -s port.txt ]; do sleep 0.05; done; node $W/load.js \$(cat port.txt) $s > /dev/null; kill \$!; wait"
	RUNTIME=v8
	VM='^node'
	HELPERS='PlatformWorkerThread'  # V8's compiler and GC threads
}

setup_xz() {
	need_cmd xz "xz is missing (apt-get install xz-utils)" || return 1
	mb=$(sz 6 2)
	cat /usr/bin/python3.11 /usr/share/perl/5.36/pod/*.pod /usr/lib/x86_64-linux-gnu/*.so* 2> /dev/null |
		head -c $((mb * 1048576)) > "$W/xz.in"
	LABEL="xz -9 -T1 of $mb MB (binaries and text; liblzma stripped)"
	PREP=
	CMD="xz -9 -T1 -c $W/xz.in > /dev/null"
	RUNTIME=
	VM=
}

setup_git() {
	need_cmd git "git is missing (apt-get install git)" || return 1
	n=$(sz 900 300)
	repo=$CACHE/git-$n
	if [ ! -d "$repo" ]; then
		echo "generating a git repository of $n commits in $repo" >&2
		rm -rf "$repo.new"
		git init -q "$repo.new" || { SKIP="git init failed"; return 1; }
		# fast-import: n commits, each rewriting 3 of 60 files with lines that shift
		awk -v n="$n" 'BEGIN {
			for (c = 1; c <= n; c++) {
				printf "commit refs/heads/main\ncommitter Bench <b@example.org> %d +0000\n", 1700000000 + c * 60
				msg = sprintf("change %d", c)
				printf "data %d\n%s\n", length(msg), msg
				for (k = 0; k < 3; k++) {
					f = (c * 7 + k * 13) % 60
					body = ""
					for (l = 0; l < 150; l++)
						body = body sprintf("line %d of file %d: value %d\n", l, f, (l * c) % 97 == 0 ? c : l)
					printf "M 644 inline src/f%d.txt\ndata %d\n%s\n", f, length(body), body
				}
			}
		}' | git -C "$repo.new" fast-import --quiet || { SKIP="git fast-import failed"; return 1; }
		git -C "$repo.new" checkout -q main 2> /dev/null
		mv "$repo.new" "$repo"
	fi
	LABEL="git log -p, then git repack -adf, on a generated repository of $n commits ($(git --version | cut -d' ' -f3))"
	PREP="rm -rf $W/repo && cp -a $repo $W/repo"
	CMD="cd $W/repo && git log -p > /dev/null && git repack -adfq --window=50"
	RUNTIME=
	VM=
}

ALL="go-build go-vet go-compile py-pytest py-pylint py-black rb-gem rb-rdoc pl-pod2man php-composer php-preg rust-cargo java-javac node-tsc node-http xz git"
if [ -n "$ONLY" ]; then
	for p in $(echo "$ONLY" | tr ',' ' '); do
		case " $ALL " in *" $p "*) ;; *) echo "error: unknown program '$p' (known: $ALL)" >&2; exit 2 ;; esac
	done
	ALL=$(echo "$ONLY" | tr ',' ' ')
fi

# --- measuring ---------------------------------------------------------------------------

TSV=$OUT/results.tsv
DET=$OUT/details.tsv
printf 'program\tstatus\tlabel\tprofiler\twall_s\tsamples\tbroken\tnoroot\tbad\tvm_samples\tvm_runtime\tforeign\tunsym_rows\tunsym_funcs\tfunctions\n' > "$TSV"
printf 'program\tprofiler\tkind\tsamples\tframe\n' > "$DET"
ROWS=$W/rows
: > "$ROWS"
KEYS="samples broken noroot bad vm_samples vm_runtime foreign unsym_rows unsym_funcs functions"

run_prep() {
	[ -z "$PREP" ] && return 0
	sh -c "$PREP" > /dev/null 2>&1
}

# cells FIGURES: the scorch or perf cells of a row
cells() {
	s=$(fig samples "$1")
	b=$(pct "$(fig bad "$1")" "$s")
	mk=$(pct "$(fig broken "$1")" "$s")
	nr=$(pct "$(fig noroot "$1")" "$s")
	printf '%s | %s%% (%s / %s) | %s (%s)' "$s" "$b" "$mk" "$nr" "$(fig unsym_rows "$1")" "$(fig unsym_funcs "$1")"
}

tsv_row() { # program status label profiler wall figures
	line="$1	$2	$3	$4	$5"
	for k in $KEYS; do line="$line	$(fig "$k" "$6")"; done
	echo "$line" >> "$TSV"
}

classify() { # scorch|perf FILE: the figures (key=value ...)
	if [ -n "$RUNTIME" ]; then
		$CLASSIFY "$1" "$2" --vm-comm "$VM" --runtime "$RUNTIME" --cover-comm "${COVER:-$VM}" \
			--cover-exclude "${HELPERS:-^\$^}" --details "$W/det" --label "$name	$1"
	else
		$CLASSIFY "$1" "$2" --details "$W/det" --label "$name	$1"
	fi
}

skip_row() { # name reason
	echo "$1: skipped: $2" >&2
	echo "| $1 | skipped: $2 | | | | | | | | | |" >> "$ROWS"
	printf '%s\tskipped: %s\n' "$1" "$2" >> "$TSV"
}

measure() { # name
	name=$1
	SKIP= PREP= CMD= RUNTIME= VM= COVER= HELPERS= LABEL=$1
	fn=setup_$(echo "$name" | tr '-' '_')
	if ! $fn || [ -z "$CMD" ]; then
		skip_row "$name" "${SKIP:-no command}"
		return 0
	fi
	echo "$name: $LABEL" >&2
	mkdir -p "$OUT/$name"
	run_prep
	rm -rf "$W/run" && mkdir -p "$W/run"
	t0=$(now)
	(cd "$W/run" && timeout 300 "$SCORCH" record -q -F "$HZ" -o "$OUT/$name/scorch.folded" -- sh -c "$CMD") \
		> "$OUT/$name/scorch.log" 2>&1
	rc=$?
	wall=$(elapsed "$t0")
	if [ ! -s "$OUT/$name/scorch.folded" ]; then
		skip_row "$name" "scorch record exited $rc: $(tail -1 "$OUT/$name/scorch.log")"
		return 0
	fi
	st=ok
	[ "$rc" = 0 ] || st="command exited $rc"
	sf=$(classify scorch "$OUT/$name/scorch.folded")
	tsv_row "$name" "$st" "$LABEL" scorch "$wall" "$sf"
	rt=-
	if [ -n "$RUNTIME" ]; then
		rt="$(pct "$(fig vm_runtime "$sf")" "$(fig vm_samples "$sf")")% of $(fig vm_samples "$sf")"
	fi
	fo=$(fig foreign "$sf")
	pc=" - | - | -"
	if [ "$PERF" = 1 ]; then
		run_prep
		rm -rf "$W/run" && mkdir -p "$W/run"
		t0=$(now)
		(cd "$W/run" && timeout 300 perf record -q -e cpu-clock -F "$HZ" --call-graph "dwarf,$PERF_STACK" \
			-o "$W/perf.data" -- sh -c "$CMD") > "$OUT/$name/perf.log" 2>&1
		prc=$?
		pwall=$(elapsed "$t0")
		if [ -s "$W/perf.data" ]; then
			perf script --no-inline -i "$W/perf.data" -F comm,pid,tid,ip,sym,dso \
				2> /dev/null > "$W/perf.txt"
			pf=$(classify perf "$W/perf.txt")
			pst=ok
			[ "$prc" = 0 ] || pst="command exited $prc"
			tsv_row "$name" "$pst" "$LABEL" perf "$pwall" "$pf"
			pc=$(cells "$pf")
			gzip -c "$W/perf.txt" > "$OUT/$name/perf.txt.gz"
		else
			pc="perf failed (exit $prc) | - | -"
		fi
		rm -f "$W/perf.data" "$W/perf.txt"
	fi
	[ "$st" = ok ] || LABEL="$LABEL ($st)"
	echo "| $name | $LABEL | $wall | $(cells "$sf") | $rt | $fo | $pc |" >> "$ROWS"
	# the TSV has the figures; the table the shares
	[ -f "$W/det" ] && cat "$W/det" >> "$DET" && rm -f "$W/det"
}

T0=$(now)
for p in $ALL; do
	measure "$p"
done

echo
echo "## Real programs ($(date -u +%Y-%m-%d), $HZ Hz, $(nproc) CPUs, kernel $(uname -r), scorch $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo '?')$([ "$QUICK" = 1 ] && echo ', --quick'))"
echo
echo "| program | what runs | wall s (scorch run) | samples | % broken (marker / no root) | module+0x rows (functions) | runtime frames (% of the interpreter's samples) | foreign-runtime samples | perf samples | perf % broken (marker / no root) | perf module+0x rows (functions) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
cat "$ROWS"
echo
echo "whole run: $(elapsed "$T0") s; results: $TSV, foreign and broken frames: $DET"
