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

export interface RenderResult {
  flamebearer: Flamebearer;
  metadata: { format: string; spyName?: string; sampleRate?: number; units?: string; name?: string };
  leftTicks?: number;
  rightTicks?: number;
}

export interface SeriesResult {
  start: number;
  step: number;
  points: number;
  unit: string;
  series: { group: string; total: number; values: number[] }[];
}

export interface TopRow { name: string; self: number; total: number }
export interface TopResult { total: number; functions: number; rows: TopRow[] }
export interface SandwichResult { function: string; total: number; callers: Flamebearer; callees: Flamebearer }

export class ApiError extends Error {
  constructor(public status: number, message: string) { super(message); }
}

type Params = Record<string, string | number | undefined>;

export async function getJSON<T>(path: string, params: Params, signal?: AbortSignal): Promise<T> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const res = await fetch(path + '?' + q.toString(), { signal, headers: { Accept: 'application/json' } });
  const text = await res.text();
  if (!res.ok) {
    let msg = text;
    try { msg = (JSON.parse(text) as { error?: string }).error ?? text; } catch { /* not JSON */ }
    throw new ApiError(res.status, msg || res.statusText);
  }
  return JSON.parse(text) as T;
}

// The "flamebearer" object may sit at the top level or under "flamebearer" (sandwich trees).
export function unwrapFlamebearer(x: unknown): Flamebearer {
  const o = x as { flamebearer?: Flamebearer } & Flamebearer;
  return o.flamebearer ?? o;
}
