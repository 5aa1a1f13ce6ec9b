// main.ts: the scorch web UI. Wires the query bar, the timeline and the views (flame graph with
// its table, top table, sandwich, diff of two ranges or two label sets, CI runs, upload) to
// the server's API; all state lives in the URL query string so that any view, zoom and
// comparison can be shared as a link. See docs/ui.md.
import './style.css';
import {
  getJSON, quote, selectorError, unwrapFlamebearer, url,
  type RenderResult, type RunsResult, type SandwichResult, type SeriesResult, type TopResult, type TopRow,
} from './api';
import { FlameGraph, KIND_COLORS, KIND_LABELS, diffColor, type FrameRef, type Kind } from './flame';
import {
  UNITS, escapeHtml, fmtCores, fmtDuration, fmtNumber, fmtPercent, fmtSeconds, fmtThreads, fmtTime, fmtValue, fuzzyScore, parseTime,
  type Unit, type UnitContext,
} from './format';
import { Menu, type MenuItem } from './menu';
import { GROUP_COLORS, Timeline, coverage, lastDrawn, type Band, type Line } from './timeline';
import { detect, ingestName, otlpServiceName, send } from './upload';

type View = 'flame' | 'top' | 'sandwich' | 'diff' | 'runs' | 'upload';
const VIEWS: View[] = ['flame', 'top', 'sandwich', 'diff', 'runs', 'upload'];
const PRESETS = ['15m', '1h', '6h', '24h', '7d', '30d'];
type Layout = 'graph' | 'both' | 'table';

interface State {
  view: View; service: string; type: string; sel: string; from: string; until: string;
  unit: Unit; search: string; fn: string; sort: string; filter: string; zoom: string;
  layout: Layout; groupBy: string; maxNodes: string;
  lq: string; rq: string; lfrom: string; luntil: string; rfrom: string; runtil: string;
  runsBy: string;
  lines: string; // '1': a frame per source line (the server's lines=1), '': per function
}

const DEFAULTS: State = {
  view: 'flame', service: '', type: '', sel: '', from: 'now-1h', until: 'now', unit: 'samples',
  search: '', fn: '', sort: 'self', filter: '', zoom: '', layout: 'both', groupBy: '', maxNodes: '',
  lq: '', rq: '', lfrom: '', luntil: '', rfrom: '', runtil: '', runsBy: 'commit', lines: '',
};
const DEFAULT_MAX_NODES = 16384;

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const input = (id: string) => $<HTMLInputElement>(id);

function readState(): State {
  const p = new URLSearchParams(location.search);
  const s = { ...DEFAULTS };
  for (const k of Object.keys(DEFAULTS) as (keyof State)[]) {
    const v = p.get(k);
    if (v !== null) (s as unknown as Record<string, string>)[k] = v;
  }
  if (!VIEWS.includes(s.view)) s.view = 'flame';
  if (!UNITS.includes(s.unit)) s.unit = 'samples';
  if (!['graph', 'both', 'table'].includes(s.layout)) s.layout = 'both';
  return s;
}

let state = readState();
let sampleRate = 100;
// Off-CPU and wall-clock series count nanoseconds of threads' time, not samples.
let nanoseconds = false;
const nsType = () => nanoseconds || state.type === 'offcpu' || state.type === 'wall';
let machineCores = 0;
let busy = 0;
let generation = 0;

function writeState(push = false): void {
  const p = new URLSearchParams();
  for (const k of Object.keys(DEFAULTS) as (keyof State)[]) if (state[k] !== DEFAULTS[k]) p.set(k, state[k]);
  const u = location.pathname + (p.toString() ? '?' + p.toString() : '');
  if (u !== location.pathname + location.search) {
    if (push) history.pushState(null, '', u); else history.replaceState(null, '', u);
  }
}

// The service picker's "all services" entry: no service_name matcher, only the type, and not
// the idle CPU the agents report (it has a service of its own, "idle").
const ALL = '*';

// sel with one more matcher: `{a="b"}` + c="d" -> `{a="b", c="d"}`, `app.cpu` -> `app.cpu{c="d"}`
function withMatcher(sel: string, label: string, op: string, value: string): string {
  const m = `${label}${op}${quote(value)}`;
  const s = sel.trim();
  if (!s) return `{${m}}`;
  if (!s.endsWith('}')) return `${s}{${m}}`;
  const open = s.indexOf('{');
  const inner = s.slice(open + 1, -1).trim();
  return `${s.slice(0, open)}{${inner ? inner + ', ' : ''}${m}}`;
}

function query(): string {
  const sel = state.sel.trim() || '{}';
  if (!state.service) return sel;
  if (state.service === ALL) {
    if (!sel.startsWith('{')) return sel;
    let q = sel;
    if (state.type) q = withMatcher(q, '__type__', '=', state.type);
    if (!/service_name\s*(=|!=|=~|!~)/.test(sel)) q = withMatcher(q, 'service_name', '!=', 'idle');
    return q;
  }
  return state.service + (state.type ? '.' + state.type : '') + sel;
}

// The range in unix seconds, fixed when a view is loaded: every request of that view (and
// the zooms and exports that follow) asks for the same seconds, which the server's cache of
// merged profiles recognizes.
let pinned: { from: number; until: number } | null = null;

function computeRange(): { from: number; until: number } {
  const now = Date.now() / 1000;
  const from = parseTime(state.from, now) ?? now - 3600, until = parseTime(state.until, now) ?? now;
  return { from, until: Math.max(until, from + 1) };
}

function range(): { from: number; until: number } {
  return pinned ?? computeRange();
}

function units(): UnitContext {
  const r = range();
  return { unit: state.unit, sampleRate, duration: r.until - r.from, machineCores, nanoseconds: nsType() };
}

function rateOf(res: RenderResult): number {
  nanoseconds = res.metadata.units === 'nanoseconds';
  if (nanoseconds) return 1e9;
  return res.metadata.sampleRate || 100;
}

function maxNodes(): number {
  const n = Number(state.maxNodes);
  return n >= 1 && n <= 1 << 20 ? n : DEFAULT_MAX_NODES;
}

// ---- busy / errors / test hook -------------------------------------------------------------

function setBusy(d: number): void {
  busy += d;
  document.body.dataset.busy = String(busy);
  document.body.classList.toggle('loading', busy > 0);
}

function showError(msg: string | null): void {
  const e = $('error');
  e.hidden = !msg;
  e.textContent = msg ?? '';
}

async function track<T>(p: Promise<T>): Promise<T> {
  setBusy(1);
  try { return await p; } finally { setBusy(-1); }
}

// ---- views -----------------------------------------------------------------------------------

const tooltip = $('tooltip');
const menu = new Menu($<HTMLUListElement>('menu'));

function frameMenu(f: FrameRef, x: number, y: number, graph: FlameGraph | null): void {
  const items: MenuItem[] = [];
  if (graph && f.path.length) items.push({ label: 'Zoom to this frame', action: () => void graph.zoomTo(f.path) });
  if (f.path.length) items.push({ label: 'Sandwich view', hint: 'callers and callees', action: () => openSandwich(f.name) });
  items.push({ label: 'Search for this name', action: () => { state.search = f.name; input('search').value = f.name; applySearch(); } });
  items.push({ label: 'Copy name', action: () => void navigator.clipboard?.writeText(f.name).catch(() => undefined) });
  if (graph) items.push({ label: 'Reset zoom', action: () => graph.reset() });
  menu.show(f.name, items, x, y);
}

const flame: FlameGraph = new FlameGraph($('flame'), {
  tooltip, units,
  onFocus: (path) => { state.zoom = path ? path.join(';') : ''; writeState(); updateZoomed(); updateMatched(); },
  onContext: (f, x, y) => frameMenu(f, x, y, flame),
  onError: (m) => showError(m),
  fetchSubtree: async (path) => {
    const r = range();
    const res = await track(getJSON<RenderResult>('/render', { query: query(), from: r.from, until: r.until, format: 'json', maxNodes: maxNodes(), focus: path.join(';'), lines: state.lines || '0' }));
    return { fb: res.flamebearer, selectionTotal: res.focus?.selectionTotal ?? res.flamebearer.numTicks };
  },
});
const callers = new FlameGraph($('callers'), { tooltip, units, inverted: true, onContext: (f, x, y) => frameMenu(f, x, y, null) });
const callees = new FlameGraph($('callees'), { tooltip, units, onContext: (f, x, y) => frameMenu(f, x, y, callees) });
const diff: FlameGraph = new FlameGraph($('diff'), {
  tooltip, units,
  onFocus: (path) => { state.zoom = path ? path.join(';') : ''; writeState(); },
  onContext: (f, x, y) => frameMenu(f, x, y, diff),
  onError: (m) => showError(m),
  fetchSubtree: async (path) => {
    const d = diffSelections();
    const res = await track(getJSON<RenderResult>('/render-diff', {
      leftQuery: d.lq, leftFrom: d.lf, leftUntil: d.lu, rightQuery: d.rq, rightFrom: d.rf, rightUntil: d.ru,
      maxNodes: maxNodes(), focus: path.join(';'), lines: state.lines || '0',
    }));
    const fb = res.flamebearer;
    fb.leftTicks = fb.leftTicks ?? res.leftTicks ?? 0;
    fb.rightTicks = fb.rightTicks ?? res.rightTicks ?? 0;
    return { fb, selectionTotal: (res.leftSelectionTicks ?? 0) + (res.rightSelectionTicks ?? 0), leftSelection: res.leftSelectionTicks, rightSelection: res.rightSelectionTicks };
  },
});
const timeline = new Timeline($('timeline'), $('tl-legend'), (from, until, shift) => {
  if (state.view === 'diff') {
    if (shift) { state.lfrom = String(from); state.luntil = String(until); }
    else { state.rfrom = String(from); state.runtil = String(until); }
    state.zoom = '';
    syncInputs();
    void run(true);
    return;
  }
  state.from = String(from); state.until = String(until);
  state.zoom = '';
  syncInputs();
  void run(true);
});

declare global {
  interface Window { __scorch: unknown }
}
let lastTimeline: { lines: Line[]; start: number; step: number } | null = null;
window.__scorch = {
  flame, callers, callees, diff, timeline,
  get state() { return { ...state }; },
  get busy() { return busy; },
  get generation() { return generation; },
  get machineCores() { return machineCores; },
  get timelineData() { return lastTimeline; },
  get sampleRate() { return sampleRate; },
};

// legend of frame kinds
$('legend').innerHTML = (['native', 'kernel', 'python', 'special'] as Kind[])
  .map((k) => `<span class="chip"><i style="background:${KIND_COLORS[k]}"></i>${KIND_LABELS[k]}</span>`).join('');
$('diff-legend').innerHTML =
  `<span class="chip"><i style="background:${diffColor(-1)}"></i>smaller share</span>` +
  `<span class="grad">${[-1, -0.5, 0, 0.5, 1].map((t) => `<i style="background:${diffColor(t)}"></i>`).join('')}</span>` +
  `<span class="chip"><i style="background:${diffColor(1)}"></i>larger share</span>`;

function updateMatched(): void {
  const m = $('matched');
  if (!state.search.trim()) { m.textContent = ''; m.dataset.percent = ''; return; }
  const t = flame.total;
  const of = flame.isSubtree ? 'of the zoomed frame' : 'of all samples';
  m.textContent = t ? `matched ${fmtPercent(flame.matchedTicks, t)} ${of}` : 'no match';
  m.dataset.percent = t ? ((100 * flame.matchedTicks) / t).toFixed(2) : '0';
}

function updateZoomed(): void {
  const p = flame.zoomPath;
  $('zoomed').textContent = p.length ? `zoomed on ${p[p.length - 1]}` + (flame.isSubtree ? ' (frames below it loaded from the server)' : '') : '';
  $('reset').toggleAttribute('disabled', !p.length);
}

function applySearch(): void {
  flame.setSearch(state.search);
  diff.setSearch(state.search);
  updateMatched();
  writeState();
}

// ---- exports -------------------------------------------------------------------------------

function fileStem(): string {
  const r = range();
  const svc = state.service && state.service !== ALL ? state.service : 'all';
  const d = new Date(r.from * 1000);
  const p2 = (n: number) => String(n).padStart(2, '0');
  return `${svc.replace(/[^A-Za-z0-9._-]/g, '_')}-${d.getFullYear()}${p2(d.getMonth() + 1)}${p2(d.getDate())}-${p2(d.getHours())}${p2(d.getMinutes())}${p2(d.getSeconds())}`;
}

function downloadBlob(blob: Blob, name: string): void {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

function canvasPNG(graph: FlameGraph, name: string): void {
  graph.canvas.toBlob((b) => { if (b) downloadBlob(b, name); }, 'image/png');
}

interface ExportItem { label: string; href?: string; file: string; action?: () => void }

function renderExport(host: HTMLElement, items: ExportItem[]): void {
  host.innerHTML = `<button class="export-btn" type="button">Export ▾</button><ul class="export-list" hidden>` +
    items.map((it, i) => `<li>${it.href ? `<a href="${escapeHtml(it.href)}" download="${escapeHtml(it.file)}" data-i="${i}">${escapeHtml(it.label)}</a>` : `<a href="#" data-i="${i}" data-action="1">${escapeHtml(it.label)}</a>`}</li>`).join('') + '</ul>';
  const list = host.querySelector('ul')!;
  host.querySelector('button')!.addEventListener('click', () => { list.hidden = !list.hidden; });
  list.addEventListener('click', (e) => {
    const a = (e.target as HTMLElement).closest('a');
    if (!a) return;
    if (a.dataset.action) { e.preventDefault(); items[Number(a.dataset.i)].action?.(); }
    list.hidden = true;
  });
}

function updateExports(): void {
  const r = range(), stem = fileStem(), focus = state.zoom || undefined;
  const base = { query: query(), from: r.from, until: r.until, focus, lines: state.lines || '0' };
  renderExport($('export-flame'), [
    { label: 'pprof (.pb.gz)', href: url('/render', { ...base, format: 'pprof' }), file: stem + '.pb.gz' },
    { label: 'folded stacks (.txt)', href: url('/render', { ...base, format: 'folded' }), file: stem + '.folded.txt' },
    { label: 'standalone HTML', href: url('/render', { ...base, format: 'html' }), file: stem + '.html' },
    { label: 'SVG', href: url('/render', { ...base, format: 'svg' }), file: stem + '.svg' },
    { label: 'PNG (as drawn)', file: stem + '.png', action: () => canvasPNG(flame, stem + '.png') },
  ]);
  renderExport($('export-top'), [
    { label: 'CSV', file: stem + '-top.csv', action: () => downloadBlob(new Blob([topCSV()], { type: 'text/csv' }), stem + '-top.csv') },
    { label: 'pprof (.pb.gz)', href: url('/render', { ...base, focus: undefined, format: 'pprof' }), file: stem + '.pb.gz' },
  ]);
  const d = diffSelections();
  renderExport($('export-diff'), [
    { label: 'PNG (as drawn)', file: stem + '-diff.png', action: () => canvasPNG(diff, stem + '-diff.png') },
    { label: 'baseline pprof', href: url('/render', { query: d.lq, from: d.lf, until: d.lu, format: 'pprof' }), file: stem + '-baseline.pb.gz' },
    { label: 'comparison pprof', href: url('/render', { query: d.rq, from: d.rf, until: d.ru, format: 'pprof' }), file: stem + '-comparison.pb.gz' },
  ]);
}

// ---- flame graph and its table -------------------------------------------------------------

async function loadFlame(gen: number): Promise<void> {
  const r = range();
  const res = await track(getJSON<RenderResult>('/render', { query: query(), from: r.from, until: r.until, format: 'json', maxNodes: maxNodes(), lines: state.lines || '0' }));
  if (gen !== generation) return;
  sampleRate = rateOf(res);
  const t0 = performance.now();
  flame.setData(res.flamebearer, false);
  flame.setSearch(state.search);
  document.body.dataset.firstPaintMs = (performance.now() - t0).toFixed(1);
  if (state.zoom && !(await flame.zoomTo(state.zoom.split(';'), false))) {
    if (gen === generation) { state.zoom = ''; writeState(); }
  }
  updateZoomed();
  updateMatched();
  const t = res.flamebearer.numTicks;
  $('summary').textContent = t ? summaryText(t, r) : 'no samples in this range';
}

function summaryText(t: number, r: { from: number; until: number }): string {
  if (nanoseconds) return `${fmtSeconds(t / 1e9)} of threads' time · ${fmtThreads(t / 1e9 / (r.until - r.from))} average`;
  const cores = t / sampleRate / (r.until - r.from);
  let s = `${fmtNumber(t)} samples · ${fmtSeconds(t / sampleRate)} CPU · ${fmtCores(cores)} average`;
  if (machineCores) s += ` · ${fmtPercent(cores, machineCores)} of ${machineCores} CPUs`;
  return s;
}

let topRows: TopRow[] = [];
let topTotal = 0;
let topKey = '';

async function loadTopRows(): Promise<void> {
  const r = range();
  const key = query() + '|' + r.from + '|' + r.until + '|' + state.lines;
  if (key === topKey) return;
  const res = await track(getJSON<TopResult>('/api/v1/top', { query: query(), from: r.from, until: r.until, limit: 5000, sort: 'self', lines: state.lines || '0' }));
  topRows = res.rows;
  topTotal = res.total;
  topKey = key;
  $('top-summary').textContent = `${fmtNumber(res.functions)} functions · ${nsType() ? fmtSeconds(res.total / 1e9) : fmtNumber(res.total) + ' samples'}`;
}

async function loadSampleRate(): Promise<void> {
  const r = range();
  const res = await track(getJSON<RenderResult>('/render', { query: query(), from: r.from, until: r.until, maxNodes: 1 }));
  sampleRate = rateOf(res);
}

async function loadTop(gen: number): Promise<void> {
  await Promise.all([loadTopRows(), loadSampleRate()]);
  if (gen !== generation) return;
  renderTop();
}

function sortedRows(filter: string): TopRow[] {
  const key = state.sort.replace(/^-/, '');
  const asc = state.sort.startsWith('-');
  const f = filter.trim().toLowerCase();
  const rows = f ? topRows.filter((r) => r.name.toLowerCase().includes(f)) : topRows.slice();
  rows.sort((a, b) => {
    let c: number;
    if (key === 'name') c = a.name.localeCompare(b.name);
    else if (key === 'total') c = b.total - a.total || b.self - a.self;
    else c = b.self - a.self || b.total - a.total;
    if (c === 0) c = a.name.localeCompare(b.name);
    return asc ? -c : c;
  });
  return rows;
}

function markSorted(table: HTMLElement): void {
  const key = state.sort.replace(/^-/, ''), asc = state.sort.startsWith('-');
  for (const th of Array.from(table.querySelectorAll<HTMLElement>('th'))) {
    const active = th.dataset.sort === key && !th.classList.contains('pct');
    th.classList.toggle('sorted', active);
    th.dataset.dir = active ? (asc ? 'asc' : 'desc') : '';
  }
}

function renderTop(): void {
  const rows = sortedRows(state.filter).slice(0, 1000);
  const u = units();
  const maxSelf = Math.max(1, ...rows.map((r) => r.self));
  const tb = $<HTMLTableElement>('top-table').tBodies[0];
  tb.innerHTML = rows.map((r) =>
    `<tr data-name="${escapeHtml(r.name)}"><td class="name" title="${escapeHtml(r.name)}"><span class="bar" style="width:${(100 * r.self) / maxSelf}%"></span><span class="fname">${escapeHtml(r.name)}</span></td>` +
    `<td>${fmtValue(r.self, u)}</td><td class="pct">${fmtPercent(r.self, topTotal)}</td>` +
    `<td>${fmtValue(r.total, u)}</td><td class="pct">${fmtPercent(r.total, topTotal)}</td></tr>`).join('') ||
    `<tr><td colspan="5" class="empty">${topRows.length ? 'no function matches the filter' : 'no samples in this range'}</td></tr>`;
  markSorted($('top-table'));
}

let sideFilter = '';
function renderSide(): void {
  const rows = sortedRows(sideFilter).slice(0, 500);
  const u = units();
  const tb = $<HTMLTableElement>('side-table').tBodies[0];
  tb.innerHTML = rows.map((r) =>
    `<tr data-name="${escapeHtml(r.name)}" class="${r.name === state.fn ? 'picked' : ''}"><td class="name" title="${escapeHtml(r.name)}"><span class="fname">${escapeHtml(r.name)}</span></td>` +
    `<td title="${fmtPercent(r.self, topTotal)}">${fmtValue(r.self, u)}</td><td title="${fmtPercent(r.total, topTotal)}">${fmtValue(r.total, u)}</td></tr>`).join('') ||
    `<tr><td colspan="3" class="empty">${topRows.length ? 'no match' : 'no samples'}</td></tr>`;
  markSorted($('side-table'));
}

function topCSV(): string {
  const q = (s: string) => '"' + s.replace(/"/g, '""') + '"';
  return 'function,self,total,self_share,total_share\n' + sortedRows(state.filter).map((r) =>
    `${q(r.name)},${r.self},${r.total},${(r.self / (topTotal || 1)).toFixed(6)},${(r.total / (topTotal || 1)).toFixed(6)}`).join('\n') + '\n';
}

function applyLayout(): void {
  $('split').dataset.layout = state.layout;
  for (const b of Array.from($('layout').querySelectorAll<HTMLElement>('button'))) b.classList.toggle('active', b.dataset.layout === state.layout);
  flame.draw();
}

// ---- sandwich --------------------------------------------------------------------------------

function openSandwich(name: string): void {
  state.fn = name;
  state.view = 'sandwich';
  state.zoom = '';
  void run(true);
}

async function loadSandwich(gen: number): Promise<void> {
  input('fn').value = state.fn;
  if (!state.fn) {
    callers.setData(null); callees.setData(null);
    $('sw-summary').textContent = 'type a name above, or right-click a frame of the flame graph';
    await loadTopRows().catch(() => undefined);
    return;
  }
  const r = range();
  const [res] = await Promise.all([
    track(getJSON<SandwichResult>('/api/v1/sandwich', { query: query(), function: state.fn, from: r.from, until: r.until, maxNodes: maxNodes(), lines: state.lines || '0' })),
    loadSampleRate(),
    loadTopRows().catch(() => undefined),
  ]);
  if (gen !== generation) return;
  callers.setData(unwrapFlamebearer(res.callers));
  callees.setData(unwrapFlamebearer(res.callees));
  $('sw-summary').textContent = `${state.fn}: ${fmtValue(res.total, units())} total`;
}

// fuzzy search over the functions of the selection
const fnInput = input('fn');
const fnList = $<HTMLUListElement>('fn-list');
let fnItems: TopRow[] = [];
let fnActive = 0;

function updateFnList(): void {
  const q = fnInput.value.trim();
  const scored: { r: TopRow; s: number }[] = [];
  if (q) for (const r of topRows) { const s = fuzzyScore(q, r.name); if (s !== null) scored.push({ r, s }); }
  scored.sort((a, b) => b.s - a.s || b.r.self - a.r.self);
  fnItems = scored.slice(0, 30).map((x) => x.r);
  fnActive = 0;
  renderFnList();
}

function renderFnList(): void {
  fnList.hidden = !fnItems.length || document.activeElement !== fnInput;
  const u = units();
  fnList.innerHTML = fnItems.map((r, i) => `<li class="${i === fnActive ? 'active' : ''}" data-i="${i}"><span>${escapeHtml(r.name)}</span><span class="hint">${fmtValue(r.total, u)}</span></li>`).join('');
}

fnInput.addEventListener('input', updateFnList);
fnInput.addEventListener('focus', updateFnList);
fnInput.addEventListener('blur', () => setTimeout(() => { fnItems = []; renderFnList(); }, 150));
fnInput.addEventListener('keydown', (e) => {
  if (fnItems.length && !fnList.hidden) {
    if (e.key === 'ArrowDown') { fnActive = (fnActive + 1) % fnItems.length; renderFnList(); e.preventDefault(); return; }
    if (e.key === 'ArrowUp') { fnActive = (fnActive + fnItems.length - 1) % fnItems.length; renderFnList(); e.preventDefault(); return; }
    if (e.key === 'Enter' || e.key === 'Tab') { fnInput.value = fnItems[fnActive].name; fnItems = []; renderFnList(); openSandwich(fnInput.value); e.preventDefault(); return; }
    if (e.key === 'Escape') { fnItems = []; renderFnList(); return; }
  }
  if (e.key === 'Enter') openSandwich(fnInput.value.trim());
});
fnList.addEventListener('mousedown', (e) => {
  const li = (e.target as HTMLElement).closest('li');
  if (!li) return;
  e.preventDefault();
  const r = fnItems[Number(li.dataset.i)];
  fnItems = []; renderFnList();
  openSandwich(r.name);
});

// ---- diff: two ranges or two label sets -----------------------------------------------------

function diffSelections(): { lq: string; rq: string; lf: number; lu: number; rf: number; ru: number; labels: boolean } {
  const r = range(), span = r.until - r.from, now = Date.now() / 1000;
  const num = (s: string, d: number) => (s ? parseTime(s, now) ?? d : d);
  const lq = state.lq.trim() || query(), rq = state.rq.trim() || query();
  const labels = lq !== rq;
  // label sets compare the same range; one query compares the previous period with this one
  return {
    lq, rq, labels,
    lf: num(state.lfrom, labels ? r.from : r.from - span), lu: num(state.luntil, labels ? r.until : r.from),
    rf: num(state.rfrom, r.from), ru: num(state.runtil, r.until),
  };
}

async function loadDiff(gen: number): Promise<void> {
  const d = diffSelections();
  for (const [side, q] of [['baseline', d.lq], ['comparison', d.rq]]) {
    const err = selectorError(q);
    if (err) throw new Error(`the ${side} selector: ${err}`);
  }
  const res = await track(getJSON<RenderResult>('/render-diff', {
    leftQuery: d.lq, leftFrom: d.lf, leftUntil: d.lu, rightQuery: d.rq, rightFrom: d.rf, rightUntil: d.ru, maxNodes: maxNodes(),
    lines: state.lines || '0',
  }));
  if (gen !== generation) return;
  sampleRate = rateOf(res);
  const fb = res.flamebearer;
  fb.leftTicks = fb.leftTicks ?? res.leftTicks ?? 0;
  fb.rightTicks = fb.rightTicks ?? res.rightTicks ?? 0;
  const empty = $('diff-empty');
  const what = (q: string, f: number, u: number) => `${q} from ${fmtTime(f)} to ${fmtTime(u)}`;
  if (!fb.leftTicks || !fb.rightTicks) {
    // nothing to compare: say so, rather than paint every frame as new or gone
    diff.setData(null);
    empty.hidden = false;
    empty.dataset.side = !fb.leftTicks ? 'baseline' : 'comparison';
    empty.innerHTML = !fb.leftTicks && !fb.rightTicks
      ? `<b>Neither side has samples.</b> Check the two selections.`
      : !fb.leftTicks
        ? `<b>The baseline has no samples</b> (${escapeHtml(what(d.lq, d.lf, d.lu))}): there is nothing to compare the comparison with. Pick another baseline range or label set.`
        : `<b>The comparison has no samples</b> (${escapeHtml(what(d.rq, d.rf, d.ru))}): there is nothing to compare. Pick another comparison range or label set.`;
    $('dsummary').textContent = `baseline ${fmtNumber(fb.leftTicks)} samples · comparison ${fmtNumber(fb.rightTicks)} samples`;
    return;
  }
  empty.hidden = true;
  diff.setData(fb, true);
  diff.setSearch(state.search);
  if (state.zoom && !(await diff.zoomTo(state.zoom.split(';'), false)) && gen === generation) { state.zoom = ''; writeState(); }
  $('dsummary').textContent = `baseline ${fmtNumber(fb.leftTicks)} samples · comparison ${fmtNumber(fb.rightTicks)} samples; color = change of share of the total` +
    (d.labels ? ' · comparing two label sets' : ' · comparing two time ranges');
}

// ---- runs (CI runs by commit) ----------------------------------------------------------------

let runs: RunsResult | null = null;
let runBase = '', runHead = '';

async function loadRuns(gen: number): Promise<void> {
  const r = range();
  const res = await track(getJSON<RunsResult>('/api/v1/runs', { query: query(), from: r.from, until: r.until, by: state.runsBy || 'commit', limit: 500 }));
  if (gen !== generation) return;
  runs = res;
  if (!res.runs.some((x) => x.value === runBase)) runBase = '';
  if (!res.runs.some((x) => x.value === runHead)) runHead = '';
  if (!runHead && res.runs[0]) runHead = res.runs[0].value;
  if (!runBase && res.runs[1]) runBase = res.runs[1].value;
  renderRuns();
}

function renderRuns(): void {
  const tb = $<HTMLTableElement>('runs-table').tBodies[0];
  const by = state.runsBy || 'commit';
  if (!runs || !runs.runs.length) {
    tb.innerHTML = `<tr><td colspan="8" class="empty">no series with a <code>${escapeHtml(by)}</code> label in this range (scorch ci labels its profiles with commit, branch, job, ...)</td></tr>`;
    $('runs-compare').toggleAttribute('disabled', true);
    return;
  }
  const list = runs.runs;
  tb.innerHTML = list.map((x, i) => {
    const cpu = x.units === 'nanoseconds' ? x.total / 1e9 : x.total / (x.sampleRate || 100);
    // scorch ci gives every run a unique `run` label: shown as a count
    const nrun = x.labels.run?.length ?? 0;
    const labels = Object.entries(x.labels).filter(([k, v]) => v.length && k !== 'run').map(([k, v]) => `<span class="tag">${escapeHtml(k)}=${escapeHtml(v.join('|'))}</span>`).join(' ') +
      (nrun ? ` <span class="tag runs-n">${nrun >= 16 ? '16+' : nrun} run${nrun === 1 ? '' : 's'}</span>` : '');
    const prev = list.slice(i + 1).find((y) => y.last <= x.first || y.last < x.last);
    return `<tr data-run="${escapeHtml(x.value)}">` +
      `<td class="pick"><input type="radio" name="run-base" value="${escapeHtml(x.value)}" ${x.value === runBase ? 'checked' : ''}></td>` +
      `<td class="pick"><input type="radio" name="run-head" value="${escapeHtml(x.value)}" ${x.value === runHead ? 'checked' : ''}></td>` +
      `<td class="name run-name"><a href="${escapeHtml(runLink(x.value))}" title="open the flame graph of this run">${escapeHtml(x.value)}</a></td>` +
      `<td class="name labels">${labels}</td>` +
      `<td title="${escapeHtml(fmtTime(x.first, true, true) + ' - ' + fmtTime(x.last, true, true))}">${escapeHtml(fmtTime(x.last))}</td>` +
      `<td>${fmtSeconds(cpu)}</td><td>${fmtNumber(x.total)}</td>` +
      `<td>${prev ? `<a href="${escapeHtml(diffLink(prev.value, x.value))}" class="vs-prev">diff vs ${escapeHtml(prev.value.slice(0, 12))}</a>` : ''}</td></tr>`;
  }).join('') + (runs.truncated ? `<tr><td colspan="8" class="empty">more runs than listed: narrow the range or the query</td></tr>` : '');
  $('runs-compare').toggleAttribute('disabled', !(runBase && runHead && runBase !== runHead));
}

function runSelector(value: string): string {
  return withMatcher(query(), state.runsBy || 'commit', '=', value);
}

function runSpan(...values: string[]): { from: number; until: number } {
  const r = range();
  const sel = (runs?.runs ?? []).filter((x) => values.includes(x.value));
  if (!sel.length) return r;
  return { from: Math.min(...sel.map((x) => x.first)), until: Math.max(...sel.map((x) => x.last)) + 1 };
}

function runLink(value: string): string {
  const s = runSpan(value);
  const p = new URLSearchParams({ view: 'flame', sel: withMatcher(state.sel.trim() || '{}', state.runsBy || 'commit', '=', value), from: String(s.from), until: String(s.until) });
  if (state.service) p.set('service', state.service);
  if (state.type) p.set('type', state.type);
  return '?' + p.toString();
}

// the form the CI reports link to: ?view=diff&lq=&rq=&from=&until=
function diffLink(base: string, head: string): string {
  const s = runSpan(base, head);
  return '?' + new URLSearchParams({ view: 'diff', lq: runSelector(base), rq: runSelector(head), from: String(s.from), until: String(s.until) }).toString();
}

$('runs-table').addEventListener('change', (e) => {
  const t = e.target as HTMLInputElement;
  if (t.name === 'run-base') runBase = t.value;
  if (t.name === 'run-head') runHead = t.value;
  renderRuns();
});
$('runs-compare').addEventListener('click', () => {
  if (!runBase || !runHead) return;
  history.pushState(null, '', diffLink(runBase, runHead));
  state = readState();
  syncInputs();
  void run();
});
$('runs-table').addEventListener('click', (e) => {
  const a = (e.target as HTMLElement).closest('a');
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
  e.preventDefault();
  history.pushState(null, '', a.getAttribute('href')!);
  state = readState();
  void loadTypes().then(() => { syncInputs(); return run(); });
});
input('runs-by').addEventListener('keydown', (e) => { if (e.key === 'Enter') { state.runsBy = input('runs-by').value.trim() || 'commit'; void run(true); } });

// ---- upload ----------------------------------------------------------------------------------

let uploadFile: File | null = null;

function pickFile(f: File | null): void {
  uploadFile = f;
  $('upload-picked').textContent = f ? `${f.name} (${fmtNumber(f.size)} bytes)` : '';
  if (f && !input('upload-name').value) input('upload-name').value = f.name.replace(/\.(pb\.gz|pprof|pb|gz|folded|txt|json|jfr|otlp)$/i, '').replace(/\.(pb|folded|txt|json)$/i, '').replace(/[\s{},="]+/g, '-') || 'upload';
}

input('upload-file').addEventListener('change', () => pickFile(input('upload-file').files?.[0] ?? null));
const drop = $('drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  pickFile(e.dataTransfer?.files?.[0] ?? null);
});

$('upload-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void doUpload();
});

async function doUpload(): Promise<void> {
  const status = $('upload-status');
  const say = (cls: string, html: string) => { status.className = 'upload-status ' + cls; status.innerHTML = html; };
  if (!uploadFile) { say('bad', 'Choose a file first.'); return; }
  try {
    setBusy(1);
    const d = await detect(uploadFile, $<HTMLSelectElement>('upload-format').value);
    const app = input('upload-name').value.trim(), type = input('upload-type').value.trim() || 'cpu';
    const name = d.format === 'otlp' ? '' : ingestName(app, type, input('upload-labels').value);
    say('', `Sending ${escapeHtml(uploadFile.name)} as ${d.format}…`);
    // OTLP names its services itself: the one that appears is the one to open
    const before = d.format === 'otlp' ? await getJSON<string[]>('/label-values', { label: 'service_name' }) : [];
    const at = Math.floor(Date.now() / 1000);
    const res = await send(d, name, at);
    let svc = app;
    if (d.format === 'otlp') {
      const after = await getJSON<string[]>('/label-values', { label: 'service_name' });
      const fresh = after.filter((x) => !before.includes(x));
      svc = otlpServiceName(d.json) ?? (fresh.length === 1 ? fresh[0] : ALL);
    }
    say('ok', `Stored ${escapeHtml(uploadFile.name)} (${d.format}${res.samples !== undefined ? `, ${fmtNumber(res.samples)} samples in ${fmtNumber(res.stacks ?? 0)} stacks` : ''}) as <b>${escapeHtml(svc === ALL ? 'its own services' : svc)}</b>.`);
    // open it: the service, the time it was stored at
    state = { ...DEFAULTS, view: 'flame', service: svc, type: d.format === 'otlp' || d.format === 'jfr' ? '' : type, from: String(at - 60), until: String(at + 60), unit: state.unit };
    document.body.dataset.uploaded = svc;
    await loadServices();
    await run(true);
  } catch (err) {
    say('bad', escapeHtml((err as Error).message));
  } finally {
    setBusy(-1);
  }
}

// ---- timeline and groups ---------------------------------------------------------------------

async function loadMachine(): Promise<void> {
  // the CPUs of the machines in the selection, from the agents' `cpus` label, summed per host
  const r = range(), q = query();
  const hosts = await getJSON<string[]>('/label-values', { label: 'host', query: q, from: r.from, until: r.until });
  const cpusOf = async (sel: string) => Math.max(0, ...(await getJSON<string[]>('/label-values', { label: 'cpus', query: sel, from: r.from, until: r.until })).map(Number).filter((n) => n > 0));
  let sum = 0;
  if (!hosts.length) sum = await cpusOf(q);
  else for (const h of hosts.slice(0, 64)) sum += await cpusOf(`{host=${quote(h)}}`);
  machineCores = sum;
  const opt = $<HTMLSelectElement>('unit').querySelector<HTMLOptionElement>('option[value="machine"]')!;
  opt.disabled = !sum;
  opt.title = sum ? `${sum} CPUs` : 'needs the agents\' cpus label';
}

async function loadTimeline(gen: number): Promise<void> {
  const r = range();
  const span = state.view === 'diff' ? (() => { const d = diffSelections(); return { from: Math.min(r.from, d.lf, d.rf), until: Math.max(r.until, d.lu, d.ru) }; })() : r;
  // nanosecond series: threads on average, whatever the unit chosen
  const rate = state.unit !== 'samples' || nsType();
  let res: SeriesResult;
  const q = state.view === 'diff' && state.lq && state.rq ? diffSelections().rq : query();
  const params = { query: q, from: span.from, until: span.until, group_by: state.groupBy || undefined };
  try {
    res = await track(getJSON<SeriesResult>('/api/v1/series', { ...params, unit: rate ? 'cores' : 'samples' }));
  } catch (e) {
    if (!rate) throw e;
    res = await track(getJSON<SeriesResult>('/api/v1/series', { ...params, unit: 'samples' }));
  }
  if (gen !== generation) return;
  const now = Date.now() / 1000;
  const n = span.until > now - 5 ? lastDrawn(res, now, 30) : res.points;
  const machine = state.unit === 'machine' && machineCores > 0 && res.unit === 'cores' && !nsType();
  const conv = (v: number, i: number) => {
    if (i >= n) return null;
    const c = coverage(res, i, span.from, span.until);
    if (c <= 0) return null;
    const x = v / c; // over the part of the bucket inside the range
    return machine ? (100 * x) / machineCores : x;
  };
  // the largest groups get a line each; the rest are summed
  const groups = res.series.slice().sort((a, b) => b.total - a.total);
  const shown = groups.slice(0, 8), rest = groups.slice(8);
  const lines: Line[] = shown.map((g, k) => ({ name: g.group, total: g.total, color: GROUP_COLORS[k], values: g.values.map(conv) }));
  if (rest.length) {
    const vals = new Array(res.points).fill(0);
    for (const g of rest) g.values.forEach((v, i) => { vals[i] += v; });
    lines.push({ name: `${rest.length} more`, total: rest.reduce((s, g) => s + g.total, 0), color: GROUP_COLORS[9], values: vals.map(conv) });
  }
  if (!state.groupBy && lines.length > 1) {
    // one area for everything
    const vals = new Array(res.points).fill(0);
    for (const g of res.series) g.values.forEach((v, i) => { vals[i] += v; });
    lines.splice(0, lines.length, { name: '', total: res.series.reduce((s, g) => s + g.total, 0), color: GROUP_COLORS[0], values: vals.map(conv) });
  }
  lastTimeline = { lines, start: res.start, step: res.step };
  const kind = res.unit === 'cores' ? (machine ? 'percent' : 'cores') : 'samples';
  $('tl-title').textContent = nsType() && res.unit === 'cores' ? `Threads ${state.type === 'wall' ? 'alive' : 'off CPU'} (average)` :
    kind === 'percent' ? `CPU usage (% of ${machineCores} CPUs)` : kind === 'cores' ? 'CPU usage (cores)' : `Samples per ${fmtDuration(res.step)}`;
  const bands: Band[] = [];
  if (state.view === 'diff') {
    const d = diffSelections();
    bands.push({ from: d.lf, until: d.lu, color: 'rgba(33,102,172,0.14)' }, { from: d.rf, until: d.ru, color: 'rgba(217,88,28,0.14)' });
  }
  timeline.set({ start: res.start, step: res.step, points: res.points, lines, kind }, span.from, span.until, bands);
  renderGroups(res, kind);
}

function renderGroups(res: SeriesResult, kind: string): void {
  const box = $('groups');
  box.hidden = !state.groupBy;
  if (!state.groupBy) return;
  const all = res.series.reduce((s, g) => s + g.total, 0);
  const sorted = res.series.slice().sort((a, b) => b.total - a.total);
  const r = range();
  const fmt = (t: number) => kind === 'samples' ? fmtNumber(t) + ' samples' : state.unit === 'seconds' ? fmtSeconds(t) :
    nsType() ? fmtThreads(t / (r.until - r.from)) :
    kind === 'percent' ? fmtPercent(t / (r.until - r.from), machineCores) + ' of machine' : fmtCores(t / (r.until - r.from));
  $<HTMLTableElement>('groups-table').tBodies[0].innerHTML = sorted.slice(0, 200).map((g, i) =>
    `<tr data-group="${escapeHtml(g.group)}"><td class="name"><i class="swatch" style="background:${GROUP_COLORS[Math.min(i, 9)]}"></i>${escapeHtml(g.group || '(no value)')}</td>` +
    `<td>${fmt(g.total)}</td><td class="pct">${fmtPercent(g.total, all)}</td></tr>`).join('') ||
    `<tr><td colspan="3" class="empty">no samples</td></tr>`;
}

$('groups-table').addEventListener('click', (e) => {
  const tr = (e.target as HTMLElement).closest('tr[data-group]') as HTMLElement | null;
  if (!tr) return;
  const v = tr.dataset.group!;
  if (state.groupBy === 'service_name' && v) { state.service = v; state.groupBy = ''; void loadTypes().then(() => run(true)); return; }
  state.sel = v ? withMatcher(state.sel.trim() || '{}', state.groupBy, '=', v) : state.sel;
  state.groupBy = '';
  void run(true);
});

async function loadGroupLabels(): Promise<void> {
  const r = range();
  const names = await getJSON<string[]>('/labels', { query: query(), from: r.from, until: r.until }).catch(() => [] as string[]);
  const sel = $<HTMLSelectElement>('groupby');
  const list = ['service_name', ...names.filter((n) => n !== 'service_name' && !n.startsWith('__'))];
  if (state.groupBy && !list.includes(state.groupBy)) list.push(state.groupBy);
  sel.innerHTML = '<option value="">(none)</option>' + list.map((n) => `<option value="${escapeHtml(n)}">${escapeHtml(n)}</option>`).join('');
  sel.value = state.groupBy;
}

// ---- query bar: the service picker -----------------------------------------------------------

let services: { name: string; total: number }[] = [];
let svcItems: { name: string; total: number }[] = [];
let svcActive = 0;
const svcInput = input('service');
const svcList = $<HTMLUListElement>('service-list');
let svcAll = 0;

async function loadServices(): Promise<void> {
  const names = await track(getJSON<string[]>('/label-values', { label: 'service_name' }));
  services = names.map((n) => ({ name: n, total: 0 }));
  totalsKey = '';
  if (!state.service && names.length) state.service = ALL;
  svcInput.placeholder = names.length ? 'service' : '(no data yet)';
  syncService();
  await loadTypes();
}

// the services' CPU over the range, for the picker: asked when it opens
let totalsKey = '';
async function loadServiceTotals(): Promise<void> {
  const r = range(), key = r.from + '|' + r.until;
  if (key === totalsKey) return;
  totalsKey = key;
  const series = await getJSON<SeriesResult>('/api/v1/series', { query: '{__type__="cpu"}', from: r.from, until: r.until, group_by: 'service_name', step: Math.max(1, Math.ceil(r.until - r.from)) }).catch(() => null);
  const totals = new Map<string, number>();
  for (const x of series?.series ?? []) totals.set(x.group, x.total);
  svcAll = [...totals.entries()].filter(([k]) => k !== 'idle').reduce((a, [, v]) => a + v, 0);
  for (const x of services) x.total = totals.get(x.name) ?? 0;
  services.sort((a, b) => b.total - a.total || a.name.localeCompare(b.name));
  if (document.activeElement === svcInput) updateSvcList();
}

function syncService(): void {
  svcInput.value = state.service === ALL ? '(all services)' : state.service;
  svcInput.dataset.value = state.service;
}

function updateSvcList(): void {
  const q = svcInput.value.trim();
  const typed = q && q !== '(all services)' && q !== state.service;
  const scored = services.map((s) => ({ s, score: typed ? fuzzyScore(q, s.name) : 0 })).filter((x) => x.score !== null);
  if (typed) scored.sort((a, b) => (b.score! - a.score!) || b.s.total - a.s.total);
  svcItems = [...(typed ? [] : [{ name: ALL, total: svcAll }]), ...scored.slice(0, 200).map((x) => x.s)];
  svcActive = 0;
  renderSvcList();
}

function renderSvcList(): void {
  svcList.hidden = !svcItems.length || document.activeElement !== svcInput;
  const u = units();
  svcList.innerHTML = svcItems.map((s, i) =>
    `<li class="${i === svcActive ? 'active' : ''}${s.name === state.service ? ' current' : ''}" data-i="${i}"><span>${escapeHtml(s.name === ALL ? '(all services)' : s.name)}</span>` +
    `<span class="hint">${s.total ? fmtValue(s.total, u) + (svcAll ? ' · ' + fmtPercent(s.total, svcAll) : '') : ''}</span></li>`).join('');
}

async function pickService(name: string): Promise<void> {
  svcItems = []; renderSvcList();
  state.service = name;
  state.fn = ''; state.zoom = '';
  syncService();
  svcInput.blur();
  await loadTypes().catch((e: Error) => showError(e.message));
  void run(true);
}

svcInput.addEventListener('focus', () => { svcInput.select(); updateSvcList(); void loadServiceTotals(); });
svcInput.addEventListener('input', updateSvcList);
svcInput.addEventListener('blur', () => setTimeout(() => { svcItems = []; renderSvcList(); syncService(); }, 150));
svcInput.addEventListener('keydown', (e) => {
  if (e.key === 'ArrowDown') { svcActive = (svcActive + 1) % Math.max(1, svcItems.length); renderSvcList(); e.preventDefault(); }
  else if (e.key === 'ArrowUp') { svcActive = (svcActive + svcItems.length - 1) % Math.max(1, svcItems.length); renderSvcList(); e.preventDefault(); }
  else if (e.key === 'Enter' && svcItems[svcActive]) { void pickService(svcItems[svcActive].name); e.preventDefault(); }
  else if (e.key === 'Escape') { svcInput.blur(); }
});
svcList.addEventListener('mousedown', (e) => {
  const li = (e.target as HTMLElement).closest('li');
  if (!li) return;
  e.preventDefault();
  void pickService(svcItems[Number(li.dataset.i)].name);
});

async function loadTypes(): Promise<void> {
  const sel = $<HTMLSelectElement>('ptype');
  if (!state.service) { sel.innerHTML = ''; return; }
  const types = await track(getJSON<string[]>('/label-values', state.service === ALL ? { label: '__type__' } :
    { label: '__type__', query: `{service_name=${quote(state.service)}}` }));
  if (!types.includes(state.type)) state.type = types.includes('cpu') ? 'cpu' : types[0] ?? '';
  sel.innerHTML = types.map((t) => `<option value="${escapeHtml(t)}">${escapeHtml(t)}</option>`).join('');
  sel.value = state.type;
}

function fmtInputTime(s: string): string {
  return /^\d+$/.test(s) ? fmtTime(Number(s)) : s;
}

function syncInputs(): void {
  input('selector').value = state.sel;
  input('search').value = state.search;
  input('dsearch').value = state.search;
  input('filter').value = state.filter;
  input('runs-by').value = state.runsBy;
  $<HTMLSelectElement>('unit').value = state.unit;
  input('lines').checked = state.lines === '1';
  syncService();
  const preset = state.until === 'now' && /^now-\d+[mhd]$/.test(state.from) ? state.from.slice(4) : '';
  const custom = !PRESETS.includes(preset);
  for (const b of Array.from(document.querySelectorAll<HTMLElement>('#ranges button')))
    b.classList.toggle('active', b.dataset.range === (custom ? 'custom' : preset));
  $('custom').hidden = !custom;
  input('from').value = fmtInputTime(state.from);
  input('until').value = fmtInputTime(state.until);
  const d = diffSelections();
  input('lq').value = state.lq;
  input('rq').value = state.rq;
  input('lq').placeholder = input('rq').placeholder = query();
  input('lfrom').value = fmtTime(d.lf); input('luntil').value = fmtTime(d.lu);
  input('rfrom').value = fmtTime(d.rf); input('runtil').value = fmtTime(d.ru);
  for (const b of Array.from(document.querySelectorAll<HTMLElement>('#tabs button')))
    b.classList.toggle('active', b.dataset.view === state.view);
  for (const v of VIEWS) $('view-' + v).hidden = v !== state.view;
  $('tl-hint-diff').hidden = state.view !== 'diff';
  $('timeline-panel').hidden = state.view === 'upload';
  $('querybar').classList.toggle('dim', state.view === 'upload');
  applyLayout();
}

function clearViews(): void {
  // after an error nothing of the previous query stays on screen
  flame.setData(null); callers.setData(null); callees.setData(null); diff.setData(null);
  timeline.set(null, range().from, range().until);
  $('summary').textContent = ''; $('dsummary').textContent = '';
  topRows = []; topTotal = 0; topKey = '';
  runs = null;
  renderTop(); renderSide();
  renderRuns();
  $('groups').hidden = true;
}

async function run(push = false): Promise<void> {
  pinned = null;
  pinned = computeRange();
  writeState(push);
  syncInputs();
  const gen = ++generation;
  showError(null);
  const view = state.view;
  if (view === 'upload') { document.body.dataset.loaded = String(gen); return; }
  const err = selectorError(state.sel);
  if (err) {
    clearViews();
    showError(`the selector ${state.sel}: ${err}`);
    document.body.dataset.loaded = String(gen);
    return;
  }
  try {
    // the machine's size first only when the unit needs it; else beside the rest
    const machine = loadMachine().catch(() => { machineCores = 0; });
    if (state.unit === 'machine') await machine;
    const work: Promise<void>[] = [loadTimeline(gen), loadGroupLabels(), machine];
    if (view === 'flame') {
      work.push(loadFlame(gen));
      if (state.layout !== 'graph') work.push(loadTopRows().then(() => { if (gen === generation) renderSide(); }));
    } else if (view === 'top') work.push(loadTop(gen));
    else if (view === 'sandwich') work.push(loadSandwich(gen));
    else if (view === 'runs') work.push(loadRuns(gen));
    else work.push(loadDiff(gen));
    await Promise.all(work);
    if (gen === generation && view === 'flame' && flame.total) $('summary').textContent = summaryText(flame.selectionTotal || flame.total, range());
    updateExports();
  } catch (e) {
    if (gen === generation) {
      clearViews();
      showError((e as Error).message);
    }
  } finally {
    if (gen === generation) document.body.dataset.loaded = String(gen);
  }
}

// ---- autocompletion of the label selector ----------------------------------------------------

const selInput = input('selector');
const suggest = $<HTMLUListElement>('suggest');
let sugItems: string[] = [];
let sugActive = 0;
let sugCtx: { start: number; end: number; quote: boolean; kind: 'name' | 'value' } | null = null;
let sugSeq = 0;

async function updateSuggest(): Promise<void> {
  const seq = ++sugSeq;
  const v = selInput.value, pos = selInput.selectionStart ?? v.length;
  const before = v.slice(0, pos);
  const mVal = /([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*("?)([^",}]*)$/.exec(before);
  const mName = /(^|[{,])\s*([A-Za-z_][A-Za-z0-9_.]*)?$/.exec(before);
  const base = state.service && state.service !== ALL ? `{service_name=${quote(state.service)}}` : '{}';
  const r = range();
  let items: string[] = [];
  try {
    if (mVal) {
      const prefix = mVal[4];
      sugCtx = { start: pos - prefix.length - mVal[3].length, end: pos, quote: true, kind: 'value' };
      const vals = await getJSON<string[]>('/label-values', { label: mVal[1], query: base, from: r.from, until: r.until });
      items = vals.filter((x) => x.toLowerCase().startsWith(prefix.toLowerCase()));
    } else if (mName && (before.includes('{') || before.trim() === '')) {
      const prefix = mName[2] ?? '';
      sugCtx = { start: pos - prefix.length, end: pos, quote: false, kind: 'name' };
      const names = await getJSON<string[]>('/labels', { query: base, from: r.from, until: r.until });
      items = names.filter((x) => !x.startsWith('__') && x !== 'service_name' && x.toLowerCase().startsWith(prefix.toLowerCase()));
    }
  } catch { items = []; }
  if (seq !== sugSeq) return; // typed on meanwhile: a newer request answers
  sugItems = items.slice(0, 50);
  sugActive = 0;
  renderSuggest();
}

function renderSuggest(): void {
  suggest.hidden = sugItems.length === 0 || document.activeElement !== selInput;
  suggest.innerHTML = sugItems.map((s, i) => `<li class="${i === sugActive ? 'active' : ''}" data-i="${i}">${escapeHtml(s)}</li>`).join('');
}

function acceptSuggest(i: number): void {
  if (!sugCtx || !sugItems[i]) return;
  let v = selInput.value;
  let text = sugItems[i];
  if (sugCtx.kind === 'value') text = quote(text);
  else {
    text += '=';
    if (!v.trim()) { v = '{}'; sugCtx = { ...sugCtx, start: 1, end: 1 }; }
  }
  const after = v.slice(sugCtx.end).replace(/^[^",}]*"?/, '');
  v = v.slice(0, sugCtx.start) + text + after;
  selInput.value = v;
  const caret = sugCtx.start + text.length;
  selInput.setSelectionRange(caret, caret);
  sugItems = [];
  renderSuggest();
  if (sugCtx.kind === 'name') void updateSuggest();
}

selInput.addEventListener('input', () => void updateSuggest());
selInput.addEventListener('focus', () => void updateSuggest());
selInput.addEventListener('blur', () => setTimeout(() => { sugItems = []; renderSuggest(); }, 150));
selInput.addEventListener('keydown', (e) => {
  if (!suggest.hidden && sugItems.length) {
    if (e.key === 'ArrowDown') { sugActive = (sugActive + 1) % sugItems.length; renderSuggest(); e.preventDefault(); return; }
    if (e.key === 'ArrowUp') { sugActive = (sugActive + sugItems.length - 1) % sugItems.length; renderSuggest(); e.preventDefault(); return; }
    if (e.key === 'Tab' || (e.key === 'Enter' && sugCtx)) { acceptSuggest(sugActive); e.preventDefault(); return; }
    if (e.key === 'Escape') { sugItems = []; renderSuggest(); return; }
  }
  if (e.key === 'Enter') { state.sel = selInput.value; state.zoom = ''; void run(true); }
});
suggest.addEventListener('mousedown', (e) => {
  const li = (e.target as HTMLElement).closest('li');
  if (li) { e.preventDefault(); acceptSuggest(Number(li.dataset.i)); }
});

// ---- events ----------------------------------------------------------------------------------

$('tabs').addEventListener('click', (e) => {
  const b = (e.target as HTMLElement).closest('button');
  if (!b) return;
  state.view = b.dataset.view as View;
  state.zoom = '';
  void run(true);
});
$('ranges').addEventListener('click', (e) => {
  const b = (e.target as HTMLElement).closest('button');
  if (!b) return;
  if (b.dataset.range === 'custom') {
    const r = range();
    state.from = String(Math.floor(r.from)); state.until = String(Math.floor(r.until));
    syncInputs();
    input('from').focus();
    return;
  }
  state.from = 'now-' + b.dataset.range; state.until = 'now';
  state.lfrom = state.luntil = state.rfrom = state.runtil = '';
  state.zoom = '';
  void run(true);
});
function readCustom(): boolean {
  for (const k of ['from', 'until'] as const) {
    const v = input(k).value.trim();
    const t = parseTime(v);
    if (t === null) { showError(`cannot read the time "${v}": use now-1h, unix seconds or 2024-01-31 12:00:05`); return false; }
    state[k] = /^now/.test(v) ? v : String(t);
  }
  return true;
}
for (const id of ['from', 'until']) input(id).addEventListener('keydown', (e) => { if (e.key === 'Enter' && readCustom()) { state.zoom = ''; void run(true); } });
$('run').addEventListener('click', () => {
  state.sel = selInput.value;
  if (!$('custom').hidden && !readCustom()) return;
  state.zoom = '';
  void run(true);
});
$('ptype').addEventListener('change', () => { state.type = $<HTMLSelectElement>('ptype').value; state.zoom = ''; void run(true); });
$('unit').addEventListener('change', () => {
  state.unit = $<HTMLSelectElement>('unit').value as Unit;
  void run();
});
$('lines').addEventListener('change', () => {
  state.lines = input('lines').checked ? '1' : '';
  state.zoom = ''; // frame names change
  void run(true);
});
$('groupby').addEventListener('change', () => { state.groupBy = $<HTMLSelectElement>('groupby').value; void run(true); });
let searchTimer = 0;
for (const id of ['search', 'dsearch']) input(id).addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = window.setTimeout(() => {
    state.search = input(id).value;
    applySearch();
  }, 80);
});
$('reset').addEventListener('click', () => flame.reset());
$('dreset').addEventListener('click', () => diff.reset());
$('layout').addEventListener('click', (e) => {
  const b = (e.target as HTMLElement).closest('button');
  if (!b) return;
  state.layout = b.dataset.layout as Layout;
  writeState(true);
  applyLayout();
  if (state.layout !== 'graph') void loadTopRows().then(renderSide).catch((er: Error) => showError(er.message));
});
input('filter').addEventListener('input', () => { state.filter = input('filter').value; renderTop(); writeState(); });
input('side-filter').addEventListener('input', () => { sideFilter = input('side-filter').value; renderSide(); });
function sortClick(e: Event, render: () => void): boolean {
  const th = (e.target as HTMLElement).closest('th');
  if (!th || !th.dataset.sort) return false;
  const k = th.dataset.sort;
  state.sort = state.sort === k ? '-' + k : k;
  render(); writeState();
  return true;
}
$('top-table').addEventListener('click', (e) => {
  if (sortClick(e, renderTop)) return;
  const tr = (e.target as HTMLElement).closest('tr[data-name]') as HTMLElement | null;
  if (tr) openSandwich(tr.dataset.name!);
});
$('side-table').addEventListener('click', (e) => {
  if (sortClick(e, renderSide)) return;
  const tr = (e.target as HTMLElement).closest('tr[data-name]') as HTMLElement | null;
  if (!tr) return;
  // pick a function: outline it in the flame graph (click again to drop it)
  state.fn = state.fn === tr.dataset.name ? '' : tr.dataset.name!;
  flame.setHighlight(state.fn);
  renderSide();
  writeState();
});
$('side-table').addEventListener('dblclick', (e) => {
  const tr = (e.target as HTMLElement).closest('tr[data-name]') as HTMLElement | null;
  if (tr) openSandwich(tr.dataset.name!);
});
for (const id of ['top-table', 'side-table']) $(id).addEventListener('contextmenu', (e) => {
  const tr = (e.target as HTMLElement).closest('tr[data-name]') as HTMLElement | null;
  if (!tr) return;
  e.preventDefault();
  const name = tr.dataset.name!;
  frameMenu({ name, path: [name], total: 0, self: 0 }, e.clientX, e.clientY, null);
});
function readDiffInputs(): boolean {
  for (const k of ['lfrom', 'luntil', 'rfrom', 'runtil'] as const) {
    const v = input(k).value, t = parseTime(v);
    if (t === null) { showError(`cannot read the time "${v}"`); return false; }
    state[k] = String(t);
  }
  state.lq = input('lq').value.trim();
  state.rq = input('rq').value.trim();
  state.zoom = '';
  return true;
}
$('diff-run').addEventListener('click', () => { if (readDiffInputs()) void run(true); });
$('diff-swap').addEventListener('click', () => {
  if (!readDiffInputs()) return;
  [state.lq, state.rq] = [state.rq, state.lq];
  [state.lfrom, state.rfrom] = [state.rfrom, state.lfrom];
  [state.luntil, state.runtil] = [state.runtil, state.luntil];
  void run(true);
});
for (const k of ['lq', 'rq', 'lfrom', 'luntil', 'rfrom', 'runtil']) input(k).addEventListener('keydown', (e) => { if (e.key === 'Enter' && readDiffInputs()) void run(true); });
window.addEventListener('popstate', () => { state = readState(); void loadServices().then(() => run()); });

// ---- start -----------------------------------------------------------------------------------

syncInputs();
flame.setHighlight(state.fn);
loadServices().catch((e: Error) => showError(e.message)).finally(() => void run());
