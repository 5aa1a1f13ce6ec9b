// main.ts: the scorch web UI. Wires the query bar, the timeline and the views (flame graph,
// top table, sandwich, diff) to the server's API; all state lives in the URL query string so
// that any view can be shared as a link. See docs/ui.md.
import './style.css';
import { getJSON, unwrapFlamebearer, type RenderResult, type SandwichResult, type SeriesResult, type TopResult, type TopRow } from './api';
import { FlameGraph, KIND_COLORS, KIND_LABELS, diffColor, type Kind } from './flame';
import { escapeHtml, fmtCores, fmtNumber, fmtPercent, fmtSeconds, fmtTime, fmtValue, parseTime, type Unit, type UnitContext } from './format';
import { Timeline } from './timeline';

type View = 'flame' | 'top' | 'sandwich' | 'diff';
const VIEWS: View[] = ['flame', 'top', 'sandwich', 'diff'];
const PRESETS = ['15m', '1h', '6h', '24h', '7d'];

interface State {
  view: View; service: string; type: string; sel: string; from: string; until: string;
  unit: Unit; search: string; fn: string; sort: string; filter: string;
  lfrom: string; luntil: string; rfrom: string; runtil: string;
}

const DEFAULTS: State = {
  view: 'flame', service: '', type: '', sel: '', from: 'now-1h', until: 'now', unit: 'samples',
  search: '', fn: '', sort: 'self', filter: '', lfrom: '', luntil: '', rfrom: '', runtil: '',
};

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

function readState(): State {
  const p = new URLSearchParams(location.search);
  const s = { ...DEFAULTS };
  for (const k of Object.keys(DEFAULTS) as (keyof State)[]) {
    const v = p.get(k);
    if (v !== null) (s as unknown as Record<string, string>)[k] = v;
  }
  if (!VIEWS.includes(s.view)) s.view = 'flame';
  if (!['samples', 'seconds', 'cores'].includes(s.unit)) s.unit = 'samples';
  return s;
}

let state = readState();
let sampleRate = 100;
let busy = 0;
let generation = 0;

function writeState(push = false): void {
  const p = new URLSearchParams();
  for (const k of Object.keys(DEFAULTS) as (keyof State)[]) if (state[k] !== DEFAULTS[k]) p.set(k, state[k]);
  const url = location.pathname + (p.toString() ? '?' + p.toString() : '');
  if (url !== location.pathname + location.search) {
    if (push) history.pushState(null, '', url); else history.replaceState(null, '', url);
  }
}

// The service picker's "all services" entry: no service_name matcher, only the type.
const ALL = '*';

function query(): string {
  const sel = state.sel.trim() || '{}';
  if (!state.service) return sel;
  if (state.service === ALL) {
    if (!state.type || !sel.startsWith('{')) return sel;
    const inner = sel.slice(1, -1).trim();
    return `{__type__="${state.type.replace(/["\\]/g, '\\$&')}"${inner ? ', ' + inner : ''}}`;
  }
  return state.service + (state.type ? '.' + state.type : '') + sel;
}

function range(): { from: number; until: number } {
  const now = Date.now() / 1000;
  const from = parseTime(state.from, now) ?? now - 3600, until = parseTime(state.until, now) ?? now;
  return { from, until: Math.max(until, from + 1) };
}

function units(): UnitContext {
  const r = range();
  return { unit: state.unit, sampleRate, duration: r.until - r.from };
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
const flame = new FlameGraph($('flame'), {
  tooltip, units,
  onFocus: () => updateMatched(),
});
const callers = new FlameGraph($('callers'), { tooltip, units, inverted: true });
const callees = new FlameGraph($('callees'), { tooltip, units });
const diffUnits = () => units();
const diff = new FlameGraph($('diff'), { tooltip, units: diffUnits });
const timeline = new Timeline($('timeline'), (from, until, shift) => {
  if (state.view === 'diff') {
    if (shift) { state.lfrom = String(from); state.luntil = String(until); }
    else { state.rfrom = String(from); state.runtil = String(until); }
    syncInputs();
    run();
    return;
  }
  state.from = String(from); state.until = String(until);
  syncInputs();
  run(true);
});

declare global {
  interface Window { __scorch: unknown }
}
window.__scorch = {
  flame, callers, callees, diff, timeline,
  get state() { return { ...state }; },
  get busy() { return busy; },
  get generation() { return generation; },
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
  if (!state.search.trim()) { m.textContent = ''; return; }
  const t = flame.total;
  m.textContent = t ? `matched ${fmtPercent(flame.matchedTicks, t)} of all samples` : 'no match';
  m.dataset.percent = t ? ((100 * flame.matchedTicks) / t).toFixed(2) : '0';
}

async function loadFlame(gen: number): Promise<void> {
  const r = range();
  const res = await track(getJSON<RenderResult>('/render', { query: query(), from: r.from, until: r.until, format: 'json', maxNodes: 8192 }));
  if (gen !== generation) return;
  sampleRate = res.metadata.sampleRate || 100;
  flame.setData(res.flamebearer, false);
  flame.setSearch(state.search);
  updateMatched();
  const t = res.flamebearer.numTicks;
  $('summary').textContent = t ? `${fmtNumber(t)} samples · ${fmtSeconds(t / sampleRate)} CPU · ${fmtCores(t / sampleRate / (r.until - r.from))} average` : 'no samples in this range';
}

let topRows: TopRow[] = [];
let topTotal = 0;

async function loadSampleRate(): Promise<void> {
  const r = range();
  const res = await track(getJSON<RenderResult>('/render', { query: query(), from: r.from, until: r.until, maxNodes: 1 }));
  sampleRate = res.metadata.sampleRate || 100;
}

async function loadTop(gen: number): Promise<void> {
  const r = range();
  const [res] = await Promise.all([
    track(getJSON<TopResult>('/api/v1/top', { query: query(), from: r.from, until: r.until, limit: 2000, sort: 'self' })),
    loadSampleRate(),
  ]);
  if (gen !== generation) return;
  topRows = res.rows;
  topTotal = res.total;
  $('top-summary').textContent = `${fmtNumber(res.functions)} functions · ${fmtNumber(res.total)} samples`;
  renderTop();
}

function renderTop(): void {
  const key = state.sort.replace(/^-/, '');
  const asc = state.sort.startsWith('-');
  const f = state.filter.trim().toLowerCase();
  let rows = f ? topRows.filter((r) => r.name.toLowerCase().includes(f)) : topRows.slice();
  rows.sort((a, b) => {
    let c: number;
    if (key === 'name') c = a.name.localeCompare(b.name);
    else if (key === 'total') c = b.total - a.total || b.self - a.self;
    else c = b.self - a.self || b.total - a.total;
    if (c === 0) c = a.name.localeCompare(b.name);
    return asc ? -c : c;
  });
  rows = rows.slice(0, 1000);
  const u = units();
  const maxSelf = Math.max(1, ...rows.map((r) => r.self));
  const tb = ($('top-table') as HTMLTableElement).tBodies[0];
  tb.innerHTML = rows.map((r) =>
    `<tr data-name="${escapeHtml(r.name)}"><td class="name" title="${escapeHtml(r.name)}"><span class="bar" style="width:${(100 * r.self) / maxSelf}%"></span><span class="fname">${escapeHtml(r.name)}</span></td>` +
    `<td>${fmtValue(r.self, u)}</td><td class="pct">${fmtPercent(r.self, topTotal)}</td>` +
    `<td>${fmtValue(r.total, u)}</td><td class="pct">${fmtPercent(r.total, topTotal)}</td></tr>`).join('') ||
    `<tr><td colspan="5" class="empty">${topRows.length ? 'no function matches the filter' : 'no samples in this range'}</td></tr>`;
  for (const th of Array.from(document.querySelectorAll<HTMLElement>('#top-table th'))) {
    const active = th.dataset.sort === key && !th.classList.contains('pct');
    th.classList.toggle('sorted', active);
    th.dataset.dir = active ? (asc ? 'asc' : 'desc') : '';
  }
}

async function loadSandwich(gen: number): Promise<void> {
  ($('fn') as HTMLInputElement).value = state.fn;
  if (!state.fn) {
    callers.setData(null); callees.setData(null);
    $('sw-summary').textContent = 'pick a function in Top functions';
    return;
  }
  const r = range();
  const [res] = await Promise.all([
    track(getJSON<SandwichResult>('/api/v1/sandwich', { query: query(), function: state.fn, from: r.from, until: r.until, maxNodes: 8192 })),
    loadSampleRate(),
  ]);
  if (gen !== generation) return;
  callers.setData(unwrapFlamebearer(res.callers));
  callees.setData(unwrapFlamebearer(res.callees));
  $('sw-summary').textContent = `${state.fn}: ${fmtValue(res.total, units())} total`;
}

function diffRanges(): { lf: number; lu: number; rf: number; ru: number } {
  const r = range(), span = r.until - r.from, now = Date.now() / 1000;
  const num = (s: string, d: number) => (s ? parseTime(s, now) ?? d : d);
  return {
    lf: num(state.lfrom, r.from - span), lu: num(state.luntil, r.from),
    rf: num(state.rfrom, r.from), ru: num(state.runtil, r.until),
  };
}

async function loadDiff(gen: number): Promise<void> {
  const d = diffRanges(), q = query();
  const res = await track(getJSON<RenderResult>('/render-diff', {
    leftQuery: q, leftFrom: d.lf, leftUntil: d.lu, rightQuery: q, rightFrom: d.rf, rightUntil: d.ru, maxNodes: 8192,
  }));
  if (gen !== generation) return;
  sampleRate = res.metadata.sampleRate || sampleRate;
  const fb = res.flamebearer;
  fb.leftTicks = fb.leftTicks ?? res.leftTicks ?? 0;
  fb.rightTicks = fb.rightTicks ?? res.rightTicks ?? 0;
  diff.setData(fb, true);
  diff.setSearch(($('dsearch') as HTMLInputElement).value);
  $('dsummary').textContent = `baseline ${fmtNumber(fb.leftTicks)} samples · comparison ${fmtNumber(fb.rightTicks)} samples; color = change in share of the total`;
}

async function loadTimeline(gen: number): Promise<void> {
  const r = range();
  const unit = state.unit === 'samples' ? 'samples' : 'cores';
  let res: SeriesResult;
  try {
    res = await track(getJSON<SeriesResult>('/api/v1/series', { query: query(), from: r.from, until: r.until, unit }));
  } catch (e) {
    if (unit === 'samples') throw e;
    res = await track(getJSON<SeriesResult>('/api/v1/series', { query: query(), from: r.from, until: r.until, unit: 'samples' }));
  }
  if (gen !== generation) return;
  const label = res.unit === 'cores' ? (v: number) => (v < 1 ? (v * 100).toFixed(0) + '%' : v.toFixed(v < 10 ? 1 : 0)) : (v: number) => fmtNumber(v);
  $('tl-title').textContent = res.unit === 'cores' ? 'CPU usage (cores; 100% = one core)' : `Samples per ${fmtSeconds(res.step)}`;
  const bands = [];
  if (state.view === 'diff') {
    const d = diffRanges();
    bands.push({ from: d.lf, until: d.lu, color: 'rgba(33,102,172,0.14)' }, { from: d.rf, until: d.ru, color: 'rgba(217,88,28,0.14)' });
  }
  const span = state.view === 'diff' ? (() => { const d = diffRanges(); return { from: Math.min(r.from, d.lf, d.rf), until: Math.max(r.until, d.lu, d.ru) }; })() : r;
  timeline.set(res, span.from, span.until, label, bands);
}

// ---- query bar -------------------------------------------------------------------------------

async function loadServices(): Promise<void> {
  const svc = await track(getJSON<string[]>('/label-values', { label: 'service_name' }));
  const sel = $('service') as HTMLSelectElement;
  if (!state.service && svc.length) state.service = ALL;
  const list = svc.includes(state.service) || !state.service || state.service === ALL ? svc : [state.service, ...svc];
  sel.innerHTML = (list.length ? `<option value="${ALL}">(all services)</option>` : '<option value="">(no data yet)</option>') +
    list.map((s) => `<option value="${escapeHtml(s)}">${escapeHtml(s)}</option>`).join('');
  sel.value = state.service;
  await loadTypes();
}

async function loadTypes(): Promise<void> {
  const sel = $('ptype') as HTMLSelectElement;
  if (!state.service) { sel.innerHTML = ''; return; }
  const types = await track(getJSON<string[]>('/label-values', state.service === ALL ? { label: '__type__' } :
    { label: '__type__', query: `{service_name="${state.service.replace(/["\\]/g, '\\$&')}"}` }));
  if (!types.includes(state.type)) state.type = types.includes('cpu') ? 'cpu' : types[0] ?? '';
  sel.innerHTML = types.map((t) => `<option value="${escapeHtml(t)}">${escapeHtml(t)}</option>`).join('');
  sel.value = state.type;
}

function syncInputs(): void {
  ($('selector') as HTMLInputElement).value = state.sel;
  ($('search') as HTMLInputElement).value = state.search;
  ($('filter') as HTMLInputElement).value = state.filter;
  ($('unit') as HTMLSelectElement).value = state.unit;
  const preset = state.until === 'now' && /^now-\d+[mhd]$/.test(state.from) ? state.from.slice(4) : '';
  const custom = !PRESETS.includes(preset);
  for (const b of Array.from(document.querySelectorAll<HTMLElement>('#ranges button')))
    b.classList.toggle('active', b.dataset.range === (custom ? 'custom' : preset));
  $('custom').hidden = !custom;
  ($('from') as HTMLInputElement).value = /^\d+$/.test(state.from) ? fmtTime(Number(state.from)) : state.from;
  ($('until') as HTMLInputElement).value = /^\d+$/.test(state.until) ? fmtTime(Number(state.until)) : state.until;
  const d = diffRanges();
  ($('lfrom') as HTMLInputElement).value = fmtTime(d.lf);
  ($('luntil') as HTMLInputElement).value = fmtTime(d.lu);
  ($('rfrom') as HTMLInputElement).value = fmtTime(d.rf);
  ($('runtil') as HTMLInputElement).value = fmtTime(d.ru);
  for (const b of Array.from(document.querySelectorAll<HTMLElement>('#tabs button')))
    b.classList.toggle('active', b.dataset.view === state.view);
  for (const v of VIEWS) $('view-' + v).hidden = v !== state.view;
  $('tl-hint-diff').hidden = state.view !== 'diff';
}

async function run(push = false): Promise<void> {
  writeState(push);
  syncInputs();
  const gen = ++generation;
  showError(null);
  const view = state.view;
  const work: Promise<void>[] = [loadTimeline(gen)];
  if (view === 'flame') work.push(loadFlame(gen));
  else if (view === 'top') work.push(loadTop(gen));
  else if (view === 'sandwich') work.push(loadSandwich(gen));
  else work.push(loadDiff(gen));
  try {
    await Promise.all(work);
  } catch (e) {
    if (gen === generation) showError((e as Error).message);
  } finally {
    if (gen === generation) document.body.dataset.loaded = String(gen);
  }
}

// ---- autocompletion of the label selector ----------------------------------------------------

const selInput = $('selector') as HTMLInputElement;
const suggest = $('suggest') as HTMLUListElement;
let sugItems: string[] = [];
let sugActive = 0;
let sugCtx: { start: number; end: number; quote: boolean; kind: 'name' | 'value' } | null = null;

async function updateSuggest(): Promise<void> {
  const v = selInput.value, pos = selInput.selectionStart ?? v.length;
  const before = v.slice(0, pos);
  const mVal = /([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*("?)([^",}]*)$/.exec(before);
  const mName = /(^|[{,])\s*([A-Za-z_][A-Za-z0-9_.]*)?$/.exec(before);
  const base = state.service && state.service !== ALL ? `{service_name="${state.service}"}` : '{}';
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
  if (sugCtx.kind === 'value') text = '"' + text.replace(/["\\]/g, '\\$&') + '"';
  else {
    text += '=';
    if (!v.trim()) { v = '{}'; sugCtx = { ...sugCtx, start: 1, end: 1 }; }
  }
  const after = v.slice(sugCtx.end).replace(/^[^",}]*"?/, sugCtx.kind === 'value' ? '' : '');
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
  if (e.key === 'Enter') { state.sel = selInput.value; void run(true); }
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
  void run(true);
});
$('ranges').addEventListener('click', (e) => {
  const b = (e.target as HTMLElement).closest('button');
  if (!b) return;
  if (b.dataset.range === 'custom') {
    const r = range();
    state.from = String(Math.floor(r.from)); state.until = String(Math.floor(r.until));
    syncInputs();
    ($('from') as HTMLInputElement).focus();
    return;
  }
  state.from = 'now-' + b.dataset.range; state.until = 'now';
  state.lfrom = state.luntil = state.rfrom = state.runtil = '';
  void run(true);
});
function readCustom(): void {
  for (const k of ['from', 'until'] as const) {
    const v = ($(k) as HTMLInputElement).value.trim();
    const t = parseTime(v);
    if (t === null) { showError(`cannot read the time "${v}": use now-1h, unix seconds or 2024-01-31 12:00`); return; }
    state[k] = /^now/.test(v) ? v : String(t);
  }
}
for (const id of ['from', 'until']) $(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') { readCustom(); void run(true); } });
$('run').addEventListener('click', () => {
  state.sel = selInput.value;
  if (!$('custom').hidden) readCustom();
  void run(true);
});
$('service').addEventListener('change', async () => {
  state.service = ($('service') as HTMLSelectElement).value;
  state.fn = '';
  await loadTypes().catch((e: Error) => showError(e.message));
  void run(true);
});
$('ptype').addEventListener('change', () => { state.type = ($('ptype') as HTMLSelectElement).value; void run(true); });
$('unit').addEventListener('change', () => {
  state.unit = ($('unit') as HTMLSelectElement).value as Unit;
  void run();
});
let searchTimer = 0;
$('search').addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = window.setTimeout(() => {
    state.search = ($('search') as HTMLInputElement).value;
    flame.setSearch(state.search);
    updateMatched();
    writeState();
  }, 80);
});
$('dsearch').addEventListener('input', () => diff.setSearch(($('dsearch') as HTMLInputElement).value));
$('reset').addEventListener('click', () => flame.reset());
$('filter').addEventListener('input', () => { state.filter = ($('filter') as HTMLInputElement).value; renderTop(); writeState(); });
$('top-table').addEventListener('click', (e) => {
  const th = (e.target as HTMLElement).closest('th');
  if (th) {
    const k = th.dataset.sort!;
    state.sort = state.sort === k ? '-' + k : k;
    renderTop(); writeState();
    return;
  }
  const tr = (e.target as HTMLElement).closest('tr[data-name]') as HTMLElement | null;
  if (tr) { state.fn = tr.dataset.name!; state.view = 'sandwich'; void run(true); }
});
$('fn').addEventListener('keydown', (e) => { if (e.key === 'Enter') { state.fn = ($('fn') as HTMLInputElement).value; void run(true); } });
function readDiffInputs(): void {
  for (const k of ['lfrom', 'luntil', 'rfrom', 'runtil'] as const) {
    const v = ($(k) as HTMLInputElement).value, t = parseTime(v);
    if (t !== null) state[k] = String(t);
  }
}
$('diff-run').addEventListener('click', () => { readDiffInputs(); void run(true); });
for (const k of ['lfrom', 'luntil', 'rfrom', 'runtil']) $(k).addEventListener('keydown', (e) => { if (e.key === 'Enter') { readDiffInputs(); void run(true); } });
window.addEventListener('popstate', () => { state = readState(); void loadServices().then(() => run()); });

// ---- start -----------------------------------------------------------------------------------

syncInputs();
loadServices().catch((e: Error) => showError(e.message)).finally(() => void run());
