// b.js: another truly anonymous function, in another file (tests/integration/naming.sh).
module.exports = (() => function (n) {
	let y = 1;
	for (let i = 0; i < n; i++) y = (y * 17 + i * 3) % 999983;
	return y;
})();
