// format.ts: units and number formatting shared by the views.

export type Unit = 'samples' | 'seconds' | 'cores';

export interface UnitContext {
  unit: Unit;
  sampleRate: number; // samples per second of CPU time
  duration: number;   // seconds covered by the selection (for cores)
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

// A count of samples in the chosen unit.
export function fmtValue(samples: number, u: UnitContext): string {
  switch (u.unit) {
    case 'seconds': return fmtSeconds(samples / u.sampleRate);
    case 'cores': return fmtCores(samples / u.sampleRate / Math.max(1, u.duration));
    default: return fmtNumber(samples) + (Math.abs(samples) === 1 ? ' sample' : ' samples');
  }
}

export function fmtPercent(part: number, whole: number): string {
  if (!whole) return '0%';
  const p = (100 * part) / whole;
  return (p >= 10 || p === 0 ? p.toFixed(1) : p.toFixed(2)) + '%';
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

// Unix seconds of a time expression: "now", "now-15m", unix seconds (or ms/us/ns).
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
  const d = Date.parse(s);
  return isNaN(d) ? null : Math.floor(d / 1000);
}

export function fmtTime(t: number, withDate = true): string {
  const d = new Date(t * 1000);
  const p = (n: number) => String(n).padStart(2, '0');
  const hm = p(d.getHours()) + ':' + p(d.getMinutes());
  return withDate ? d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' + hm : hm;
}
