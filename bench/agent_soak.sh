#!/bin/sh
# agent_soak.sh: memory and CPU of `scorch agent` over a long run on a machine that starts many
# short processes. A local `scorch server` receives the profiles; a shell loop starts short
# processes (/bin/true, sh -c, a short busy program) as fast as it can. Every STEP seconds the
# agent's RSS (VmRSS), its CPU time since the previous step and the number of processes started
# are printed; at the end, the peak RSS (VmHWM), the RSS growth from the first minute to the
# end, and the agent's CPU as a share of one core.
#
# usage: sudo sh bench/agent_soak.sh [SECONDS=300] [STEP=30] [HZ=19] [INTERVAL=10]
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-300}
STEP=${2:-30}
HZ=${3:-19}
INTERVAL=${4:-10}
SCORCH=${SCORCH:-./scorch}
[ "$(id -u)" = 0 ] || { echo "error: needs root" >&2; exit 1; }
[ -x "$SCORCH" ] || { echo "error: no $SCORCH binary (run make first)" >&2; exit 1; }
TMP=$(mktemp -d)
srv= agent= spawner=
cleanup() {
	for p in $spawner $agent $srv; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

"$SCORCH" server --listen 127.0.0.1:0 --port-file "$TMP/port" --data "$TMP/data" 2> "$TMP/server.log" &
srv=$!
i=0
while [ ! -s "$TMP/port" ]; do
	i=$((i + 1)); [ $i -gt 100 ] && { cat "$TMP/server.log"; exit 1; }
	sleep 0.1
done
URL="http://127.0.0.1:$(cat "$TMP/port")"

# Short processes: count them in a file every 1000 starts.
(
	n=0
	while :; do
		/bin/true; sh -c ':'; awk 'BEGIN { for (i = 0; i < 20000; i++) s += i }'
		n=$((n + 3))
		[ $((n % 999)) -eq 0 ] && echo $n > "$TMP/spawned"
	done
) &
spawner=$!

"$SCORCH" -v agent --server "$URL" -F "$HZ" --interval "${INTERVAL}s" -d "$SECS" \
	--cache-dir "$TMP/tables" 2> "$TMP/agent.log" &
agent=$!
tck=$(getconf CLK_TCK)
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_of() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

echo "| t (s) | RSS (MB) | agent CPU in step (% of one core) | processes started |"
echo "|---|---|---|---|"
t=0 prev=$(cpu_of $agent) first_rss= hwm=0
cpu0=$prev
while [ $t -lt "$SECS" ] && kill -0 $agent 2>/dev/null; do
	sleep "$STEP"
	t=$((t + STEP))
	kill -0 $agent 2>/dev/null || break
	c=$(cpu_of $agent); r=$(rss_of $agent)
	h=$(awk '/^VmHWM/ { print $2 }' "/proc/$agent/status" 2>/dev/null || echo 0)
	[ "$h" -gt "$hwm" ] && hwm=$h
	[ -z "$first_rss" ] && [ $t -ge 60 ] && first_rss=$r
	awk -v t=$t -v r=$r -v d=$((c - prev)) -v s=$STEP -v k=$tck -v n="$(cat "$TMP/spawned" 2>/dev/null || echo 0)" \
		'BEGIN { printf "| %d | %.1f | %.2f%% | %d |\n", t, r / 1024, 100 * d / k / s, n }'
	prev=$c last_rss=$r
done
total=$((prev - cpu0))
wait $agent || echo "agent exited with status $?"
echo
awk -v h=$hwm -v f="${first_rss:-0}" -v l="${last_rss:-0}" -v c=$total -v k=$tck -v t=$t 'BEGIN {
	printf "peak RSS %.1f MB; RSS at 60 s %.1f MB, at the end %.1f MB; agent CPU %.2f%% of one core\n",
		h / 1024, f / 1024, l / 1024, t ? 100 * c / k / t : 0 }'
grep 'agent: stopped' "$TMP/agent.log" || tail -3 "$TMP/agent.log"
