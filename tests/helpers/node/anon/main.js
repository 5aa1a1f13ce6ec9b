// main.js SECONDS: calls the anonymous functions of a.js and b.js for SECONDS of wall time.
const fa = require('./a.js'), fb = require('./b.js');
const end = Date.now() + 1000 * (+process.argv[2] || 1);
let s = 0;
while (Date.now() < end) {
	s += fa(200000);
	s += fb(200000);
}
console.log(s);
