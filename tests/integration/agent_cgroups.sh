#!/bin/sh
# Container ids when processes move between cgroups. The agent takes a child's container id
# from its parent when the fork record says the child started in the parent's cgroups, and
# follows cgroup moves to know when that stops holding (src/agent/process.h). Here a shell
# is moved into a cgroup named like a container while it runs, with children forked before
# and after the move, a grandchild forked through a subshell the agent never reads, and a
# child moved out again after its fork but before its first sample. Each must carry the
# container id of the cgroup it ran in, and the agent must have taken some from fork records.
. tests/integration/server.inc
need_bpf

# a cgroup hierarchy where a group can be made: cgroup v2, or v1's pids (or cpu) controller
CGROOT=
for d in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/pids /sys/fs/cgroup/cpu; do
	if [ -w "$d/cgroup.procs" ] && mkdir "$d/scorch-probe-$$" 2>/dev/null; then
		rmdir "$d/scorch-probe-$$"
		CGROOT=$d
		break
	fi
done
[ -n "$CGROOT" ] || { echo "SKIP: no writable cgroup hierarchy to make a test group in"; exit 0; }
ID=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
[ ${#ID} = 64 ] || fail "could not make a 64-digit id: $ID"
CG=$CGROOT/$ID
mkdir "$CG" || fail "cannot make $CG"

cleanup_cg() {
	for i in 1 2 3 4 5 6 7 8 9 10; do
		pids=$(cat "$CG/cgroup.procs" 2>/dev/null)
		[ -z "$pids" ] && break
		kill -9 $pids 2>/dev/null
		sleep 0.2
	done
	rmdir "$CG" 2>/dev/null
}
trap 'kill_bg; cleanup_cg; [ -n "$SRV_PID" ] && kill -9 $SRV_PID 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM

start_server

for n in cg-before cg-early cg-after cg-grand cg-moved; do
	cp "$B/helpers/fp_hot" "$TMP/$n"
done
# The shell burns CPU (so that the agent reads it), starts a child, and waits for the test to
# move it; then burns again and waits for an interval to pass (the agent reads it again as it
# labels its samples), starts a child and a grandchild, and a child that the test moves out
# again before it runs.
cat > "$TMP/shell.sh" <<EOF
burn() { i=0; while [ \$i -lt \$1 ]; do i=\$((i + 1)); done; }
burn 150000
"$TMP/cg-before" 2 > /dev/null &
(sleep 2; exec "$TMP/cg-early" 1.5 > /dev/null) &
: > "$TMP/forked"
while [ ! -e "$TMP/moved" ]; do sleep 0.05; done
burn 150000
sleep 2.5
"$TMP/cg-after" 2 > /dev/null &
(sleep 0.1; "$TMP/cg-grand" 2 > /dev/null) &
(sleep 2; exec "$TMP/cg-moved" 1.5 > /dev/null) &
echo \$! > "$TMP/moved-pid"
wait
EOF

$SCORCH -v agent --stats --server "$URL" -F 499 --interval 2s -d 16 --no-cache-dir \
	2> "$TMP/agent.log" &
agent=$!
kill_at_exit $agent
wait_for 60 "'agent: profiling' from the agent" grep -q 'agent: profiling' "$TMP/agent.log"
sh "$TMP/shell.sh" &
shell=$!
kill_at_exit $shell
i=0
until [ -e "$TMP/forked" ]; do
	i=$((i + 1)); [ $i -gt 200 ] && fail "the shell did not start its first children"; sleep 0.05
done
sleep 0.5
echo $shell > "$CG/cgroup.procs" || fail "cannot move the shell into $CG"
: > "$TMP/moved"
i=0
until [ -s "$TMP/moved-pid" ]; do
	i=$((i + 1)); [ $i -gt 300 ] && fail "the shell did not start its last children"; sleep 0.05
done
echo "$(cat "$TMP/moved-pid")" > "$CGROOT/cgroup.procs" || fail "cannot move a child out of $CG"
wait $agent || fail "agent exited $?: $(tail -5 "$TMP/agent.log")"

cid_of() {
	get /label-values label=container_id "query={process=\"$1\"}"
}
ticks_of() {
	ticks "{process=\"$1\"}"
}
for n in cg-before cg-early cg-after cg-grand cg-moved; do
	[ "$(ticks_of $n)" -gt 0 ] 2>/dev/null || fail "no samples of $n"
done
for n in cg-before cg-early cg-moved; do
	c=$(cid_of $n)
	echo "$n: container $c"
	[ "$c" = '[]' ] || fail "$n ran outside the container cgroup, yet is labeled $c"
done
for n in cg-after cg-grand; do
	c=$(cid_of $n)
	echo "$n: container $c"
	[ "$c" = "[\"$ID\"]" ] || fail "$n ran in cgroup $ID, yet is labeled $c"
done
st=$(grep '^session:' "$TMP/agent.log" | tail -n 1)
inherited=$(echo "$st" | grep -o 'cgroup_inherited=[0-9]*' | cut -d= -f2)
moves=$(echo "$st" | grep -o 'cgroup_moves=[0-9]*' | cut -d= -f2)
followed=$(echo "$st" | grep -o 'cgroups_followed=[0-9]*' | cut -d= -f2)
echo "agent: cgroup_inherited=$inherited cgroup_moves=$moves cgroups_followed=$followed"
[ "$followed" = 1 ] || fail "the agent does not follow cgroup moves on this kernel: $st"
[ "${moves:-0}" -ge 2 ] || fail "the agent saw $moves cgroup moves, the test made 2"
[ "${inherited:-0}" -gt 0 ] || fail "no container id was taken from a fork record"
echo "ok agent_cgroups"
