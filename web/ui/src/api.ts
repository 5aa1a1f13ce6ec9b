// api.ts: the server's HTTP API as typed functions (docs/server.md). Every request goes to the
// origin the page came from; nothing else is ever contacted.

export interface Flamebearer {
  names: string[];
  levels: number[][];
  numTicks: number;
  maxSelf: number;
  leftTicks?: number;
  rightTicks?: number;
}

export interface Focus { path: string[]; total: number; selectionTotal: number }

export interface RenderResult {
  flamebearer: Flamebearer;
  metadata: { format: string; spyName?: string; sampleRate?: number; units?: string; name?: string };
  focus?: Focus;
  leftTicks?: number;
  rightTicks?: number;
  leftSelectionTicks?: number;
  rightSelectionTicks?: number;
}

export interface SeriesResult {
  start: number;
  step: number;
  points: number;
  unit: string;
  sampleRate?: number;
  series: { group: string; total: number; values: number[] }[];
}

export interface TopRow { name: string; self: number; total: number }
export interface TopResult { total: number; functions: number; rows: TopRow[] }
export interface SandwichResult { function: string; total: number; callers: Flamebearer; callees: Flamebearer }

export interface Run {
  value: string; total: number; first: number; last: number; series: number;
  sampleRate: number; units: string; labels: Record<string, string[]>;
}
export interface RunsResult { by: string; count: number; truncated: boolean; runs: Run[] }

export class ApiError extends Error {
  constructor(public status: number, message: string) { super(message); }
}

export type Params = Record<string, string | number | undefined>;

export function url(path: string, params: Params): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const qs = q.toString();
  return qs ? path + '?' + qs : path;
}

async function check(res: Response): Promise<string> {
  const text = await res.text();
  if (!res.ok) {
    let msg = text;
    try { msg = (JSON.parse(text) as { error?: string }).error ?? text; } catch { /* not JSON */ }
    throw new ApiError(res.status, msg || res.statusText);
  }
  return text;
}

export async function getJSON<T>(path: string, params: Params, signal?: AbortSignal): Promise<T> {
  const res = await fetch(url(path, params), { signal, headers: { Accept: 'application/json' } });
  return JSON.parse(await check(res)) as T;
}

export async function postBody<T>(path: string, params: Params, body: BodyInit, contentType: string): Promise<T> {
  const res = await fetch(url(path, params), { method: 'POST', body, headers: { 'Content-Type': contentType, Accept: 'application/json' } });
  const text = await check(res);
  try { return JSON.parse(text) as T; } catch { return {} as T; }
}

// The "flamebearer" object may sit at the top level or under "flamebearer" (sandwich trees).
export function unwrapFlamebearer(x: unknown): Flamebearer {
  const o = x as { flamebearer?: Flamebearer } & Flamebearer;
  return o.flamebearer ?? o;
}

// A Prometheus-style selector is checked before it is sent, so that a typo gives a message
// at once (and never a stale graph under an error). Returns null when it reads well.
export function selectorError(sel: string): string | null {
  const s = sel.trim();
  if (!s) return null;
  let i = 0;
  const ws = () => { while (i < s.length && /\s/.test(s[i])) i++; };
  // APP.TYPE prefix
  if (s[0] !== '{') {
    while (i < s.length && s[i] !== '{') {
      if (/[\s},="]/.test(s[i])) return `unexpected "${s[i]}" at ${i + 1} in the application name`;
      i++;
    }
    if (i === s.length) return null;
  }
  i++; // '{'
  ws();
  if (s[i] === '}') return i + 1 === s.length ? null : `text after "}" at ${i + 2}`;
  for (;;) {
    ws();
    const m = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(s.slice(i));
    if (!m) return `expected a label name at ${i + 1}`;
    i += m[0].length; ws();
    const op = /^(=~|!~|!=|=)/.exec(s.slice(i));
    if (!op) return `expected =, !=, =~ or !~ after "${m[0]}" at ${i + 1}`;
    i += op[0].length; ws();
    if (s[i] !== '"') return `expected a quoted value after "${m[0]}${op[0]}" at ${i + 1}`;
    i++;
    while (i < s.length && s[i] !== '"') { if (s[i] === '\\') i++; i++; }
    if (i >= s.length) return 'a quoted value is not closed';
    i++; ws();
    if (s[i] === ',') { i++; continue; }
    if (s[i] === '}') return i + 1 === s.length ? null : `text after "}" at ${i + 2}`;
    return i >= s.length ? 'the selector is missing its closing "}"' : `expected "," or "}" at ${i + 1}`;
  }
}

export function quote(v: string): string {
  return '"' + v.replace(/["\\]/g, '\\$&') + '"';
}
