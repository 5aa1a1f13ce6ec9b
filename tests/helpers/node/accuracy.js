// accuracy.js: a CPU workload with a known split, for the Node.js profiling tests and the
// accuracy benchmark. Usage: node accuracy.js SECONDS [TRUTH_FILE [IDLE_MS]]
// IDLE_MS: wait that long (idle) before the first round, as a server is up before its load
// comes: the rounds are then profiled in steady state, not while the profiler is still
// reading the new process (its first samples are stack snapshots, docs/runtimes.md).
//   a_work   plain JavaScript, 3 frames deep                         (target 25% of CPU)
//   b_work   plain JavaScript under 10 levels of recursion (deep)    (target 25%)
//   c_work   a loop whose hot function (mix) the optimizer inlines    (target 25%)
//   d_zlib   zlib.deflateSync: native code under the JavaScript frame (target 25%)
// Rounds run from setImmediate callbacks, so the JavaScript frames sit on libuv's loop (native
// code calling JavaScript) as in a server. Each function measures the CPU time of this thread
// (/proc/thread-self/schedstat: exact, not ticks); the real split is written to TRUTH_FILE as
// "name share" lines, with the lines of the hot spots ("line name N").
'use strict';
const fs = require('fs');
const zlib = require('zlib');

const spent = { a_work: 0, b_work: 0, c_work: 0, d_zlib: 0 };
const DATA = Buffer.alloc(1 << 18);
for (let i = 0; i < DATA.length; i++) DATA[i] = (i * 7919) % 251;

function cpu() {
  // the first field: nanoseconds this thread ran on a CPU
  return Number(fs.readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]);
}

function a_work(budget) {
  const t0 = cpu();
  let s = 0;
  while (cpu() - t0 < budget) {
    for (let i = 0; i < 200000; i++) {
      s = (s + i * i) % 1000003; // LINE_A
    }
  }
  spent.a_work += cpu() - t0;
  return s;
}

function b_work(budget) {
  const t0 = cpu();
  let s = 0;
  while (cpu() - t0 < budget) {
    for (let i = 0; i < 200000; i++) {
      s = (s ^ (i << 3)) + (i & 7); // LINE_B
    }
  }
  spent.b_work += cpu() - t0;
  return s;
}

function deep(n, budget) {
  if (n > 1) return deep(n - 1, budget) + 1;
  return b_work(budget);
}

function mix(x) {
  let h = x;
  for (let r = 0; r < 8; r++) h = Math.imul(h ^ (h >>> 15), 2246822507) + r; // LINE_MIX
  return h;
}

function c_work(budget) {
  const t0 = cpu();
  let s = 0;
  while (cpu() - t0 < budget) {
    for (let i = 0; i < 50000; i++) {
      s = (s + mix(i + s)) | 0; // LINE_C
    }
  }
  spent.c_work += cpu() - t0;
  return s;
}

function d_zlib(budget) {
  const t0 = cpu();
  while (cpu() - t0 < budget) {
    zlib.deflateSync(DATA, { level: 9 }); // LINE_D
  }
  spent.d_zlib += cpu() - t0;
}

function phase_a() {
  return a_work(50e6);
}

function round(end, done) {
  phase_a();
  deep(10, 50e6);
  c_work(50e6);
  d_zlib(50e6);
  if (Date.now() < end) setImmediate(round, end, done);
  else done();
}

function main() {
  const seconds = Number(process.argv[2] || 3);
  const truth = process.argv[3];
  const idle = Number(process.argv[4] || 0);
  const start = () => setImmediate(round, Date.now() + seconds * 1000, () => {
    if (!truth) return;
    const total = Object.values(spent).reduce((x, y) => x + y, 0);
    const out = [];
    for (const [name, t] of Object.entries(spent)) out.push(`${name} ${(t / total).toFixed(4)}`);
    const src = fs.readFileSync(__filename, 'utf8').split('\n');
    const tags = { LINE_A: 'a_work', LINE_B: 'b_work', LINE_MIX: 'mix', LINE_C: 'c_work',
                   LINE_D: 'd_zlib' };
    src.forEach((text, i) => {
      for (const [tag, name] of Object.entries(tags))
        if (text.endsWith('// ' + tag)) out.push(`line ${name} ${i + 1}`);
    });
    fs.writeFileSync(truth, out.join('\n') + '\n');
  });
  if (idle > 0) setTimeout(start, idle);
  else start();
}

main();
