// flamegraph_page.js PAGE.html: runs the flame graph page's script under node with a minimal
// DOM and canvas stand-in, then exercises it: layout, drawing, hit testing and tooltips, zoom,
// search with matched share, reset. Prints "ok ..." lines; throws (exit 1) on a failure.
'use strict';
const fs = require('fs');
const assert = require('assert');

const html = fs.readFileSync(process.argv[2], 'utf8');
const script = html.slice(html.indexOf('<script>') + 8, html.lastIndexOf('</script>'));
const listeners = {};
const drawn = [];
const ctx = {
	setTransform() {}, clearRect() { drawn.length = 0; },
	measureText(s) { return { width: 7 * s.length }; },
	fillRect(x, y, w, h) { drawn.push({ x, y, w, fill: this._fill }); },
	fillText(t, x, y) { drawn.push({ text: t, x, y }); },
	set fillStyle(v) { this._fill = v; }, get fillStyle() { return this._fill; },
	set font(v) {}, set textBaseline(v) {},
};
const els = {};
function el(id) {
	return {
		id, style: {}, textContent: '', innerHTML: '', value: '', offsetWidth: 100, offsetHeight: 50,
		parentNode: { clientWidth: 1224 }, children: [], width: 0, height: 0,
		appendChild(c) { this.children.push(c); },
		addEventListener(t, f) { listeners[id + ':' + t] = f; },
		focus() {}, select() {}, getBoundingClientRect() { return { left: 0, top: 0 }; },
		getContext() { return ctx; },
	};
}
global.document = {
	getElementById(id) { return els[id] || (els[id] = el(id)); },
	createElement(t) { return el(t); }, createTextNode(t) { return { t }; },
	addEventListener(t, f) { listeners['doc:' + t] = f; }, title: '',
};
global.window = { devicePixelRatio: 1, innerWidth: 1400, innerHeight: 900, addEventListener() {} };
global.setTimeout = (f) => { f(); return 1; };
global.clearTimeout = () => {};

let t0 = Date.now();
new Function(script)();
const texts = drawn.filter((d) => d.text !== undefined).map((d) => d.text);
console.log('ok loaded and drew', drawn.length, 'items in', Date.now() - t0, 'ms; title', document.title);
assert(drawn.length > 0, 'nothing drawn');
assert.strictEqual(els.legend.children.length, 5, 'legend has the five kinds');
const expect = process.argv.slice(3);
for (const name of expect)
	assert(texts.some((t) => t.startsWith(name.slice(0, 8))), 'frame ' + name + ' drawn; drew ' + texts.slice(0, 20));
console.log('ok frames drawn:', expect.join(', '));

// Tooltip over the second row (first frame below the root).
listeners['fg:mousemove']({ clientX: 20, clientY: 18 + 5 });
assert.strictEqual(els.tip.style.display, 'block', 'tooltip shown');
assert(/total/.test(els.tip.innerHTML) && /self/.test(els.tip.innerHTML) && /%/.test(els.tip.innerHTML));
assert(!/<script/i.test(els.tip.innerHTML), 'tooltip escapes names');
console.log('ok tooltip:', els.tip.innerHTML.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim());

// Search: a name that exists matches a non-zero share and is highlighted; one that does not
// matches 0%.
function matchedShare() {
	const m = /matched ([0-9.]+)%/.exec(els.matched.textContent);
	assert(m, 'matched text: ' + els.matched.textContent);
	return parseFloat(m[1]);
}
els.search.value = expect[expect.length - 1] || 'main';
listeners['search:input']();
assert(matchedShare() > 0, 'search matched: ' + els.matched.textContent);
assert(drawn.some((d) => d.fill === '#e0e'), 'matches highlighted');
console.log('ok search', JSON.stringify(els.search.value), '->', els.matched.textContent);
els.search.value = 'no-such-frame-anywhere';
listeners['search:input']();
assert.strictEqual(matchedShare(), 0);
console.log('ok search for nothing ->', els.matched.textContent);

// Zoom into the first frame of the third row; the crumbs name it.
listeners['fg:click']({ clientX: 20, clientY: 2 * 18 + 5 });
assert(/zoomed/.test(els.crumbs.textContent), 'zoomed: ' + els.crumbs.textContent);
console.log('ok', els.crumbs.textContent);
listeners['reset:click']();
assert(!/zoomed/.test(els.crumbs.textContent) && els.matched.textContent === '');
console.log('ok reset');
