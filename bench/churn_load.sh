#!/bin/sh
# churn_load.sh: a machine where processes come and go, for the agent benchmarks: a loop that
# compiles a small C file with gcc (gcc, cc1, as), runs git, sh and python one-liners, and every
# few seconds starts a JVM (java -version) and a Node process, about 20 new processes a second.
# Runs until killed; prints nothing. The rate is what the machine allows: the benchmarks
# measure it from /proc/stat.
#
# usage: sh bench/churn_load.sh WORKDIR
set -u
W=${1:?usage: churn_load.sh WORKDIR}
mkdir -p "$W"
cat > "$W/small.c" <<'C'
#include <stdio.h>
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) { printf("%d\n", fib(20)); return 0; }
C
cd "$W" || exit 1
[ -d repo/.git ] || { git init -q repo && git -C repo commit -q --allow-empty -m init; } 2>/dev/null
i=0
while :; do
	i=$((i + 1))
	gcc -O1 -c small.c -o small.o 2>/dev/null
	git -C repo rev-parse HEAD > /dev/null 2>&1
	sh -c 'echo $$ > /dev/null'
	python3 -c 'import sys; sys.exit(0)' 2>/dev/null
	if [ $((i % 15)) -eq 0 ] && command -v java > /dev/null; then
		java -version > /dev/null 2>&1 &
	fi
	if [ $((i % 10)) -eq 5 ] && command -v node > /dev/null; then
		node -e 'let s = 0; for (let k = 0; k < 1e5; k++) s += k' > /dev/null 2>&1 &
	fi
	sleep 0.25
done
