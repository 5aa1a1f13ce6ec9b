// ui_bench.js SCORCH_URL CHROMIUM RUNS SPEEDSCOPE_URL|none PROFILE_URL SERVER_PID: first paint and zoom
// timings of a deep 50k-stack profile in scorch's web UI, next to scorch's standalone HTML
// page and speedscope loading the same stacks, in the same headless Chromium. Run by
// bench/ui_bench.sh, which prints the table.
'use strict';
const { chromium } = require('playwright-core');

const fs = require('fs');

const [url, exe, runsArg, ssUrl, profileUrl, srvPid] = process.argv.slice(2);
const RUNS = Number(runsArg) || 5;
// the server's CPU time (user + system) in ms: what a request costs whatever the machine's load
const TCK = 100;
function srvCpu() {
	const f = fs.readFileSync(`/proc/${srvPid}/stat`, 'utf8');
	const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
	return ((Number(rest[11]) + Number(rest[12])) * 1000) / TCK;
}

function stats(xs) {
	const s = xs.slice().sort((a, b) => a - b);
	return { med: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1], n: s.length };
}

async function main() {
	const browser = await chromium.launch({
		executablePath: exe, headless: true,
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	const m = {};
	const add = (k, v) => { (m[k] = m[k] || []).push(v); };
	try {
		for (let run = 0; run < RUNS; run++) {
			const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
			const page = await ctx.newPage();
			// scorch UI: navigation to the first flame graph drawn
			const c0 = srvCpu();
			const t0 = Date.now();
			await page.goto(url + '/?service=deep&type=cpu&from=now-1h&layout=graph', { waitUntil: 'load' });
			await page.waitForFunction(() => window.__scorch && document.body.dataset.loaded &&
				Number(document.body.dataset.loaded) === window.__scorch.generation && window.__scorch.busy === 0 &&
				Number(document.querySelector('#flame canvas').dataset.nodes) > 0, null, { timeout: 60000 });
			add('ui: page load to flame graph drawn (ms)', Date.now() - t0);
			add('server CPU of the page load (ms)', srvCpu() - c0);
			add('ui: decode + first draw of the data (ms)', Number(await page.evaluate(() => document.body.dataset.firstPaintMs)));
			const nodes = await page.evaluate(() => window.__scorch.flame.rendered.length);
			add('ui: frames drawn at first', nodes);
			// zooms that load the subtree from the server: the first (the server merges the
			// selection) and the next (the merge is cached)
			const fetched = async () => page.evaluate(async () => {
				const g = window.__scorch.flame;
				await g.zoomTo([], false);
				const cands = g.rendered.filter((x) => x.pruned && x.level >= 3 && x.w > 20).sort((a, b) => b.level - a.level);
				const n = cands[Math.floor(Math.random() * Math.min(5, cands.length))];
				if (!n) return -1;
				const c = g.canvas, r = c.getBoundingClientRect();
				const t = performance.now();
				c.dispatchEvent(new MouseEvent('click', { clientX: r.left + n.x + 2, clientY: r.top + n.y + 9, bubbles: true }));
				await new Promise((res) => { const w = () => (g.loading ? requestAnimationFrame(w) : res()); requestAnimationFrame(w); });
				return performance.now() - t;
			});
			let c1 = srvCpu();
			const cold = await fetched();
			if (cold >= 0) add(run === 0 ? 'ui: zoom loading the subtree, first (ms)' : 'ui: zoom loading the subtree, again (ms)', cold);
			add('server CPU of a zoom loading the subtree (ms)', srvCpu() - c1);
			c1 = srvCpu();
			const warm = await fetched();
			if (warm >= 0) add('ui: zoom loading the subtree, again (ms)', warm);
			add('server CPU of a zoom loading the subtree (ms)', srvCpu() - c1);
			// zooms within the data at hand (no request): into a frame of the loaded subtree,
			// and back out to the whole graph
			const local = await page.evaluate(async () => {
				const g = window.__scorch.flame;
				const depth = g.zoomPath.length;
				const n = g.rendered.filter((x) => !x.pruned && x.level > depth && x.w > 20 && x.w < g.canvas.clientWidth - 1).sort((a, b) => b.w - a.w)[0];
				if (!n) return [-1, -1];
				const c = g.canvas, r = c.getBoundingClientRect();
				let t = performance.now();
				c.dispatchEvent(new MouseEvent('click', { clientX: r.left + n.x + 2, clientY: r.top + n.y + 9, bubbles: true }));
				const inside = performance.now() - t;
				if (g.loading) return [-1, -1];
				t = performance.now();
				await g.zoomTo([]);
				return [inside, performance.now() - t];
			});
			if (local[0] >= 0) add('ui: zoom within the data at hand (ms)', local[0]);
			if (local[1] >= 0) add('ui: zoom out to the whole graph (ms)', local[1]);
			await ctx.close();

			// scorch's standalone HTML page (/render?format=html) of the same selection
			const c2 = await browser.newContext({ viewport: { width: 1400, height: 900 } });
			const p2 = await c2.newPage();
			const t2 = Date.now();
			await p2.goto(url + '/render?query=deep.cpu&from=now-1h&format=html', { waitUntil: 'load' });
			await p2.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
			add('standalone HTML page: load to drawn (ms)', Date.now() - t2);
			await c2.close();

			// speedscope with the same stacks (folded file)
			if (ssUrl !== 'none') {
				const c3 = await browser.newContext({ viewport: { width: 1400, height: 900 } });
				const p3 = await c3.newPage();
				const t3 = Date.now();
				await p3.goto(ssUrl + '/index.html#profileURL=' + encodeURIComponent(profileUrl) + '&title=deep', { waitUntil: 'load' });
				// speedscope titles the page after the profile once it has drawn it
				await p3.waitForFunction(() => /deep/.test(document.title) && document.querySelector('canvas'), null, { timeout: 120000 });
				await p3.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))));
				add('speedscope 1.25.0: load to drawn (ms)', Date.now() - t3);
				await c3.close();
			}
		}
	} finally {
		await browser.close();
	}
	const rows = Object.entries(m).map(([k, v]) => ({ k, ...stats(v) }));
	console.log('| measure | median | min | max | runs |');
	console.log('|---|---:|---:|---:|---:|');
	for (const r of rows) console.log(`| ${r.k} | ${Math.round(r.med)} | ${Math.round(r.min)} | ${Math.round(r.max)} | ${r.n} |`);
}

main().catch((e) => { console.error('FAIL:', e && e.stack || e); process.exit(1); });
