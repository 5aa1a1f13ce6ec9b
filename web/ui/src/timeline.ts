// timeline.ts: CPU usage over time (from /api/v1/series) as an area chart on a canvas, with a
// brush: drag to select a time range. Up to two highlighted ranges are shown (the diff view's
// baseline and comparison).
import type { SeriesResult } from './api';
import { fmtTime } from './format';

export interface Band { from: number; until: number; color: string }

export class Timeline {
  readonly canvas: HTMLCanvasElement;
  private data: SeriesResult | null = null;
  private from = 0;
  private until = 0;
  private bands: Band[] = [];
  private drag: { x0: number; x1: number } | null = null;
  private yLabel: (v: number) => string = (v) => String(v);
  private readonly padL = 64;
  private readonly padR = 12;
  private readonly height = 120;

  constructor(private host: HTMLElement, private onBrush: (from: number, until: number, shift: boolean) => void) {
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'timeline-canvas';
    host.appendChild(this.canvas);
    this.canvas.addEventListener('mousedown', (e) => {
      const x = this.localX(e);
      this.drag = { x0: x, x1: x };
      const up = (ev: MouseEvent) => {
        window.removeEventListener('mousemove', move);
        window.removeEventListener('mouseup', up);
        const d = this.drag;
        this.drag = null;
        if (d && Math.abs(d.x1 - d.x0) >= 3) {
          const a = this.timeAt(Math.min(d.x0, d.x1)), b = this.timeAt(Math.max(d.x0, d.x1));
          this.onBrush(Math.floor(a), Math.ceil(b), ev.shiftKey);
        }
        this.draw();
      };
      const move = (ev: MouseEvent) => { if (this.drag) { this.drag.x1 = this.localX(ev); this.draw(); } };
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
    new ResizeObserver(() => this.draw()).observe(host);
  }

  set(data: SeriesResult | null, from: number, until: number, yLabel: (v: number) => string, bands: Band[] = []): void {
    this.data = data; this.from = from; this.until = until; this.yLabel = yLabel; this.bands = bands;
    this.draw();
  }

  private localX(e: MouseEvent): number {
    const r = this.canvas.getBoundingClientRect();
    return Math.min(Math.max(e.clientX - r.left, this.padL), r.width - this.padR);
  }

  private timeAt(x: number): number {
    const w = this.canvas.clientWidth - this.padL - this.padR;
    return this.from + ((x - this.padL) / Math.max(1, w)) * (this.until - this.from);
  }

  private xOf(t: number, w: number): number {
    return this.padL + ((t - this.from) / Math.max(1, this.until - this.from)) * w;
  }

  draw(): void {
    const cssW = Math.max(200, this.host.clientWidth), cssH = this.height;
    const dpr = window.devicePixelRatio || 1;
    const cv = this.canvas;
    cv.width = Math.round(cssW * dpr); cv.height = Math.round(cssH * dpr);
    cv.style.width = cssW + 'px'; cv.style.height = cssH + 'px';
    const ctx = cv.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    const top = 8, bottom = cssH - 20, w = cssW - this.padL - this.padR;
    ctx.font = '11px system-ui, sans-serif';
    // summed series
    const d = this.data;
    let vals: number[] = [];
    if (d && d.series.length) {
      vals = new Array(d.points).fill(0);
      for (const s of d.series) s.values.forEach((v, i) => { vals[i] += v; });
    }
    const max = Math.max(1e-9, ...vals);
    const nice = niceMax(max);
    // grid and y labels
    ctx.strokeStyle = '#eceef2'; ctx.fillStyle = '#6b7280'; ctx.lineWidth = 1;
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (let g = 0; g <= 4; g++) {
      const y = Math.round(bottom - ((bottom - top) * g) / 4) + 0.5;
      ctx.beginPath(); ctx.moveTo(this.padL, y); ctx.lineTo(cssW - this.padR, y); ctx.stroke();
      ctx.fillText(vals.length ? this.yLabel((nice * g) / 4) : '', this.padL - 6, y);
    }
    // x labels
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    const span = this.until - this.from;
    const ticks = Math.max(2, Math.min(8, Math.floor(w / 110)));
    for (let t = 0; t <= ticks; t++) {
      const tt = this.from + (span * t) / ticks;
      const x = this.xOf(tt, w);
      ctx.fillText(fmtTime(tt, span > 86400 * 2), Math.min(Math.max(x, this.padL + 20), cssW - this.padR - 20), bottom + 5);
    }
    // bands (diff selections)
    for (const b of this.bands) {
      const x0 = this.xOf(b.from, w), x1 = this.xOf(b.until, w);
      ctx.fillStyle = b.color;
      ctx.fillRect(x0, top, Math.max(2, x1 - x0), bottom - top);
    }
    // area
    if (d && vals.length) {
      ctx.beginPath();
      const xs = (i: number) => this.xOf(d.start + (i + 0.5) * d.step, w);
      ctx.moveTo(xs(0), bottom);
      vals.forEach((v, i) => ctx.lineTo(xs(i), bottom - (v / nice) * (bottom - top)));
      ctx.lineTo(xs(vals.length - 1), bottom);
      ctx.closePath();
      ctx.fillStyle = 'rgba(234,108,40,0.22)';
      ctx.fill();
      ctx.beginPath();
      vals.forEach((v, i) => {
        const y = bottom - (v / nice) * (bottom - top);
        if (i === 0) ctx.moveTo(xs(i), y); else ctx.lineTo(xs(i), y);
      });
      ctx.strokeStyle = '#d9581c'; ctx.lineWidth = 1.5; ctx.stroke();
    } else {
      ctx.fillStyle = '#9ca3af'; ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
      ctx.fillText('no samples in this range', this.padL + w / 2, (top + bottom) / 2);
    }
    if (this.drag) {
      ctx.fillStyle = 'rgba(59,130,246,0.18)';
      ctx.fillRect(Math.min(this.drag.x0, this.drag.x1), top, Math.abs(this.drag.x1 - this.drag.x0), bottom - top);
    }
    ctx.strokeStyle = '#d1d5db'; ctx.beginPath();
    ctx.moveTo(this.padL + 0.5, top); ctx.lineTo(this.padL + 0.5, bottom + 0.5); ctx.lineTo(cssW - this.padR, bottom + 0.5); ctx.stroke();
  }
}

function niceMax(v: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
