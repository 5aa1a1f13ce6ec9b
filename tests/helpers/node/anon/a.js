// a.js: a truly anonymous function (no name V8 could infer), for tests/integration/naming.sh.
module.exports = (() => function (n) {
	let x = 0;
	for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
	return x;
})();
