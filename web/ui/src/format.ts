// format.ts: units, numbers, times and axis ticks shared by the views.

// samples; CPU seconds (samples / sample rate); cores (CPU seconds per second of the range);
// % of machine (cores / the machine's CPUs, from the agent's `cpus` label)
export type Unit = 'samples' | 'seconds' | 'cores' | 'machine';
export const UNITS: Unit[] = ['samples', 'seconds', 'cores', 'machine'];

export interface UnitContext {
  unit: Unit;
  sampleRate: number; // samples per second of CPU time
  duration: number;   // seconds covered by the selection (for cores)
  machineCores: number; // CPUs of the machines in the selection (0 unknown)
  nanoseconds?: boolean; // values are nanoseconds of threads' time (offcpu, wall), not samples
}

export function fmtNumber(v: number): string {
  if (!isFinite(v)) return '-';
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + ' G';
  if (a >= 1e6) return (v / 1e6).toFixed(2) + ' M';
  if (a >= 1e4) return (v / 1e3).toFixed(1) + ' k';
  if (Number.isInteger(v)) return String(v);
  return a >= 100 ? v.toFixed(0) : a >= 1 ? v.toFixed(2) : v.toPrecision(2);
}

export function fmtSeconds(s: number): string {
  const a = Math.abs(s);
  if (a === 0) return '0 s';
  if (a < 1e-3) return (s * 1e6).toFixed(0) + ' µs';
  if (a < 1) return (s * 1e3).toFixed(a < 0.01 ? 2 : 0) + ' ms';
  if (a < 120) return s.toFixed(a < 10 ? 2 : 1) + ' s';
  if (a < 7200) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(1) + ' h';
}

export function fmtCores(c: number): string {
  const a = Math.abs(c);
  if (a === 0) return '0 cores';
  if (a < 1) return (c * 1000).toFixed(a < 0.01 ? 1 : 0) + ' mcores';
  return c.toFixed(2) + ' cores';
}

// Seconds of threads' time per second: how many threads, on average (off-CPU, wall-clock).
export function fmtThreads(t: number): string {
  return (t < 10 ? t.toFixed(2) : t.toFixed(1)) + ' threads';
}

// A count of samples in the chosen unit; for nanosecond profiles a time (samples, seconds) or
// threads on average (cores, % of machine).
export function fmtValue(samples: number, u: UnitContext): string {
  if (u.nanoseconds) {
    const s = samples / 1e9;
    return u.unit === 'samples' || u.unit === 'seconds' ? fmtSeconds(s) : fmtThreads(s / Math.max(1, u.duration));
  }
  switch (u.unit) {
    case 'seconds': return fmtSeconds(samples / u.sampleRate);
    case 'cores': return fmtCores(samples / u.sampleRate / Math.max(1, u.duration));
    case 'machine':
      if (!u.machineCores) return fmtCores(samples / u.sampleRate / Math.max(1, u.duration));
      return fmtPercent(samples / u.sampleRate / Math.max(1, u.duration), u.machineCores) + ' of machine';
    default: return fmtNumber(samples) + (Math.abs(samples) === 1 ? ' sample' : ' samples');
  }
}

export function fmtPercent(part: number, whole: number): string {
  if (!whole) return '0%';
  const p = (100 * part) / whole;
  return (p >= 10 || p === 0 ? p.toFixed(1) : p >= 0.01 ? p.toFixed(2) : p.toPrecision(1)) + '%';
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

// Unix seconds of a time expression: "now", "now-15m", "now-90s", unix seconds (or ms/us/ns),
// "2024-01-31 12:00" or "2024-01-31 12:00:05" (local time), or any date Date.parse reads.
export function parseTime(s: string, now = Date.now() / 1000): number | null {
  s = s.trim();
  if (s === '' || s === 'now') return Math.floor(now);
  const m = /^now-(\d+)([smhdw])$/.exec(s);
  if (m) {
    const mult: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
    return Math.floor(now - Number(m[1]) * mult[m[2]]);
  }
  if (/^\d+$/.test(s)) {
    let v = Number(s);
    while (v > 1e11) v /= 1000;
    return Math.floor(v);
  }
  const l = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$/.exec(s);
  if (l) {
    const d = new Date(Number(l[1]), Number(l[2]) - 1, Number(l[3]), Number(l[4] ?? 0), Number(l[5] ?? 0), Number(l[6] ?? 0));
    return isNaN(d.getTime()) ? null : Math.floor(d.getTime() / 1000);
  }
  const d = Date.parse(s);
  return isNaN(d) ? null : Math.floor(d / 1000);
}

const p2 = (n: number) => String(n).padStart(2, '0');

// "2024-01-31 12:00:05" (seconds shown when not zero, or always with seconds = true).
export function fmtTime(t: number, withDate = true, seconds = false): string {
  const d = new Date(t * 1000);
  let hm = p2(d.getHours()) + ':' + p2(d.getMinutes());
  if (seconds || d.getSeconds()) hm += ':' + p2(d.getSeconds());
  return withDate ? d.getFullYear() + '-' + p2(d.getMonth() + 1) + '-' + p2(d.getDate()) + ' ' + hm : hm;
}

export function fmtDuration(s: number): string {
  if (s < 120) return Math.round(s) + ' s';
  if (s < 7200) return Math.round(s / 60) + ' min';
  if (s < 172800) return (s / 3600).toFixed(s < 36000 ? 1 : 0) + ' h';
  return (s / 86400).toFixed(1) + ' d';
}

// Ticks of a time axis: round times (whole seconds, minutes, hours, days in local time) about
// minPx apart, each labelled once, with the date on the first tick and where the day changes.
export interface Tick { t: number; label: string }
const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800, 2592000];

export function timeTicks(from: number, until: number, widthPx: number, minPx = 90): Tick[] {
  const span = Math.max(1e-9, until - from);
  const want = span / Math.max(1, widthPx / minPx);
  const step = STEPS.find((s) => s >= want) ?? STEPS[STEPS.length - 1];
  // align to the step in local time (the offset matters for hours and days)
  const tz = new Date(from * 1000).getTimezoneOffset() * 60;
  let t = Math.ceil((from - tz) / step) * step + tz;
  if (step >= 86400) { const d = new Date(t * 1000); d.setHours(0, 0, 0, 0); t = d.getTime() / 1000; if (t < from) t += step; }
  const out: Tick[] = [];
  let lastDay = '';
  for (; t <= until + 1e-9 && out.length < 200; t += step) {
    const d = new Date(t * 1000);
    const day = d.getFullYear() + '-' + p2(d.getMonth() + 1) + '-' + p2(d.getDate());
    let label: string;
    if (step >= 86400) label = p2(d.getMonth() + 1) + '-' + p2(d.getDate());
    else {
      label = p2(d.getHours()) + ':' + p2(d.getMinutes()) + (step < 60 ? ':' + p2(d.getSeconds()) : '');
      if (day !== lastDay && (out.length === 0 || span > 20 * 3600)) label = p2(d.getMonth() + 1) + '-' + p2(d.getDate()) + ' ' + label;
    }
    lastDay = day;
    out.push({ t, label });
  }
  return out;
}

// A value axis: a round maximum above max and one formatter for all its labels (one unit and
// the same number of decimals on every label).
export interface ValueAxis { max: number; ticks: number[]; fmt: (v: number) => string; unit: string }

export function valueAxis(max: number, kind: 'samples' | 'cores' | 'percent', n = 4): ValueAxis {
  const top = Math.max(max, kind === 'percent' ? 1 : 1e-9);
  const raw = top / n;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s * n >= top - 1e-12) ?? 10 * p;
  const ticks = Array.from({ length: n + 1 }, (_, i) => i * step);
  const decimals = (x: number) => Math.max(0, -Math.floor(Math.log10(x) + 1e-9));
  let fmt: (v: number) => string, unit: string;
  if (kind === 'percent') {
    const d = Math.min(3, decimals(step));
    fmt = (v) => v.toFixed(d) + '%'; unit = '% of machine';
  } else if (kind === 'cores') {
    if (ticks[n] < 1) {
      const d = Math.min(3, decimals(step * 1000));
      fmt = (v) => (v * 1000).toFixed(d) + 'm'; unit = 'millicores';
    } else {
      const d = Math.min(3, decimals(step));
      fmt = (v) => v.toFixed(d); unit = 'cores';
    }
  } else {
    const big = ticks[n] >= 1e6 ? 1e6 : ticks[n] >= 1e4 ? 1e3 : 1;
    const suffix = big === 1e6 ? 'M' : big === 1e3 ? 'k' : '';
    const d = Math.min(3, decimals(step / big));
    fmt = (v) => (v / big).toFixed(d) + suffix; unit = 'samples';
  }
  return { max: ticks[n], ticks, fmt, unit };
}

// Fuzzy match: every character of the query appears in order in s (case-insensitive). Score:
// higher for contiguous runs, matches at word starts and short names; null when no match.
export function fuzzyScore(query: string, s: string): number | null {
  const q = query.toLowerCase(), t = s.toLowerCase();
  if (!q) return 0;
  const sub = t.indexOf(q);
  if (sub >= 0) return 1000 - sub - t.length / 100 + (sub === 0 || /[^a-z0-9]/.test(t[sub - 1]) ? 200 : 0);
  let score = 0, j = 0, run = 0;
  for (let i = 0; i < t.length && j < q.length; i++) {
    if (t[i] === q[j]) {
      run++; j++;
      score += 2 * run + (i === 0 || /[^a-z0-9]/.test(t[i - 1]) ? 5 : 0);
    } else run = 0;
  }
  return j === q.length ? score - t.length / 100 : null;
}
