// split.js: the split workload in JavaScript, for Node with --perf-basic-prof (JIT code named
// in /tmp/perf-PID.map). workA gets 2 units of CPU time per round, workB 1; the measured
// split goes to the truth file as "workA SECS\nworkB SECS".
//
//   node --perf-basic-prof split.js SECONDS [TRUTH_FILE]
'use strict';
const fs = require('fs');

function cpu() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function workA(n) {
  let x = 1;
  for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
  return x;
}

function workB(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + Math.sqrt(i)) % 1e9;
  return s;
}

function spinFor(secs, f) {
  const t0 = cpu();
  let t;
  do {
    f(20000);
    t = cpu();
  } while (t - t0 < secs);
  return t - t0;
}

const secs = Number(process.argv[2] || 2);
const end = Date.now() + secs * 1000;
let a = 0, b = 0;
while (Date.now() < end) {
  a += spinFor(0.02, workA);
  b += spinFor(0.01, workB);
}
if (process.argv[3])
  fs.writeFileSync(process.argv[3], `workA ${a.toFixed(3)}\nworkB ${b.toFixed(3)}\n`);
