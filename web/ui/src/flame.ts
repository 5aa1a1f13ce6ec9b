// flame.ts: the flame graph on a canvas (an icicle: root on top, or inverted for the callers
// half of the sandwich view). Reads the flamebearer format of /render, /render-diff and
// /api/v1/sandwich (4 ints per node, or 7 for a diff), zooms on click (asking the server for
// the subtree of a node when the data at hand was pruned below it), highlights a search or one
// function, offers a context menu, shows a tooltip, and merges nodes narrower than a pixel
// into grey runs so that profiles with hundreds of thousands of nodes draw quickly.
import type { Flamebearer } from './api';
import { escapeHtml, fmtPercent, fmtValue, type UnitContext } from './format';

const ROW = 18;
const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';

export type Kind = 'root' | 'native' | 'kernel' | 'python' | 'special';

export function frameKind(name: string, level: number): Kind {
  if (level === 0) return 'root';
  if (name.endsWith('_[k]')) return 'kernel';
  if (/\.py:\d+\)$/.test(name) || /\.py\)$/.test(name)) return 'python';
  if (name === 'other' || name.startsWith('[') || /\+0x[0-9a-f]+$/.test(name)) return 'special';
  return 'native';
}

export const KIND_COLORS: Record<Kind, string> = {
  root: 'hsl(220,10%,80%)', native: 'hsl(24,80%,62%)', kernel: 'hsl(205,58%,62%)',
  python: 'hsl(108,45%,56%)', special: 'hsl(0,0%,74%)',
};
export const KIND_LABELS: Record<Kind, string> = {
  root: 'total', native: 'native', kernel: 'kernel', python: 'Python', special: 'unknown / other',
};

function hash01(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return ((h >>> 0) % 1000) / 1000;
}

function kindColor(kind: Kind, name: string): string {
  const v = hash01(name);
  switch (kind) {
    case 'root': return KIND_COLORS.root;
    case 'kernel': return `hsl(${195 + 22 * v},58%,${58 + 10 * v}%)`;
    case 'python': return `hsl(${95 + 35 * v},45%,${52 + 10 * v}%)`;
    case 'special': return `hsl(0,0%,${70 + 8 * v}%)`;
    default: return `hsl(${12 + 32 * v},80%,${58 + 8 * v}%)`;
  }
}

// Diff colors: blue = smaller share, orange/red = larger share (distinguishable with the common
// forms of color blindness, unlike red/green). t in [-1, 1].
export function diffColor(t: number): string {
  const a = Math.min(1, Math.abs(t));
  if (a < 0.02) return 'hsl(220,8%,84%)';
  return t < 0
    ? `hsl(212,${45 + 30 * a}%,${84 - 36 * a}%)`
    : `hsl(${28 - 16 * a},${70 + 20 * a}%,${82 - 34 * a}%)`;
}

export interface RenderedNode {
  name: string; level: number; x: number; y: number; w: number;
  total: number; self: number; match: boolean;
  pruned: boolean; // the server left frames below it out that a zoom on it would show (and loads)
  change?: number; // diff: comparison share minus baseline share of the total, in [-1, 1]
}

export interface FrameRef { name: string; path: string[]; total: number; self: number }

// A subtree from the server: the data of /render?focus=PATH (its root chain is the path).
export interface Subtree { fb: Flamebearer; selectionTotal: number; leftSelection?: number; rightSelection?: number }

export interface FlameOptions {
  inverted?: boolean;
  units: () => UnitContext;
  onFocus?: (path: string[] | null) => void;
  onContext?: (frame: FrameRef, x: number, y: number) => void;
  // the subtree of a node whose data was pruned; without it zooming stays local
  fetchSubtree?: (path: string[]) => Promise<Subtree>;
  onError?: (msg: string) => void;
  tooltip: HTMLElement;
  hint?: string;
}

interface Data {
  fb: Flamebearer;
  diff: boolean;
  depth: number; // levels of the path this data is rooted at (0 for the whole selection)
  selectionTotal: number;
  leftSelection: number; rightSelection: number;
}

export class FlameGraph {
  readonly canvas: HTMLCanvasElement;
  private base: Data | null = null; // the whole selection
  private data: Data | null = null; // what is drawn (base, or a subtree of it)
  // one entry per node, in level order then by x
  private nx = new Float64Array(0);
  private nw = new Float64Array(0);
  private nself = new Float64Array(0);
  private nname = new Int32Array(0);
  private nlevel = new Int32Array(0);
  private nparent = new Int32Array(0);
  private otherMax = new Float64Array(0); // the heaviest truncation "other" below a node (0: none)
  private tl = new Float64Array(0); // diff: left total, left self, right total, right self
  private sl = new Float64Array(0);
  private tr = new Float64Array(0);
  private sr = new Float64Array(0);
  private levelStart: number[] = [];
  private focus = 0;
  private search = '';
  private highlight = '';
  private matchName = new Uint8Array(0);
  private rows: RenderedNode[][] = [];
  private nodeOfRect: number[][] = [];
  private cache = new Map<string, Subtree>();
  private zoomSeq = 0;
  rendered: RenderedNode[] = [];
  matchedTicks = 0;
  lastDrawMs = 0;
  loading = false;
  private hover = -1;

  constructor(private host: HTMLElement, private opts: FlameOptions) {
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'flame-canvas';
    host.appendChild(this.canvas);
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => this.hideTip());
    this.canvas.addEventListener('click', (e) => void this.onClick(e));
    this.canvas.addEventListener('contextmenu', (e) => this.onContextMenu(e));
    new ResizeObserver(() => this.draw()).observe(host);
  }

  get total(): number { return this.nw.length ? this.nw[0] : 0; }
  // the total of the whole selection, whatever subtree is drawn
  get selectionTotal(): number { return this.data ? this.data.selectionTotal : 0; }
  get isDiff(): boolean { return !!this.data?.diff; }
  get leftTicks(): number { return this.data?.fb.leftTicks ?? 0; }
  get rightTicks(): number { return this.data?.fb.rightTicks ?? 0; }
  get leftSelection(): number { return this.data?.leftSelection ?? 0; }
  get rightSelection(): number { return this.data?.rightSelection ?? 0; }
  // the frames of the zoomed node from the root ([] when not zoomed)
  get zoomPath(): string[] { return this.pathOf(this.focus); }
  // the data drawn is a subtree fetched from the server (not the first render)
  get isSubtree(): boolean { return !!this.data && this.data.depth > 0; }
  // the frame names of the data drawn
  get names(): string[] { return this.data?.fb.names ?? []; }

  setData(fb: Flamebearer | null, diff = false): void {
    this.cache.clear();
    this.zoomSeq++;
    this.base = fb ? {
      fb, diff, depth: 0, selectionTotal: diff ? (fb.leftTicks ?? 0) + (fb.rightTicks ?? 0) : fb.numTicks,
      leftSelection: fb.leftTicks ?? 0, rightSelection: fb.rightTicks ?? 0,
    } : null;
    this.use(this.base, 0);
  }

  private use(d: Data | null, focus: number): void {
    this.data = d;
    this.decode();
    this.focus = focus < this.nx.length ? focus : 0;
    this.computeMatches();
    this.draw();
  }

  setSearch(s: string): void {
    this.search = s;
    this.computeMatches();
    this.draw();
  }

  // Outline the frames named exactly `name` (the function picked in the table).
  setHighlight(name: string): void {
    this.highlight = name;
    this.draw();
  }

  reset(): void { void this.zoomTo([]); }

  // Zoom to the node at `path` (frame names below the root): locally when the data at hand
  // holds its whole subtree, else from the server. Resolves false when no such node exists.
  async zoomTo(path: string[], notify = true): Promise<boolean> {
    const seq = ++this.zoomSeq;
    if (!this.base) return false;
    const done = (i: number) => {
      this.focus = i;
      this.draw();
      if (notify) this.opts.onFocus?.(path.length ? path : null);
      return true;
    };
    if (path.length === 0) {
      if (this.data !== this.base) this.use(this.base, 0);
      return done(0);
    }
    // the data drawn, then the first render, when either holds all the node shows
    // (a subtree from the server holds only the path down to its root: not its ancestors)
    let i = this.data && path.length >= this.data.depth ? this.find(path) : -1;
    if (i >= 0 && (!this.needsMore(i) || !this.opts.fetchSubtree)) return done(i);
    if (this.data !== this.base) {
      this.use(this.base, 0);
      i = this.find(path);
      if (i >= 0 && (!this.needsMore(i) || !this.opts.fetchSubtree)) return done(i);
    }
    if (!this.opts.fetchSubtree) return false;
    const key = path.join('\u0000');
    let sub = this.cache.get(key);
    if (!sub) {
      this.loading = true;
      this.canvas.classList.add('loading');
      try {
        sub = await this.opts.fetchSubtree(path);
      } catch (e) {
        this.opts.onError?.((e as Error).message);
        return false;
      } finally {
        this.loading = false;
        this.canvas.classList.remove('loading');
      }
      if (this.cache.size > 32) this.cache.clear();
      this.cache.set(key, sub);
    }
    if (seq !== this.zoomSeq) return false; // another zoom or new data meanwhile
    this.use({
      fb: sub.fb, diff: this.base.diff, depth: path.length, selectionTotal: sub.selectionTotal,
      leftSelection: sub.leftSelection ?? 0, rightSelection: sub.rightSelection ?? 0,
    }, 0);
    i = this.find(path);
    if (i < 0) {
      this.use(this.base, 0);
      return false;
    }
    return done(i);
  }

  // Would zooming on node i show something the server left out? Only if a frame it summed
  // into an "other" below i would be at least a pixel wide with i filling the width (frames
  // further down are loaded when one zooms closer).
  private needsMore(i: number): boolean {
    const w = Math.max(100, this.host.clientWidth);
    return this.otherMax[i] > 0 && this.otherMax[i] * w >= this.nw[i];
  }

  private find(path: string[]): number {
    const fb = this.data?.fb;
    if (!fb) return -1;
    let node = 0;
    for (let level = 1; level <= path.length; level++) {
      if (level >= this.levelStart.length - 1) return -1;
      let found = -1;
      for (let c = this.levelStart[level]; c < this.levelStart[level + 1]; c++) {
        if (this.nparent[c] === node && fb.names[this.nname[c]] === path[level - 1]) { found = c; break; }
        if (this.nx[c] >= this.nx[node] + this.nw[node]) break;
      }
      if (found < 0) return -1;
      node = found;
    }
    return node;
  }

  private pathOf(i: number): string[] {
    const fb = this.data?.fb;
    const out: string[] = [];
    if (!fb) return out;
    for (let n = i; n > 0; n = this.nparent[n]) out.push(fb.names[this.nname[n]]);
    return out.reverse();
  }

  private decode(): void {
    const fb = this.data?.fb;
    const diff = !!this.data?.diff;
    let n = 0;
    const stride = diff ? 7 : 4;
    if (fb) for (const l of fb.levels) n += Math.floor(l.length / stride);
    this.nx = new Float64Array(n); this.nw = new Float64Array(n); this.nself = new Float64Array(n);
    this.nname = new Int32Array(n); this.nlevel = new Int32Array(n); this.nparent = new Int32Array(n);
    this.otherMax = new Float64Array(n);
    if (diff) {
      this.tl = new Float64Array(n); this.sl = new Float64Array(n);
      this.tr = new Float64Array(n); this.sr = new Float64Array(n);
    }
    this.levelStart = [];
    if (!fb) return;
    let k = 0;
    fb.levels.forEach((row, level) => {
      this.levelStart.push(k);
      let xl = 0, xr = 0;
      for (let i = 0; i + stride <= row.length; i += stride, k++) {
        if (diff) {
          xl += row[i]; xr += row[i + 3];
          this.nx[k] = xl + xr;
          this.tl[k] = row[i + 1]; this.sl[k] = row[i + 2];
          this.tr[k] = row[i + 4]; this.sr[k] = row[i + 5];
          this.nw[k] = row[i + 1] + row[i + 4];
          this.nself[k] = row[i + 2] + row[i + 5];
          this.nname[k] = row[i + 6];
          xl += row[i + 1]; xr += row[i + 4];
        } else {
          xl += row[i];
          this.nx[k] = xl; this.nw[k] = row[i + 1]; this.nself[k] = row[i + 2]; this.nname[k] = row[i + 3];
          xl += row[i + 1];
        }
        this.nlevel[k] = level;
      }
    });
    this.levelStart.push(k);
    // parents: the node of the row above whose span holds the child's start
    for (let level = 1; level < fb.levels.length; level++) {
      let p = this.levelStart[level - 1];
      const pend = this.levelStart[level];
      for (let c = this.levelStart[level]; c < this.levelStart[level + 1]; c++) {
        while (p + 1 < pend && this.nx[p + 1] <= this.nx[c]) p++;
        this.nparent[c] = p;
      }
    }
    if (n) this.nparent[0] = -1;
    // the heaviest "other" (what the server left out) anywhere below each node; children
    // come after their parents, so one backwards pass carries it up
    const other = fb.names.indexOf('other');
    if (other >= 0) {
      for (let i = n - 1; i > 0; i--) {
        const o = this.nname[i] === other ? this.nw[i] : this.otherMax[i];
        if (o > this.otherMax[this.nparent[i]]) this.otherMax[this.nparent[i]] = o;
      }
    }
  }

  private computeMatches(): void {
    const names = this.data?.fb.names ?? [];
    this.matchName = new Uint8Array(names.length);
    const s = this.search.trim().toLowerCase();
    this.matchedTicks = 0;
    if (!s) return;
    names.forEach((nm, i) => { if (nm.toLowerCase().includes(s)) this.matchName[i] = 1; });
    // the share of the root covered by matching frames, counting nested matches once
    const covered = new Uint8Array(this.nx.length);
    for (let i = 1; i < this.nx.length; i++) {
      const m = this.matchName[this.nname[i]];
      const pc = covered[this.nparent[i]];
      if (m && !pc) this.matchedTicks += this.nw[i];
      covered[i] = m | pc;
    }
  }

  private isAncestorOrSelf(a: number, b: number): boolean {
    for (let i = b; i >= 0; i = this.nparent[i]) if (i === a) return true;
    return false;
  }

  draw(): void {
    const t0 = performance.now();
    const cssW = Math.max(100, this.host.clientWidth);
    const levels = this.levelStart.length ? this.levelStart.length - 1 : 0;
    const cssH = Math.max(1, levels) * ROW;
    const dpr = window.devicePixelRatio || 1;
    const cv = this.canvas;
    if (cv.width !== Math.round(cssW * dpr) || cv.height !== Math.round(cssH * dpr)) {
      cv.width = Math.round(cssW * dpr); cv.height = Math.round(cssH * dpr);
      cv.style.width = cssW + 'px'; cv.style.height = cssH + 'px';
    }
    const ctx = cv.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    this.rows = []; this.nodeOfRect = []; this.rendered = [];
    const fb = this.data?.fb;
    if (!fb || !this.nx.length) {
      cv.dataset.nodes = '0';
      return;
    }
    const diff = !!this.data?.diff;
    const f = this.focus;
    const zx = this.nx[f], zw = this.nw[f] || 1;
    const scale = cssW / zw;
    const searching = this.search.trim() !== '';
    const hl = this.highlight;
    const charW = ctx.measureText('m').width;
    let maxAbs = 0;
    // changes of share are of the whole selections, also when a subtree is drawn
    const L = this.leftSelection || this.leftTicks || 1, R = this.rightSelection || this.rightTicks || 1;
    if (diff) for (let i = 0; i < this.nx.length; i++) maxAbs = Math.max(maxAbs, Math.abs(this.tr[i] / R - this.tl[i] / L));
    for (let level = 0; level < levels; level++) {
      const y = (this.opts.inverted ? levels - 1 - level : level) * ROW;
      const row: RenderedNode[] = [], idx: number[] = [];
      let runX = -1, runEnd = -1;
      const flushRun = () => {
        if (runX >= 0 && runEnd - runX >= 0.5) {
          ctx.fillStyle = searching ? '#e6e6e6' : '#c9ccd1';
          ctx.fillRect(runX, y + 1, Math.max(0.5, runEnd - runX), ROW - 2);
        }
        runX = -1;
      };
      const start = this.levelStart[level], end = this.levelStart[level + 1];
      // binary search the first node ending after zx
      let lo = start, hi = end;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.nx[mid] + this.nw[mid] <= zx) lo = mid + 1; else hi = mid;
      }
      for (let i = lo; i < end && this.nx[i] < zx + zw; i++) {
        if (level <= this.nlevel[f] ? !this.isAncestorOrSelf(i, f) : this.nx[i] + this.nw[i] <= zx) continue;
        const onPath = level <= this.nlevel[f];
        const px = onPath ? 0 : (this.nx[i] - zx) * scale;
        const pw = onPath ? cssW : this.nw[i] * scale;
        if (pw < 1) {
          if (runX >= 0 && px <= runEnd + 1) runEnd = Math.max(runEnd, px + pw);
          else { flushRun(); runX = px; runEnd = px + pw; }
          continue;
        }
        flushRun();
        const name = fb.names[this.nname[i]] ?? '?';
        const match = searching && this.matchName[this.nname[i]] === 1;
        let color: string;
        let d = 0;
        if (diff) {
          d = this.tr[i] / R - this.tl[i] / L;
          color = diffColor(maxAbs > 0 ? d / maxAbs : 0);
          if (this.tl[i] === 0 && this.tr[i] > 0) color = diffColor(1);
          if (this.tr[i] === 0 && this.tl[i] > 0) color = diffColor(-1);
        } else {
          color = kindColor(frameKind(name, level), name);
        }
        if (searching && !match) color = '#ebecef';
        ctx.fillStyle = color;
        const gap = pw > 3 ? 1 : 0;
        ctx.fillRect(px, y + 1, pw - gap, ROW - 2);
        if (match || (hl && name === hl)) {
          ctx.strokeStyle = match ? '#7a1fa2' : '#111827';
          ctx.lineWidth = match ? 1.5 : 2;
          ctx.strokeRect(px + 0.75, y + 1.75, Math.max(0, pw - gap - 1.5), ROW - 3.5);
        }
        if (pw > 24) {
          const maxChars = Math.floor((pw - 8) / charW);
          if (maxChars >= 3) {
            const label = name.length > maxChars ? name.slice(0, maxChars - 1) + '…' : name;
            ctx.fillStyle = searching && !match ? '#9a9ea6' : '#1d2330';
            ctx.fillText(label, px + 4, y + ROW / 2 + 0.5);
          }
        }
        const r: RenderedNode = { name, level, x: px, y, w: pw, total: this.nw[i], self: this.nself[i], match, pruned: this.needsMore(i) };
        if (diff) r.change = d;
        row.push(r); idx.push(i); this.rendered.push(r);
      }
      flushRun();
      this.rows.push(row); this.nodeOfRect.push(idx);
    }
    cv.dataset.nodes = String(this.rendered.length);
    this.lastDrawMs = performance.now() - t0;
  }

  private hit(e: MouseEvent): number {
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left, y = e.clientY - rect.top;
    let level = Math.floor(y / ROW);
    if (this.opts.inverted) level = this.rows.length - 1 - level;
    const row = this.rows[level];
    if (!row) return -1;
    for (let j = 0; j < row.length; j++) if (x >= row[j].x && x < row[j].x + row[j].w) return this.nodeOfRect[level][j];
    return -1;
  }

  private async onClick(e: MouseEvent): Promise<void> {
    const i = this.hit(e);
    if (i < 0 || this.loading) return;
    // clicking the zoomed frame zooms out one level; anything else zooms to it
    const target = i === this.focus ? Math.max(0, this.nparent[i]) : i;
    await this.zoomTo(this.pathOf(target));
  }

  private onContextMenu(e: MouseEvent): void {
    if (!this.opts.onContext) return;
    const i = this.hit(e);
    if (i < 0 || !this.data) return;
    e.preventDefault();
    this.hideTip();
    this.opts.onContext({ name: this.data.fb.names[this.nname[i]], path: this.pathOf(i), total: this.nw[i], self: this.nself[i] }, e.clientX, e.clientY);
  }

  private hideTip(): void {
    this.hover = -1;
    this.opts.tooltip.style.display = 'none';
    this.canvas.style.cursor = '';
  }

  private onMove(e: MouseEvent): void {
    const i = this.hit(e);
    if (i < 0 || !this.data) { this.hideTip(); return; }
    this.canvas.style.cursor = 'pointer';
    const tip = this.opts.tooltip;
    if (i !== this.hover) {
      this.hover = i;
      const name = this.data.fb.names[this.nname[i]];
      const u = this.opts.units();
      const kind = frameKind(name, this.nlevel[i]);
      let html = `<div class="tip-name">${escapeHtml(name)}</div><table>`;
      if (this.data.diff) {
        const L = this.leftSelection || this.leftTicks, R = this.rightSelection || this.rightTicks;
        const dl = this.tl[i] / (L || 1), dr = this.tr[i] / (R || 1);
        const ch = (dr - dl) * 100;
        html += `<tr><th></th><th>baseline</th><th>comparison</th></tr>` +
          `<tr><td>total</td><td>${fmtValue(this.tl[i], u)} (${fmtPercent(this.tl[i], L)})</td><td>${fmtValue(this.tr[i], u)} (${fmtPercent(this.tr[i], R)})</td></tr>` +
          `<tr><td>self</td><td>${fmtValue(this.sl[i], u)} (${fmtPercent(this.sl[i], L)})</td><td>${fmtValue(this.sr[i], u)} (${fmtPercent(this.sr[i], R)})</td></tr>` +
          `<tr><td>change</td><td colspan="2" class="${ch > 0 ? 'up' : ch < 0 ? 'down' : ''}">${ch > 0 ? '+' : ''}${ch.toFixed(2)} points of the total</td></tr>`;
      } else {
        const T = this.selectionTotal || this.total;
        html += `<tr><td>total</td><td>${fmtValue(this.nw[i], u)}</td><td>${fmtPercent(this.nw[i], T)}</td></tr>` +
          `<tr><td>self</td><td>${fmtValue(this.nself[i], u)}</td><td>${fmtPercent(this.nself[i], T)}</td></tr>`;
        if (u.unit !== 'samples') html += `<tr><td>samples</td><td colspan="2">${this.nw[i]} total, ${this.nself[i]} self</td></tr>`;
        html += `<tr><td>kind</td><td colspan="2">${KIND_LABELS[kind]}</td></tr>`;
      }
      const more = this.needsMore(i) && this.opts.fetchSubtree ? ' (loads the frames below it)' : '';
      tip.innerHTML = html + `</table><div class="tip-hint">${this.opts.hint ?? 'click to zoom' + more + '; right-click for more'}</div>`;
      tip.style.display = 'block';
    }
    const pad = 14, w = tip.offsetWidth, h = tip.offsetHeight;
    let left = e.clientX + pad, top = e.clientY + pad;
    if (left + w > window.innerWidth - 4) left = Math.max(4, e.clientX - w - pad);
    if (top + h > window.innerHeight - 4) top = Math.max(4, e.clientY - h - pad);
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }
}
