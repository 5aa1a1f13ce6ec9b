// upload.ts: profiles from files into the server. The format is detected from the bytes (and
// the file name where bytes cannot tell pprof from OTLP protobuf); pprof, folded and JFR go
// to /ingest, OTLP to /v1development/profiles, and speedscope is turned into folded stacks
// here (frames named as scorch names them: `name (file:line)`).
import { postBody } from './api';

export type UploadFormat = 'pprof' | 'folded' | 'speedscope' | 'jfr' | 'otlp';

type Bytes = Uint8Array<ArrayBuffer>;

export interface Detected { format: UploadFormat; bytes: Bytes; json?: unknown }

async function gunzip(b: Bytes): Promise<Bytes> {
  const ds = new DecompressionStream('gzip');
  const out = new Response(new Blob([b]).stream().pipeThrough(ds));
  return new Uint8Array(await out.arrayBuffer());
}

const isGzip = (b: Uint8Array) => b.length > 2 && b[0] === 0x1f && b[1] === 0x8b;

// What the file holds. `bytes` is what to send: the file itself, except for JSON formats,
// which are sent (or converted) inflated.
export async function detect(file: File, forced: string): Promise<Detected> {
  const raw = new Uint8Array(await file.arrayBuffer());
  if (!raw.length) throw new Error(`"${file.name}" is empty`);
  let plain: Bytes = raw;
  if (isGzip(raw)) {
    try { plain = await gunzip(raw); } catch { throw new Error(`"${file.name}" looks gzip-compressed but does not inflate`); }
  }
  const head = new TextDecoder('utf-8', { fatal: false }).decode(plain.subarray(0, 4096)).trimStart();
  const name = file.name.toLowerCase();
  let format: UploadFormat;
  if (forced && forced !== 'auto') format = forced as UploadFormat;
  else if (plain.length >= 4 && plain[0] === 0x46 && plain[1] === 0x4c && plain[2] === 0x52 && plain[3] === 0) format = 'jfr';
  else if (head.startsWith('{')) format = /"resourceProfiles"/.test(head) || name.includes('otlp') ? 'otlp' : 'speedscope';
  else if (isBinary(plain)) format = name.includes('otlp') || name.endsWith('.otlp') ? 'otlp' : 'pprof';
  else format = 'folded';
  const json = (format === 'speedscope' || (format === 'otlp' && head.startsWith('{'))) ? parseJSON(plain, file.name) : undefined;
  const bytes = format === 'pprof' || format === 'jfr' || (format === 'otlp' && !json) ? raw : plain;
  return { format, bytes, json };
}

function isBinary(b: Uint8Array): boolean {
  const n = Math.min(b.length, 65536);
  for (let i = 0; i < n; i++) {
    const c = b[i];
    if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13) || c === 0x7f) return true;
  }
  return false;
}

function parseJSON(b: Uint8Array, name: string): unknown {
  try { return JSON.parse(new TextDecoder().decode(b)); } catch (e) { throw new Error(`"${name}" is not valid JSON: ${(e as Error).message}`); }
}

interface SsFrame { name: string; file?: string; line?: number }
interface SsProfile {
  type: 'sampled' | 'evented'; name?: string; unit?: string; startValue?: number; endValue?: number;
  samples?: number[][]; weights?: number[];
  events?: { type: 'O' | 'C'; frame: number; at: number }[];
}
interface SsFile { shared?: { frames?: SsFrame[] }; profiles?: SsProfile[] }

const UNIT_NS: Record<string, number> = { nanoseconds: 1, microseconds: 1e3, milliseconds: 1e6, seconds: 1e9 };

// speedscope -> folded lines (root first, one line per distinct stack) and the units of the
// values: time units become nanoseconds, "none" samples, "bytes" bytes.
export function speedscopeToFolded(doc: unknown): { text: string; units: string; stacks: number } {
  const f = doc as SsFile;
  const frames = f?.shared?.frames;
  if (!Array.isArray(frames) || !Array.isArray(f.profiles) || !f.profiles.length)
    throw new Error('not a speedscope file: "shared.frames" or "profiles" is missing');
  const names = frames.map((fr) => {
    let n = String(fr?.name ?? '?');
    if (fr?.file) n += ` (${fr.file}${fr.line ? ':' + fr.line : ''})`;
    return n.replace(/[;\r\n]/g, ',');
  });
  const sums = new Map<string, number>();
  let units = 'samples';
  const add = (stack: number[], w: number, scale: number) => {
    if (!(w > 0)) return;
    const key = stack.map((i) => {
      if (!Number.isInteger(i) || i < 0 || i >= names.length) throw new Error(`frame index ${i} is out of range`);
      return names[i];
    }).join(';');
    if (key) sums.set(key, (sums.get(key) ?? 0) + Math.round(w * scale));
  };
  for (const p of f.profiles) {
    const unit = p.unit ?? 'none';
    const scale = UNIT_NS[unit] ?? 1;
    units = unit in UNIT_NS ? 'nanoseconds' : unit === 'bytes' ? 'bytes' : 'samples';
    if (p.type === 'sampled') {
      const s = p.samples ?? [], w = p.weights ?? [];
      if (w.length && w.length !== s.length) throw new Error('speedscope: samples and weights differ in length');
      s.forEach((st, i) => add(st, w.length ? w[i] : 1, scale));
    } else if (p.type === 'evented') {
      const open: number[] = [];
      let last = p.startValue ?? 0;
      for (const ev of p.events ?? []) {
        if (open.length) add(open, ev.at - last, scale);
        last = ev.at;
        if (ev.type === 'O') open.push(ev.frame);
        else if (ev.type === 'C') {
          const k = open.lastIndexOf(ev.frame);
          if (k >= 0) open.splice(k, 1);
        }
      }
    } else {
      throw new Error(`speedscope: unknown profile type "${(p as { type: string }).type}"`);
    }
  }
  let text = '';
  for (const [k, v] of sums) if (v > 0) text += `${k} ${v}\n`;
  return { text, units, stacks: sums.size };
}

// The service name an OTLP JSON document gives its first resource, if any.
export function otlpServiceName(doc: unknown): string | null {
  const rp = (doc as { resourceProfiles?: { resource?: { attributes?: { key: string; value?: { stringValue?: string } }[] } }[] })?.resourceProfiles;
  for (const r of rp ?? []) for (const a of r.resource?.attributes ?? []) if (a.key === 'service.name' && a.value?.stringValue) return a.value.stringValue;
  return null;
}

// APP.TYPE{k="v",...} for /ingest; labels given as "k=v,k2=v2".
export function ingestName(app: string, type: string, labels: string): string {
  const pairs = labels.split(',').map((s) => s.trim()).filter(Boolean).map((kv) => {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new Error(`label "${kv}" is not KEY=VALUE`);
    const k = kv.slice(0, eq).trim(), v = kv.slice(eq + 1).trim();
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(k)) throw new Error(`label name "${k}": use letters, digits, _ and .`);
    return `${k}="${v.replace(/["\\]/g, '\\$&')}"`;
  });
  if (!/^[^\s{},="]+$/.test(app)) throw new Error('the name may not be empty or hold spaces or any of {},="');
  if (!/^[A-Za-z0-9_:-]+$/.test(type)) throw new Error('the type takes letters, digits, _, : and -');
  return `${app}.${type}` + (pairs.length ? `{${pairs.join(',')}}` : '');
}

export interface UploadResult { stacks?: number; samples?: number; series?: number }

// Send d under name; at = the unix second the samples are stored at.
export async function send(d: Detected, name: string, at: number): Promise<UploadResult> {
  const common = { name, from: at, until: at + 1 };
  switch (d.format) {
    case 'pprof': return postBody('/ingest', { ...common, format: 'pprof' }, d.bytes, 'application/octet-stream');
    case 'jfr': return postBody('/ingest', { ...common, format: 'jfr' }, d.bytes, 'application/octet-stream');
    case 'folded': return postBody('/ingest', { ...common, format: 'folded' }, d.bytes, 'text/plain');
    case 'speedscope': {
      const f = speedscopeToFolded(d.json);
      if (!f.stacks) throw new Error('the speedscope file has no samples');
      return postBody('/ingest', { ...common, format: 'folded', units: f.units }, f.text, 'text/plain');
    }
    case 'otlp':
      return postBody('/v1development/profiles', {}, d.bytes, d.json ? 'application/json' : 'application/x-protobuf');
  }
}
