#!/bin/sh
# scorch agent -> scorch server end to end, with real BPF: profiles per service with the agent's
# labels arrive and add up; the agent holds its data while the server is down and delivers it
# once the server is back.
. tests/integration/server.inc
need_bpf

# 1. An agent pushing every 2 s, a server storing; once the agent samples, a busy process that
# runs 1 s of its own CPU time (and says how much it used) and a Python script. The agent stops
# (SIGTERM, its last push) after both have exited, so all of fp_hot's CPU time was sampled.
# The workload runs under a name of its own: the agent sees every process of the machine, other
# fp_hot runs included.
HOT=fph$$
cp "$B/helpers/fp_hot" "$TMP/$HOT"
start_server
$SCORCH -v agent --server "$URL" -F 99 --interval 2s --label env=test --cache-dir "$TMP/tables" \
	-d 300 2> "$TMP/agent.log" &
agent=$!
kill_at_exit $agent
wait_for 60 "'agent: profiling' from the agent" grep -q 'agent: profiling' "$TMP/agent.log"
"$TMP/$HOT" -c 1 > "$TMP/hot.out" &
hot=$!
kill_at_exit $hot
PY=
for p in /usr/bin/python3.11 /usr/bin/python3; do [ -x "$p" ] && { PY=$p; break; }; done
if [ -n "$PY" ]; then
	"$PY" tests/helpers/python/accuracy.py 1 > /dev/null 2>&1 &
	py=$!
fi
wait $hot
[ -n "$PY" ] && wait $py
kill -TERM $agent
wait $agent || fail "agent exited $?: $(tail -5 "$TMP/agent.log")"
services=$(get /label-values label=service_name)
echo "services: $services"
echo "$services" | grep -q "\"$HOT\"" || fail "no $HOT service: $services"
# A Python program's service is its script's name.
if [ -n "$PY" ]; then
	echo "$services" | grep -q '"accuracy.py"' || fail "no accuracy.py service for the Python script: $services"
	get /label-values label=process | grep -q '"python3' || fail "the Python script's process label is not python3"
fi
labels=$(get /labels)
for l in host process cpus env service_name; do
	echo "$labels" | grep -q "\"$l\"" || fail "label $l missing: $labels"
done
cpu=$(sed -n 's/^fp_hot: cpu \([0-9.]*\) s$/\1/p' "$TMP/hot.out")
[ -n "$cpu" ] || fail "fp_hot did not report its CPU time: $(cat "$TMP/hot.out")"
check_samples "$HOT at the server" "$(ticks "$HOT.cpu{env=\"test\"}")" "$cpu" 99
h=$(get /render query="$HOT.cpu{}" from=now-1h until=now format=folded)
echo "$h" | grep -q 'main;run;hot_function [0-9]*$' || fail "no main;run;hot_function stack: $(echo "$h" | head -3)"
host=$(hostname)
get /label-values label=host | grep -q "\"$host\"" || fail "host label is not $host"
stop_server

# 2. Server down while the agent runs: data queued, delivered when it comes back.
rm -rf "$DATA"
PORT_FILE=$TMP/port
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$B/helpers/fp_hot" 120 &
hot=$!
kill_at_exit $hot
$SCORCH -v agent --server "http://127.0.0.1:$port" -F 99 --interval 1s --cache-dir "$TMP/tables" \
	-d 300 2> "$TMP/agent2.log" &
agent=$!
kill_at_exit $agent
# Up once the agent has failed to deliver a profile and kept it.
wait_for 60 "failed push in the agent's log" grep -q 'agent: .* [1-9][0-9]* queued.*last error' "$TMP/agent2.log"
"$SCORCH" server --listen "127.0.0.1:$port" --data "$DATA" 2>>"$TMP/server.log" &
SRV_PID=$!
URL="http://127.0.0.1:$port"
# Stopped once the backlog is delivered: the recovery line says how many profiles were queued
# behind the first one delivered, and the agent's status lines how many have been sent since
# (several services push a profile each per interval, so the queue itself is rarely empty
# when the status is printed). The bound is long: the retries back off up to 30 s.
backlog_sent() {
	q=$(sed -n 's/.*delivering profiles to .* again after .* (\([0-9]*\) profiles, .*/\1/p' "$TMP/agent2.log" | head -1)
	[ -n "$q" ] || return 1
	sent=$(sed -n 's/.*agent: \([0-9]*\) profiles sent, .*/\1/p' "$TMP/agent2.log" | tail -1)
	[ "${sent:-0}" -gt "$q" ]
}
wait_for 180 "delivery of the backlog after the server came up" backlog_sent
kill -TERM $agent
wait $agent || fail "agent exited $? after the server came back: $(tail -5 "$TMP/agent2.log")"
kill $hot 2>/dev/null; wait $hot 2>/dev/null
retries=$(sed -n 's/.*agent: stopped: .* \([0-9]*\) retries.*/\1/p' "$TMP/agent2.log")
[ "${retries:-0}" -ge 1 ] || fail "the agent never retried while the server was down: $(tail -3 "$TMP/agent2.log")"
# Delivery failing and recovering is said once each, with the queue size.
n=$(grep -c 'cannot deliver profiles to' "$TMP/agent2.log")
[ "$n" = 1 ] || fail "$n 'cannot deliver' lines (want 1): $(grep deliver "$TMP/agent2.log")"
grep -q 'cannot deliver profiles to .* profiles, [0-9]* KiB queued' "$TMP/agent2.log" ||
	fail "the failure line lacks the queue size: $(grep deliver "$TMP/agent2.log")"
n=$(grep -c 'delivering profiles to .* again after' "$TMP/agent2.log")
[ "$n" = 1 ] || fail "$n recovery lines (want 1): $(grep deliver "$TMP/agent2.log")"
# Every sample the agent took must be at the server, summed over all services.
taken=$(sed -n 's/.*agent: stopped: \([0-9]*\) samples.*/\1/p' "$TMP/agent2.log")
[ -n "$taken" ] || fail "the agent did not report its totals: $(tail -3 "$TMP/agent2.log")"
# (one query over every series: service names may hold characters a shell split would mangle,
# such as the brackets of "bash[stdin]")
stored=$(ticks '{}')
stored=${stored:-0}
echo "samples taken by the agent: $taken, at the server: $stored"
[ "$stored" -eq "$taken" ] || fail "the server has $stored samples of the $taken the agent took"
[ "$taken" -ge 100 ] || fail "too few samples taken: $taken"
stop_server

# 3. A server that accepts and never answers: SIGTERM still ends the agent within 2 s (its
# requests time out after 10 s; stopping must not wait for them).
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
held = []
while True:
    c, _ = s.accept(); held.append(c)
' "$port" &
hole=$!
sleep 0.3
$SCORCH agent --server "http://127.0.0.1:$port" -F 19 --interval 1s --cache-dir "$TMP/tables" \
	2> "$TMP/agent3.log" &
agent=$!
sleep 3.5 # a few pushes are under way, none answered
t0=$(date +%s%N)
kill -TERM $agent
wait $agent
t1=$(date +%s%N)
kill $hole 2>/dev/null; wait $hole 2>/dev/null
ms=$(( (t1 - t0) / 1000000 ))
echo "agent exit after SIGTERM with a server that never answers: $ms ms"
# 2 s is the promise; the margin is for a loaded test machine.
[ $ms -le 3000 ] || fail "the agent took $ms ms to exit after SIGTERM"
echo ok
