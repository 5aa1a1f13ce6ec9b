#!/bin/sh
# run.sh: scorch's main job for `make run`: a profile server on 127.0.0.1:4040 (data in
# ./scorch-data) and an agent that profiles the whole machine and pushes to it. Prints the URL
# to open; Ctrl-C stops both (the server flushes everything it acknowledged).
#   LISTEN=127.0.0.1:4040  DATA=./scorch-data  HZ=19  INTERVAL=10s  (environment overrides)
set -eu
cd "$(dirname "$0")/.."
LISTEN=${LISTEN:-127.0.0.1:4040}
DATA=${DATA:-./scorch-data}
if [ "$(id -u)" != 0 ]; then
	echo "error: profiling with eBPF needs root: run 'sudo make run'" >&2
	exit 1
fi
./scorch server --listen "$LISTEN" --data "$DATA" &
server=$!
agent=
stop() {
	trap - INT TERM EXIT
	[ -n "$agent" ] && kill -TERM "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null
	exit 0
}
trap stop INT TERM EXIT
i=0
until curl -sf "http://$LISTEN/healthz" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 "$server" 2>/dev/null; then
		echo "error: the server did not start on $LISTEN" >&2
		exit 1
	fi
	sleep 0.1
done
./scorch -v agent --server "http://$LISTEN" -F "${HZ:-19}" --interval "${INTERVAL:-10s}" &
agent=$!
cat <<MSG

scorch is running: the agent profiles this machine and pushes every ${INTERVAL:-10s}.
  web UI:                   http://$LISTEN/
  standalone flame graph:   http://$LISTEN/render?query=%7B%7D&from=now-1h&until=now&format=html
  API:                      see docs/server.md (e.g. http://$LISTEN/label-values?label=service_name)
Ctrl-C stops.

MSG
wait "$agent"
