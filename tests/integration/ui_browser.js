// ui_browser.js URL CHROMIUM TMPDIR NOW AGENT: drives every view of the web UI in headless
// Chromium (see ui_browser.sh for the data it expects; AGENT is the CPU count when a real agent
// pushed data, else "skip"). Prints "ok ..." lines; exits 1 on the first failure.
'use strict';
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { chromium } = require('playwright-core');

const [url, exe, tmp, nowArg, agent] = process.argv.slice(2);
const NOW = Number(nowArg);
const shot = (page, name, full = true) => page.screenshot({ path: path.join(tmp, 'shots', name + '.png'), fullPage: full });

async function main() {
	// a fresh profile directory (--user-data-dir) in the test's temp dir
	const browser = await chromium.launchPersistentContext(path.join(tmp, 'chromium-profile'), {
		executablePath: exe,
		headless: true,
		acceptDownloads: true,
		viewport: { width: 1400, height: 900 },
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	const errors = [], outside = [], requests = [];
	try {
		const page = await browser.newPage();
		browser.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
		browser.on('weberror', (e) => errors.push(String(e.error())));
		await browser.route('**/*', (route) => {
			const u = new URL(route.request().url());
			requests.push(u.href);
			if (u.protocol === 'data:' || u.protocol === 'blob:') return route.continue();
			if (u.hostname !== '127.0.0.1') { outside.push(u.href); return route.abort(); }
			return route.continue();
		});
		const settle = async (p = page) => {
			await p.waitForFunction(() => window.__scorch && document.body.dataset.loaded &&
				Number(document.body.dataset.loaded) === window.__scorch.generation && window.__scorch.busy === 0,
				null, { timeout: 30000 });
			await p.waitForTimeout(50);
		};
		const go = async (q, p = page) => { await p.goto(url + '/' + q, { waitUntil: 'load' }); await settle(p); };
		const rendered = (which, p = page) => p.evaluate((w) => window.__scorch[w].rendered.map((n) => ({ ...n })), which);
		const byName = (nodes) => Object.fromEntries(nodes.map((n) => [n.name, n]));
		const param = (k) => new URL(page.url()).searchParams.get(k);
		const canvasBox = (sel) => page.$eval(sel, (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top }; });
		const errorText = () => page.$eval('#error', (e) => e.hidden ? '' : e.textContent);
		const fetchText = (href) => page.evaluate(async (h) => { const r = await fetch(h); return { status: r.status, text: await r.text() }; }, href);
		const fetchBytes = (href) => page.evaluate(async (h) => Array.from(new Uint8Array(await (await fetch(h)).arrayBuffer()).slice(0, 8)), href);

		// ---- flame graph, with the table beside it --------------------------------------
		await go('?service=shop&type=cpu');
		let nodes = await rendered('flame');
		const names = nodes.map((n) => n.name);
		for (const f of ['total', 'app', 'main', 'compute', 'hot_loop', 'helper', 'io', 'read_k_[k]'])
			assert(names.includes(f), 'flame graph draws ' + f + '; drew ' + names);
		let fl = byName(nodes);
		assert.strictEqual(fl.total.total, 200);
		assert.strictEqual(fl.helper.total, 90);
		assert(fl.helper.w > fl.hot_loop.w, 'helper (90) wider than hot_loop (80)');
		assert.strictEqual(fl.compute.level, 3);
		const nonBlank = await page.evaluate(() => {
			const c = document.querySelector('#flame canvas');
			const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
			return n;
		});
		assert(nonBlank > 1000, 'the canvas has pixels drawn');
		assert.strictEqual(await page.$eval('#service', (e) => e.value), 'shop');
		// the table beside the graph (layout "both" by default)
		let side = await page.$$eval('#side-table tbody tr', (t) => t.map((r) => r.dataset.name));
		assert.deepStrictEqual(side.slice(0, 3), ['helper', 'hot_loop', 'read_k_[k]'], 'side table by self: ' + side);
		assert(await page.$eval('#side', (e) => e.offsetWidth > 200) && await page.$eval('#flame', (e) => e.offsetWidth > 400), 'table and graph side by side');
		await page.click('#side-table tbody tr[data-name="helper"]');
		assert.strictEqual(param('fn'), 'helper', 'the picked function is in the URL');
		assert(await page.$eval('#side-table tr[data-name="helper"]', (e) => e.classList.contains('picked')));
		await page.click('#side-table tbody tr[data-name="helper"]');
		console.log('ok flame graph draws', nodes.length, 'nodes, the table beside it');
		await shot(page, 'flame');
		await page.click('#layout button[data-layout="graph"]');
		assert.strictEqual(param('layout'), 'graph');
		assert(await page.$eval('#side', (e) => e.offsetWidth === 0), 'graph only hides the table');
		await page.click('#layout button[data-layout="both"]');

		// Lines: by function unless asked; the toggle gives a frame per source line
		await go('?service=srcline&type=cpu');
		fl = byName(await rendered('flame'));
		assert(fl.work && fl.work.total === 80, 'one frame per function: ' + Object.keys(fl));
		assert(!fl['work (w.c:10)'], 'no line frames by default');
		assert.deepStrictEqual(await page.$$eval('#side-table tbody tr', (t) => t.map((r) => r.dataset.name)).then((r) => r.filter((n) => n.startsWith('work'))), ['work']);
		await page.click('#lines');
		await settle();
		assert.strictEqual(param('lines'), '1', 'the toggle is in the URL');
		fl = byName(await rendered('flame'));
		assert(!fl.work, 'no function frame with lines on');
		assert.strictEqual(fl['work (w.c:12)'].total, 50);
		assert.strictEqual(fl['work (w.c:10)'].total, 30);
		side = await page.$$eval('#side-table tbody tr', (t) => t.map((r) => r.dataset.name));
		assert.deepStrictEqual(side.filter((n) => n.startsWith('work')), ['work (w.c:12)', 'work (w.c:10)'], 'table by line: ' + side);
		await page.click('#lines');
		await settle();
		assert.strictEqual(param('lines'), null);
		fl = byName(await rendered('flame'));
		assert(fl.work && fl.work.total === 80, 'by function again: ' + Object.keys(fl));
		console.log('ok Lines toggle: work by function (80), by line 50 + 30, and back');

		// every service together: the whole machine without its idle CPU
		await go('');
		assert.strictEqual(await page.$eval('#service', (e) => e.dataset.value), '*');
		const allTicks = await page.evaluate(async () => (await (await fetch('/render?query=' +
			encodeURIComponent('{__type__="cpu",service_name!="idle"}') + '&from=now-1h&until=now')).json()).flamebearer.numTicks);
		assert.strictEqual((await rendered('flame'))[0].total, allTicks);
		console.log('ok all services by default:', allTicks, 'samples (idle left out)');

		// the service picker: a filtered list with shares
		await page.click('#service');
		await page.keyboard.type('shp');
		await page.waitForSelector('#service-list li');
		const picks = await page.$$eval('#service-list li', (l) => l.map((x) => x.textContent));
		// the machine's own services (the agent part profiles everything) may hold "shp" as
		// such (chrome_crashpad_handler), which rightly ranks above a scattered match
		const pickNames = await page.$$eval('#service-list li span:first-child', (l) => l.map((x) => x.textContent));
		const scattered = pickNames.filter((n) => !n.toLowerCase().includes('shp'));
		assert.strictEqual(scattered[0], 'shop', 'fuzzy "shp" finds shop first: ' + picks);
		await shot(page, 'service-picker', false);
		await page.keyboard.press('Enter');
		await settle();
		assert.strictEqual(param('service'), 'shop');
		console.log('ok service picker filters:', picks.slice(0, 3).join(' | '));

		// label selector autocompletion: names after '{', values after '='
		await page.click('#selector');
		await page.keyboard.type('{');
		await page.waitForSelector('#suggest li');
		assert.deepStrictEqual(await page.$$eval('#suggest li', (l) => l.map((x) => x.textContent)), ['env']);
		await page.keyboard.press('Tab');
		await page.waitForFunction(() => [...document.querySelectorAll('#suggest li')].some((l) => l.textContent === 'prod'));
		await page.keyboard.press('Tab');
		await page.keyboard.type('}');
		assert.strictEqual(await page.$eval('#selector', (e) => e.value), '{env="prod"}');
		await page.keyboard.press('Enter');
		await settle();
		assert.strictEqual(param('sel'), '{env="prod"}');
		assert.strictEqual((await rendered('flame'))[0].total, 200);
		console.log('ok selector completion gives {env="prod"}');

		// a selector with a typo: an error, and no stale graph under it
		await page.fill('#selector', '{env="prod"');
		await page.keyboard.press('Enter');
		await settle();
		assert.match(await errorText(), /closing "}"/);
		assert.strictEqual(await page.$eval('#flame canvas', (c) => c.dataset.nodes), '0', 'the old graph is gone');
		await page.fill('#selector', '{env="prod"}');
		await page.keyboard.press('Enter');
		await settle();
		assert.strictEqual(await errorText(), '');
		console.log('ok a bad selector clears the views and says why');

		// tooltip
		nodes = await rendered('flame'); fl = byName(nodes);
		let box = await canvasBox('#flame canvas');
		await page.mouse.move(box.x + fl.hot_loop.x + fl.hot_loop.w / 2, box.y + fl.hot_loop.y + 9);
		const tip = await page.$eval('#tooltip', (e) => e.style.display === 'block' ? e.textContent : '');
		assert(tip.includes('hot_loop') && tip.includes('40.0%'), 'tooltip shows hot_loop at 40%: ' + tip);
		console.log('ok tooltip:', tip.slice(0, 60));

		// search, in the URL
		await page.fill('#search', 'hot');
		await page.waitForFunction(() => document.querySelector('#matched').dataset.percent === '40.00');
		nodes = await rendered('flame');
		assert.deepStrictEqual(nodes.filter((n) => n.match).map((n) => n.name), ['hot_loop']);
		assert.strictEqual(param('search'), 'hot');
		console.log('ok search highlights hot_loop, matched', await page.textContent('#matched'));
		await page.fill('#search', '');
		await page.waitForFunction(() => !new URL(location.href).searchParams.get('search'));

		// click to zoom (in the URL, restored from it), then reset
		await page.mouse.click(box.x + fl.compute.x + 5, box.y + fl.compute.y + 9);
		nodes = await rendered('flame');
		const width = await page.$eval('#flame canvas', (c) => c.clientWidth);
		const zc = nodes.find((n) => n.name === 'compute');
		assert(zc && Math.abs(zc.w - width) < 1, 'compute fills the width after a click');
		assert(!nodes.some((n) => n.name === 'io'), 'io is hidden when zoomed on compute');
		assert.strictEqual(param('zoom'), 'app;main;compute');
		const zoomed = page.url();
		await page.click('#reset');
		nodes = await rendered('flame');
		assert(nodes.some((n) => n.name === 'io'), 'reset shows io again');
		assert.strictEqual(param('zoom'), null);
		await go(zoomed.slice(zoomed.indexOf('?')));
		nodes = await rendered('flame');
		assert(!nodes.some((n) => n.name === 'io') && nodes.find((n) => n.name === 'compute').w > width - 1, 'zoom restored from the URL');
		console.log('ok click zooms, the zoom is in the URL and restored from it, reset');

		// exports of the current view (the zoomed frame's subtree)
		const hrefs = await page.$$eval('#export-flame a', (l) => Object.fromEntries(l.map((a) => [a.textContent, a.getAttribute('href')])));
		const folded = await fetchText(hrefs['folded stacks (.txt)']);
		assert(folded.text.includes('app;main;compute;helper 90') && !folded.text.includes(';io;'), 'folded export of the zoomed subtree: ' + folded.text);
		assert.deepStrictEqual((await fetchBytes(hrefs['pprof (.pb.gz)'])).slice(0, 2), [0x1f, 0x8b], 'pprof export is gzip');
		assert((await fetchText(hrefs['SVG'])).text.includes('<svg'), 'SVG export');
		assert((await fetchText(hrefs['standalone HTML'])).text.includes('<html'), 'HTML export');
		await page.click('#export-flame .export-btn');
		const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-flame a[data-action]')]);
		const png = fs.readFileSync(await dl.path());
		assert.deepStrictEqual([...png.slice(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'PNG export');
		console.log('ok exports: folded/pprof/SVG/HTML of the zoomed subtree, PNG of the canvas', dl.suggestedFilename());
		await page.click('#reset');

		// right-click any frame: the context menu opens the sandwich view
		nodes = await rendered('flame'); fl = byName(nodes);
		box = await canvasBox('#flame canvas');
		await page.mouse.click(box.x + fl.helper.x + 5, box.y + fl.helper.y + 9, { button: 'right' });
		await page.waitForSelector('#menu:not([hidden])');
		const items = await page.$$eval('#menu li[data-i]', (l) => l.map((x) => x.textContent));
		assert(items.some((t) => t.startsWith('Sandwich view')), 'menu offers the sandwich: ' + items);
		await shot(page, 'context-menu');
		await page.click('#menu li[data-i]:has-text("Sandwich view")');
		await settle();
		assert.strictEqual(param('view'), 'sandwich');
		assert.strictEqual(param('fn'), 'helper');
		let callers = (await rendered('callers')).map((n) => n.name);
		const callees = (await rendered('callees')).map((n) => n.name);
		for (const f of ['main', 'compute', 'helper']) assert(callers.includes(f), 'callers has ' + f + ': ' + callers);
		assert(!callers.includes('io'), 'callers has no io');
		assert(callees.includes('helper') && !callees.includes('hot_loop'), 'callees: ' + callees);
		console.log('ok right-click -> sandwich of helper: callers', callers.join(' '), '| callees', callees.join(' '));
		await shot(page, 'sandwich');
		// fuzzy function search
		await page.fill('#fn', '');
		await page.click('#fn');
		await page.keyboard.type('htlp');
		await page.waitForSelector('#fn-list li');
		const fuzzy = await page.$$eval('#fn-list li', (l) => l.map((x) => x.firstChild.textContent));
		assert.strictEqual(fuzzy[0], 'hot_loop', 'fuzzy "htlp" finds hot_loop: ' + fuzzy);
		await page.keyboard.press('Enter');
		await settle();
		assert.strictEqual(param('fn'), 'hot_loop');
		callers = (await rendered('callers')).map((n) => n.name);
		assert(callers.includes('hot_loop') && callers.includes('compute'), 'sandwich of hot_loop: ' + callers);
		console.log('ok fuzzy search "htlp" opens the sandwich of', fuzzy[0]);

		// top table
		await page.click('#tabs button[data-view="top"]');
		await settle();
		let rows = await page.$$eval('#top-table tbody tr', (t) => t.map((r) => r.dataset.name));
		assert.deepStrictEqual(rows.slice(0, 3), ['helper', 'hot_loop', 'read_k_[k]'], 'sorted by self');
		await page.click('#top-table th[data-sort="total"]');
		rows = await page.$$eval('#top-table tbody tr', (t) => t.map((r) => r.dataset.name));
		assert.deepStrictEqual(rows.slice(0, 4), ['app', 'main', 'compute', 'helper'], 'sorted by total');
		await page.fill('#filter', 'hel');
		rows = await page.$$eval('#top-table tbody tr', (t) => t.map((r) => r.dataset.name));
		assert.deepStrictEqual(rows, ['helper'], 'filter');
		await page.click('#export-top .export-btn');
		const [csv] = await Promise.all([page.waitForEvent('download'), page.click('#export-top a[data-action]')]);
		const csvText = fs.readFileSync(await csv.path(), 'utf8');
		assert(csvText.startsWith('function,self,total') && csvText.includes('"helper",90,90'), 'CSV export: ' + csvText);
		await page.fill('#filter', '');
		await page.click('#top-table th[data-sort="self"]');
		console.log('ok top table sorts, filters and exports CSV');
		await shot(page, 'top');

		// diff of two time ranges
		const lf = NOW - 3600, lu = NOW - 900, rf = NOW - 900, ru = NOW + 1;
		await go(`?service=shop&type=cpu&view=diff&lfrom=${lf}&luntil=${lu}&rfrom=${rf}&runtil=${ru}`);
		nodes = await rendered('diff');
		let d = byName(nodes);
		assert(d.helper && d.helper.change > 0.45, 'helper grew by 50 points: ' + JSON.stringify(d.helper));
		assert(d.hot_loop && d.hot_loop.change < -0.35, 'hot_loop shrank by 40 points: ' + JSON.stringify(d.hot_loop));
		console.log('ok diff of two ranges: helper', d.helper.change.toFixed(2), 'hot_loop', d.hot_loop.change.toFixed(2));
		await shot(page, 'diff');
		// an empty baseline says so and paints nothing
		await go(`?service=shop&type=cpu&view=diff&lfrom=${NOW - 86400}&luntil=${NOW - 86000}&rfrom=${rf}&runtil=${ru}`);
		assert(await page.$eval('#diff-empty', (e) => !e.hidden && e.textContent.includes('The baseline has no samples')), 'empty baseline message');
		assert.strictEqual((await rendered('diff')).length, 0, 'nothing painted for an empty baseline');
		console.log('ok an empty baseline is said, not painted red');
		await shot(page, 'diff-empty-baseline');

		// diff of two label sets, in the form CI reports link to
		const lq = 'citest.cpu{commit="aaa111"}', rq = 'citest.cpu{commit="bbb222"}';
		await go(`?view=diff&lq=${encodeURIComponent(lq)}&rq=${encodeURIComponent(rq)}&from=${NOW - 3600}&until=${NOW + 1}`);
		d = byName(await rendered('diff'));
		assert(d.parse && Math.abs(d.parse.change - 0.30) < 0.01, 'parse +30 points between the label sets: ' + JSON.stringify(d.parse));
		assert(d.render && Math.abs(d.render.change + 0.30) < 0.01, 'render -30 points');
		assert.strictEqual(await page.$eval('#lq', (e) => e.value), lq);
		console.log('ok diff of two label sets (commit=aaa111 vs bbb222): parse +' + (100 * d.parse.change).toFixed(1), 'points');
		await shot(page, 'diff-labels');

		// CI runs by commit, compared from the list
		await go(`?view=runs&service=citest&type=cpu&from=now-1h`);
		const runs = await page.$$eval('#runs-table tbody tr[data-run]', (t) => t.map((r) => ({ run: r.dataset.run, text: r.textContent })));
		assert.deepStrictEqual(runs.map((r) => r.run), ['bbb222', 'aaa111'], 'runs newest first: ' + JSON.stringify(runs));
		assert(runs[0].text.includes('branch=feature') && runs[0].text.includes('1.00 s') && runs[0].text.includes('1 run'), 'run labels and CPU: ' + runs[0].text);
		assert(runs[1].text.includes('2 runs') && runs[1].text.includes('2.00 s') && !runs[1].text.includes('run=r'), 'two runs of aaa111: ' + runs[1].text);
		await shot(page, 'runs');
		await page.click('#runs-compare');
		await settle();
		assert.strictEqual(param('view'), 'diff');
		assert.strictEqual(param('lq'), 'citest.cpu{commit="aaa111"}');
		assert.strictEqual(param('rq'), 'citest.cpu{commit="bbb222"}');
		d = byName(await rendered('diff'));
		assert(d.parse.change > 0.29, 'compare from the runs list: parse grew');
		console.log('ok runs view lists', runs.length, 'runs by commit; Compare opens their diff');

		// group by a label: one line per value, and a table
		await go('?service=*&type=cpu&groupBy=service_name&from=now-1h&sel=' + encodeURIComponent('{service_name=~"shop|other|web|citest|idle"}'));
		const tl = await page.evaluate(() => window.__scorch.timelineData.lines.map((l) => l.name));
		for (const s of ['shop', 'other', 'web', 'citest']) assert(tl.includes(s), 'a line for ' + s + ': ' + tl);
		const groups = await page.$$eval('#groups-table tbody tr', (t) => t.map((r) => r.dataset.group));
		assert(groups.includes('web') && groups.includes('idle') && groups.length === 5, 'groups table: ' + groups);
		await shot(page, 'group-by');
		await page.click('#groups-table tr[data-group="shop"]');
		await settle();
		assert.strictEqual(param('service'), 'shop', 'a group row selects it');
		console.log('ok group by service_name:', tl.length, 'lines, table', groups.join(' '));

		// absolute CPU: % of machine from the cpus label; clean time and value axes
		// an agent pushes every 10 s: data up to a few seconds ago, none yet for the last bucket
		await page.evaluate(async () => {
			const t = Math.floor(Date.now() / 1000);
			for (let s = t - 60; s <= t - 5; s += 10) {
				for (const [n, body] of [['web.cpu{host=m1,cpus=4}', 'web;serve;handle 100\n'], ['idle.cpu{host=m1,cpus=4}', 'swapper;[idle] 3900\n']]) {
					const r = await fetch('/ingest?name=' + encodeURIComponent(n) + '&from=' + s, { method: 'POST', body });
					if (!r.ok) throw new Error('ingest ' + r.status);
				}
			}
		});
		await go('?service=web&type=cpu&unit=machine&from=now-10m');
		assert.strictEqual(await page.evaluate(() => window.__scorch.machineCores), 4);
		assert.match(await page.textContent('#tl-title'), /% of 4 CPUs/);
		const vals = await page.evaluate(() => window.__scorch.timelineData.lines[0].values.filter((v) => v !== null));
		const med = vals.slice().sort((a, b) => a - b)[Math.floor(vals.length / 2)];
		assert(Math.abs(med - 2.5) < 0.3, '0.1 core of 4 is 2.5% of the machine: ' + med);
		assert(vals[vals.length - 1] > med / 2, 'the last bucket does not drop to zero: ' + vals.slice(-3));
		const summary = await page.textContent('#summary');
		assert(/of 4 CPUs/.test(summary), 'summary gives the share of the machine: ' + summary);
		let ticks = await page.$eval('#timeline canvas', (c) => c.dataset.ticks.split('|'));
		assert.strictEqual(new Set(ticks).size, ticks.length, 'no repeated time labels: ' + ticks);
		const axis = await page.evaluate(() => { const a = window.__scorch.timeline.axis; return a.ticks.map(a.fmt); });
		assert(axis.every((l) => l.endsWith('%')) && new Set(axis.map((l) => (l.split('.')[1] || '').length)).size === 1, 'one unit and format on the axis: ' + axis);
		console.log('ok % of machine: median', med.toFixed(2) + '%, axis', axis.join(' '), 'times', ticks.join(' '));
		await shot(page, 'machine');
		await page.selectOption('#unit', 'cores');
		await settle();
		const caxis = await page.evaluate(() => { const a = window.__scorch.timeline.axis; return a.ticks.map(a.fmt); });
		assert(caxis.every((l) => /^\d+m$/.test(l)), 'cores below one are all in millicores: ' + caxis);
		console.log('ok cores axis:', caxis.join(' '));

		// second-precision ranges: typed, kept to the second
		const f0 = NOW - 427, u0 = NOW - 13;
		await go('?service=shop&type=cpu');
		await page.click('#ranges button[data-range="custom"]');
		const fmt = (t) => { const x = new Date(t * 1000); const p = (n) => String(n).padStart(2, '0'); return `${x.getFullYear()}-${p(x.getMonth() + 1)}-${p(x.getDate())} ${p(x.getHours())}:${p(x.getMinutes())}:${p(x.getSeconds())}`; };
		await page.fill('#from', fmt(f0));
		await page.fill('#until', fmt(u0));
		await page.click('#run');
		await settle();
		assert.strictEqual(param('from'), String(f0));
		assert.strictEqual(param('until'), String(u0));
		ticks = await page.$eval('#timeline canvas', (c) => c.dataset.ticks.split('|'));
		assert.strictEqual(new Set(ticks).size, ticks.length, 'no repeated labels on a 7-minute range: ' + ticks);
		console.log('ok second-precision range kept:', fmt(f0), '-', fmt(u0), 'ticks', ticks.join(' '));

		// a 50k-stack deep profile: more than 7 levels at first, frames below loaded on zoom
		await go('?service=deep&type=cpu&from=now-10m&layout=graph');
		const paint = await page.evaluate(() => Number(document.body.dataset.firstPaintMs));
		nodes = await rendered('flame');
		const levels0 = Math.max(...nodes.map((n) => n.level));
		assert(levels0 > 20, 'the first render reaches deep: ' + levels0 + ' levels');
		// zoom on the widest frame at the deepest level drawn whose subtree was pruned
		const before = new Set(await page.evaluate(() => window.__scorch.flame.names));
		const deepest = nodes.filter((n) => n.w > 30 && n.pruned).sort((a, b) => b.level - a.level || b.w - a.w)[0];
		assert(deepest, 'some frame drawn has frames left out below it');
		const t0 = Date.now();
		await page.locator('#flame canvas').click({ position: { x: deepest.x + 3, y: deepest.y + 9 } });
		await page.waitForFunction(() => !window.__scorch.flame.loading);
		await page.waitForTimeout(30);
		const zoomMs = Date.now() - t0;
		const after = await rendered('flame');
		const levels1 = Math.max(...after.map((n) => n.level));
		const fresh = after.filter((n) => !before.has(n.name));
		assert(await page.evaluate(() => window.__scorch.flame.isSubtree), 'the zoom loaded the subtree from the server: ' + JSON.stringify(deepest) + ' error: ' + await errorText() + ' zoom ' + param('zoom'));
		assert(fresh.length > 0, 'the zoom shows frames the first render did not have');
		assert(param('zoom') && param('zoom').split(';').length === deepest.level, 'zoom path in the URL');
		console.log(`ok deep profile: ${levels0} levels first (paint ${paint} ms); a zoom on ${deepest.name} (level ${deepest.level}) loaded ${fresh.length} new frames, ${levels1} levels (${zoomMs} ms)`);
		await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
		await shot(page, 'deep-zoomed', false);
		await page.evaluate(() => window.scrollTo(0, 0));
		// every frame of >= 0.1% of the selection can be reached by zooming
		const reach = await page.evaluate(async () => {
			const full = await (await fetch('/render?query=deep.cpu&from=now-10m&maxNodes=1000000')).json();
			const fb = full.flamebearer, total = fb.numTicks;
			// the heavy frames' paths, from the full tree
			const paths = [];
			let prev = [{ x: 0, w: total, path: [] }];
			for (let l = 1; l < fb.levels.length; l++) {
				const row = fb.levels[l], cur = [];
				let x = 0, p = 0;
				for (let i = 0; i < row.length; i += 4) {
					x += row[i];
					while (p + 1 < prev.length && prev[p + 1].x <= x) p++;
					const node = { x, w: row[i + 1], path: [...prev[p].path, fb.names[row[i + 3]]] };
					if (node.w * 1000 >= total) paths.push(node.path);
					cur.push(node);
					x += row[i + 1];
				}
				prev = cur;
			}
			const g = window.__scorch.flame;
			let missing = 0, tried = 0;
			// the deepest heavy frames (their ancestors are reached on the way)
			const leaves = paths.filter((p) => !paths.some((q) => q.length === p.length + 1 && q.slice(0, p.length).join(';') === p.join(';')));
			for (const p of leaves.slice(0, 40)) {
				tried++;
				if (!(await g.zoomTo(p, false)) || g.zoomPath.join(';') !== p.join(';')) missing++;
			}
			await g.zoomTo([], false);
			return { heavy: paths.length, leaves: leaves.length, tried, missing };
		});
		assert(reach.heavy > 100 && reach.missing === 0, 'every frame >= 0.1% is reachable: ' + JSON.stringify(reach));
		console.log('ok', reach.tried, 'of', reach.leaves, 'deepest frames >= 0.1% reached by zooming (', reach.heavy, 'heavy frames in all)');

		// upload: pprof, folded and speedscope files open as services of their own
		for (const [file, svc, want] of [['up.pb.gz', 'up-pprof', 'helper'], ['up.folded', 'up-folded', 'hot_loop'], ['up.json', 'up-speedscope', 'helper']]) {
			await go('?view=upload');
			await page.setInputFiles('#upload-file', path.join(tmp, file));
			await page.fill('#upload-name', svc);
			await page.click('#upload-go');
			await page.waitForFunction((s) => document.body.dataset.uploaded === s, svc);
			await settle();
			assert.strictEqual(param('service'), svc);
			const fr = byName(await rendered('flame'));
			assert(fr[want] && fr.total.total === 100, `uploaded ${file} draws ${want}: ` + Object.keys(fr));
			console.log('ok upload of', file, 'opens', svc, 'with', fr.total.total, 'samples');
		}
		// JFR (gzip): every event kind a type of its own, opened on cpu
		await go('?view=upload');
		await page.setInputFiles('#upload-file', path.join(tmp, 'up.jfr.gz'));
		await page.fill('#upload-name', 'up-jfr');
		await page.click('#upload-go');
		await page.waitForFunction(() => document.body.dataset.uploaded === 'up-jfr');
		await settle();
		const jtypes = await page.$$eval('#ptype option', (o) => o.map((x) => x.value));
		assert(jtypes.includes('cpu') && jtypes.includes('lock_count'), 'JFR types: ' + jtypes);
		assert.strictEqual(await page.$eval('#ptype', (e) => e.value), 'cpu');
		assert((await rendered('flame'))[0].total > 0, 'the JFR recording has CPU samples');
		console.log('ok upload of a JFR recording opens up-jfr with', jtypes.length, 'types');
		// OTLP (protobuf): it names its service itself; the new service is opened
		await go('?view=upload');
		await page.setInputFiles('#upload-file', path.join(tmp, 'up.otlp'));
		await page.click('#upload-go');
		await page.waitForFunction(() => document.body.dataset.uploaded && document.body.dataset.uploaded !== 'up-jfr');
		await settle();
		const osvc = await page.evaluate(() => document.body.dataset.uploaded);
		assert(osvc !== '*' && param('service') === osvc, 'the OTLP service is opened: ' + osvc);
		assert.strictEqual((await rendered('flame'))[0].total, 100, 'OTLP upload has its 100 samples');
		console.log('ok upload of an OTLP file opens its own service', osvc);

		await go('?view=upload');
		await page.setInputFiles('#upload-file', path.join(tmp, 'up.pb.gz'));
		await page.fill('#upload-name', 'bad name{');
		await page.click('#upload-go');
		await page.waitForSelector('#upload-status.bad');
		assert.match(await page.textContent('#upload-status'), /may not/);
		await shot(page, 'upload');
		console.log('ok upload refuses a bad name with a message');

		// a real agent's data
		if (agent !== 'skip') {
			await go('?service=fp_hot&type=cpu&from=now-5m&unit=machine');
			fl = byName(await rendered('flame'));
			assert(fl.hot_function && fl.hot_function.total > 10, 'the agent\'s fp_hot has hot_function: ' + Object.keys(fl));
			assert.strictEqual(await page.evaluate(() => window.__scorch.machineCores), Number(agent), 'machine cores from the agent');
			const idle = await page.evaluate(async () => (await (await fetch('/label-values?label=service_name')).json()).includes('idle'));
			assert(idle, 'the agent reports idle CPU');
			console.log('ok real agent data: hot_function', fl.hot_function.total, 'samples; % of machine over', agent, 'CPUs');
			await shot(page, 'agent');
		} else {
			console.log('skip: the real agent part (no BPF)');
		}

		// a shared link: a fresh page with the same URL shows the same state
		const p2 = await browser.newPage();
		await p2.goto(url + '/?service=shop&type=cpu&search=helper&from=now-1h');
		await p2.waitForFunction(() => document.querySelector('#matched') && document.querySelector('#matched').dataset.percent === '45.00');
		await p2.close();
		console.log('ok state from the URL');
	} finally {
		await browser.close();
	}
	assert.deepStrictEqual(outside, [], 'requests left 127.0.0.1');
	assert.deepStrictEqual(errors, [], 'console errors');
	assert(requests.length > 5);
	console.log('ok', requests.length, 'requests, all to 127.0.0.1; no console errors');
}

main().catch((e) => { console.error('FAIL:', e && e.stack || e); process.exit(1); });
