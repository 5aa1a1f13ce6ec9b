// ui_browser.js URL CHROMIUM TMPDIR LFROM LUNTIL RFROM RUNTIL: drives the web UI in headless
// Chromium (see ui_browser.sh for the data it expects). Prints "ok ..." lines; exits 1 on failure.
'use strict';
const assert = require('assert');
const path = require('path');
const { chromium } = require('playwright-core');

const [url, exe, tmp, lf, lu, rf, ru] = process.argv.slice(2);

async function main() {
	// a fresh profile directory (--user-data-dir) in the test's temp dir
	const browser = await chromium.launchPersistentContext(path.join(tmp, 'chromium-profile'), {
		executablePath: exe,
		headless: true,
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
			if (u.protocol === 'data:') return route.continue();
			if (u.hostname !== '127.0.0.1') { outside.push(u.href); return route.abort(); }
			return route.continue();
		});
		const settle = async () => {
			await page.waitForFunction(() => window.__scorch && document.body.dataset.loaded &&
				Number(document.body.dataset.loaded) === window.__scorch.generation && window.__scorch.busy === 0);
			await page.waitForTimeout(50);
		};
		const rendered = (which) => page.evaluate((w) => window.__scorch[w].rendered.map((n) => ({ ...n })), which);

		// flame graph
		await page.goto(url + '/?service=shop&type=cpu', { waitUntil: 'load' });
		await settle();
		let nodes = await rendered('flame');
		const names = nodes.map((n) => n.name);
		for (const f of ['total', 'app', 'main', 'compute', 'hot_loop', 'helper', 'io', 'read_k_[k]'])
			assert(names.includes(f), 'flame graph draws ' + f + '; drew ' + names);
		const byName = Object.fromEntries(nodes.map((n) => [n.name, n]));
		assert.strictEqual(byName.total.total, 200);
		assert.strictEqual(byName.helper.total, 90);
		assert(byName.helper.w > byName.hot_loop.w, 'helper (90) wider than hot_loop (80)');
		assert.strictEqual(byName.compute.level, 3);
		const nonBlank = await page.evaluate(() => {
			const c = document.querySelector('#flame canvas');
			const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
			return n;
		});
		assert(nonBlank > 1000, 'the canvas has pixels drawn');
		assert.strictEqual(await page.$eval('#service', (e) => e.value), 'shop');
		console.log('ok flame graph draws', nodes.length, 'nodes:', names.join(' '));

		// with no service in the URL the whole machine is shown: every service summed
		await page.goto(url + '/', { waitUntil: 'load' });
		await settle();
		assert.strictEqual(await page.$eval('#service', (e) => e.value), '*');
		const all = await page.evaluate(async () => (await (await fetch('/render?query=' +
			encodeURIComponent('{__type__="cpu"}') + '&from=now-1h&until=now')).json()).flamebearer.numTicks);
		assert(all > 200, 'both services together have more than shop alone: ' + all);
		assert.strictEqual((await rendered('flame'))[0].total, all);
		console.log('ok all services by default:', all, 'samples');
		await page.goto(url + '/?service=shop&type=cpu', { waitUntil: 'load' });
		await settle();

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
		assert.strictEqual(new URL(page.url()).searchParams.get('sel'), '{env="prod"}');
		assert.strictEqual((await rendered('flame'))[0].total, 200);
		console.log('ok selector completion gives {env="prod"}');

		// tooltip
		const box = await page.$eval('#flame canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top }; });
		await page.mouse.move(box.x + byName.hot_loop.x + byName.hot_loop.w / 2, box.y + byName.hot_loop.y + 9);
		const tip = await page.$eval('#tooltip', (e) => e.style.display === 'block' ? e.textContent : '');
		assert(tip.includes('hot_loop') && tip.includes('40.0%'), 'tooltip shows hot_loop at 40%: ' + tip);
		console.log('ok tooltip:', tip.slice(0, 80));

		// search
		await page.fill('#search', 'hot');
		await page.waitForFunction(() => document.querySelector('#matched').dataset.percent === '40.00');
		nodes = await rendered('flame');
		assert.deepStrictEqual(nodes.filter((n) => n.match).map((n) => n.name), ['hot_loop']);
		assert(new URL(page.url()).searchParams.get('search') === 'hot', 'search is in the URL');
		console.log('ok search highlights hot_loop, matched', await page.textContent('#matched'));
		await page.screenshot({ path: path.join(tmp, 'shots', 'flame.png'), fullPage: true });
		await page.fill('#search', '');

		// click to zoom on compute, then reset
		await page.mouse.click(box.x + byName.compute.x + 5, box.y + byName.compute.y + 9);
		nodes = await rendered('flame');
		const width = await page.$eval('#flame canvas', (c) => c.clientWidth);
		const zc = nodes.find((n) => n.name === 'compute');
		assert(zc && Math.abs(zc.w - width) < 1, 'compute fills the width after a click');
		assert(!nodes.some((n) => n.name === 'io'), 'io is hidden when zoomed on compute');
		await page.click('#reset');
		nodes = await rendered('flame');
		assert(nodes.some((n) => n.name === 'io'), 'reset shows io again');
		console.log('ok click zooms, reset restores');

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
		await page.fill('#filter', '');
		console.log('ok top table sorts and filters');
		await page.screenshot({ path: path.join(tmp, 'shots', 'top.png'), fullPage: true });

		// sandwich from a row click
		await page.click('#top-table tbody tr[data-name="helper"]');
		await settle();
		assert.strictEqual(new URL(page.url()).searchParams.get('view'), 'sandwich');
		const callers = (await rendered('callers')).map((n) => n.name);
		const callees = (await rendered('callees')).map((n) => n.name);
		for (const f of ['main', 'compute', 'helper']) assert(callers.includes(f), 'callers has ' + f + ': ' + callers);
		assert(!callers.includes('io'), 'callers has no io');
		assert(callees.includes('helper') && !callees.includes('hot_loop'), 'callees: ' + callees);
		console.log('ok sandwich of helper: callers', callers.join(' '), '| callees', callees.join(' '));
		await page.screenshot({ path: path.join(tmp, 'shots', 'sandwich.png'), fullPage: true });

		// diff
		await page.goto(`${url}/?service=shop&type=cpu&view=diff&lfrom=${lf}&luntil=${lu}&rfrom=${rf}&runtil=${ru}`);
		await settle();
		nodes = await rendered('diff');
		const d = Object.fromEntries(nodes.map((n) => [n.name, n]));
		assert(d.helper && d.helper.change > 0.45, 'helper grew by 50 points: ' + JSON.stringify(d.helper));
		assert(d.hot_loop && d.hot_loop.change < -0.35, 'hot_loop shrank by 40 points: ' + JSON.stringify(d.hot_loop));
		console.log('ok diff: helper', d.helper.change.toFixed(2), 'hot_loop', d.hot_loop.change.toFixed(2));
		await page.screenshot({ path: path.join(tmp, 'shots', 'diff.png'), fullPage: true });

		// shared link: a fresh page with the same URL shows the same state
		const p2 = await browser.newPage();
		await p2.goto(url + '/?service=shop&type=cpu&search=helper');
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
