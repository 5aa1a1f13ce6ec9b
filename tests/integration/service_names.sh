#!/bin/sh
# Service names on real processes (src/agent/service_name.h): python -c is one service per
# executable, python -m pkg is pkg, a sample taken while CPython is still starting up
# (<frozen site>) does not name a service, an executable with a name longer than the 15-byte
# comm keeps its whole name, a shell loop's short-lived children are counted under the loop's
# service, and kernel threads under "kernel".
. tests/integration/server.inc
need_bpf

PY=
for p in /usr/bin/python3.11 /usr/bin/python3; do [ -x "$p" ] && { PY=$p; break; }; done
[ -n "$PY" ] || { echo "SKIP: no python3"; exit 0; }
pyexe=$(basename "$(readlink -f "$PY")")

start_server

# The workloads burn CPU for 3 s, then stay (idle) until the agent is done: on a busy machine
# the agent may read a process's /proc files seconds after its samples were taken.
mkdir -p "$TMP/pkg/burner" "$TMP/site"
cat > "$TMP/pkg/burner/__main__.py" <<'EOF'
import time
end = time.time() + 3
while time.time() < end:
    sum(i * i for i in range(1000))
time.sleep(60)
EOF
: > "$TMP/pkg/burner/__init__.py"
# sitecustomize runs while site is imported: its samples' outermost module is <frozen site>
cat > "$TMP/site/sitecustomize.py" <<'EOF'
import time
end = time.time() + 2
while time.time() < end:
    sum(i * i for i in range(1000))
EOF
cat > "$TMP/app.py" <<'EOF'
import time
end = time.time() + 1
while time.time() < end:
    sum(i * i for i in range(1000))
time.sleep(60)
EOF
# the loop's children have names of their own, so that other processes on the machine running
# the same tools do not count
cp "$(command -v md5sum)" "$TMP/sn-md5"
cp "$(command -v basename)" "$TMP/sn-base"
cat > "$TMP/loop.sh" <<EOF
end=\$((\$(date +%s) + 3))
while [ "\$(date +%s)" -lt "\$end" ]; do
	head -c 3000000 /dev/zero | "$TMP/sn-md5" > /dev/null
	"$TMP/sn-base" /a/b > /dev/null
done
while :; do sleep 1; done
EOF
longexe="$TMP/a-very-long-program-name"
cp "$B/helpers/fp_hot" "$longexe"

$SCORCH -v agent --server "$URL" -F 499 --interval 2s -d 8 2> "$TMP/agent.log" &
agent=$!
# the workloads start once the agent samples (loading BPF takes a while on a busy machine)
i=0
until grep -q 'agent: profiling' "$TMP/agent.log"; do
	i=$((i + 1))
	[ $i -gt 300 ] && fail "the agent did not start: $(cat "$TMP/agent.log")"
	kill -0 $agent 2>/dev/null || fail "the agent exited: $(cat "$TMP/agent.log")"
	sleep 0.1
done
"$PY" -c 'import time
end = time.time() + 3
while time.time() < end: sum(i * i for i in range(1000))
time.sleep(60)' &
p1=$!
(cd "$TMP/pkg" && exec "$PY" -m burner) &
p2=$!
PYTHONPATH="$TMP/site" "$PY" "$TMP/app.py" &
p3=$!
"$longexe" 8 > /dev/null &
p4=$!
sh "$TMP/loop.sh" &
p5=$!
trap 'kill $p1 $p2 $p3 $p4 $p5 2>/dev/null; [ -n "$SRV_PID" ] && kill -9 $SRV_PID 2>/dev/null; rm -rf "$TMP"' EXIT
wait $agent || fail "agent exited $?: $(tail -5 "$TMP/agent.log")"

services=$(get /label-values label=service_name)
echo "services: $services"
has() {
	echo "$services" | grep -qF "\"$1\"" && return
	fail "no service \"$1\" ($2): $services; processes under this script: $(get /label-values label=process 'query={service_name="service_names.sh"}')"
}
has "$pyexe[-c]" "python -c: one service per executable"
has burner "python -m burner"
has app.py "a script whose startup burned CPU in sitecustomize"
has a-very-long-program-name "the executable's whole name"
has loop.sh "the shell loop"
for bad in _string_ '<string>' frozen '"a-very-long-pr"'; do
	echo "$services" | grep -qF "$bad" && fail "service named after $bad: $services"
done
# the loop's short-lived children are counted under the loop (or, in the loop's own first
# second, when it is short-lived itself, under this script that started it)
for tool in sn-md5 sn-base; do
	s=$(get /label-values label=service_name "query={process=\"$tool\"}")
	echo "services of $tool: $s"
	case $s in
	'["loop.sh"]' | '["loop.sh","service_names.sh"]' | '[]') ;;
	*) fail "short-lived $tool counted under $s" ;;
	esac
done
n=$(ticks '{service_name="loop.sh",process="sn-md5"}')
echo "sn-md5 samples under loop.sh: $n"
[ "${n:-0}" -gt 0 ] || fail "no sn-md5 samples under loop.sh"
# kernel threads: under "kernel", never one service per thread
echo "$services" | grep -Eq '"(kworker|ksoftirqd|rcu_|migration)' && fail "a kernel thread has its own service: $services"
kprocs=$(get /label-values label=service_name 'query={process="kernel"}')
[ "$kprocs" = '[]' ] || [ "$kprocs" = '["kernel"]' ] || fail "kernel threads under $kprocs"
echo "ok service_names (sn-md5 under loop.sh: $n samples; kernel threads: $kprocs)"
