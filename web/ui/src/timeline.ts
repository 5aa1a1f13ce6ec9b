// timeline.ts: usage over time (from /api/v1/series) on a canvas: one area for the whole
// selection, or one line per value of a label (group by), with a brush (drag to select a time
// range) and up to two highlighted ranges (the diff view's baseline and comparison).
//
// Buckets are aligned to the step, so the first and the last usually stick out of the range:
// rates (cores, % of machine, samples per step) are computed over the part of each bucket that
// lies in the range, and the buckets at the end of a range that reaches the present, where the
// agents have not pushed yet, are not drawn rather than drawn as a drop to zero.
import type { SeriesResult } from './api';
import { escapeHtml, timeTicks, valueAxis, type ValueAxis } from './format';

export interface Band { from: number; until: number; color: string }

// values are converted by the caller: per bucket, what to plot (already a rate)
export interface Line { name: string; values: (number | null)[]; color: string; total: number }

export const GROUP_COLORS = ['#d9581c', '#2166ac', '#1b9e77', '#7570b3', '#e7298a', '#66a61e', '#a6761d', '#e6ab02', '#1f78b4', '#666666'];

export interface TimelineData {
  start: number; step: number; points: number;
  lines: Line[];
  kind: 'samples' | 'cores' | 'percent';
}

// How much of bucket i of a series lies in [from, until) (1 = all of it).
export function coverage(s: SeriesResult, i: number, from: number, until: number): number {
  const b0 = s.start + i * s.step, b1 = b0 + s.step;
  const c = Math.min(b1, until) - Math.max(b0, from);
  return Math.max(0, Math.min(1, c / s.step));
}

// The index after the last bucket to draw: trailing empty buckets less than `lag` seconds old
// are data not pushed yet.
export function lastDrawn(s: SeriesResult, now: number, lag: number): number {
  let n = s.points;
  const empty = (i: number) => s.series.every((g) => !g.values[i]);
  while (n > 0 && empty(n - 1) && s.start + (n - 1) * s.step > now - lag) n--;
  return n;
}

export class Timeline {
  readonly canvas: HTMLCanvasElement;
  private data: TimelineData | null = null;
  private from = 0;
  private until = 0;
  private bands: Band[] = [];
  private drag: { x0: number; x1: number } | null = null;
  axis: ValueAxis | null = null;
  private readonly padL = 64;
  private readonly padR = 12;
  private readonly height = 130;

  constructor(private host: HTMLElement, private legend: HTMLElement, private onBrush: (from: number, until: number, shift: boolean) => void) {
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
          this.onBrush(Math.floor(a), Math.max(Math.floor(a) + 1, Math.ceil(b)), ev.shiftKey);
        }
        this.draw();
      };
      const move = (ev: MouseEvent) => { if (this.drag) { this.drag.x1 = this.localX(ev); this.draw(); } };
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
    new ResizeObserver(() => this.draw()).observe(host);
  }

  set(data: TimelineData | null, from: number, until: number, bands: Band[] = []): void {
    this.data = data; this.from = from; this.until = until; this.bands = bands;
    this.draw();
    this.drawLegend();
  }

  private drawLegend(): void {
    const d = this.data;
    if (!d || d.lines.length < 2) { this.legend.innerHTML = ''; return; }
    this.legend.innerHTML = d.lines.map((l) => `<span class="chip"><i style="background:${l.color}"></i>${escapeHtml(l.name || '(none)')}</span>`).join('');
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
    return this.padL + ((t - this.from) / Math.max(1e-9, this.until - this.from)) * w;
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
    const top = 8, bottom = cssH - 22, w = cssW - this.padL - this.padR;
    ctx.font = '11px system-ui, sans-serif';
    const d = this.data;
    let max = 0;
    if (d) for (const l of d.lines) for (const v of l.values) if (v !== null && v > max) max = v;
    const has = !!d && d.lines.some((l) => l.values.some((v) => v !== null && v > 0));
    const axis = valueAxis(max, d?.kind ?? 'samples');
    this.axis = axis;
    // grid and value labels: one unit and format on every label
    ctx.strokeStyle = '#eceef2'; ctx.fillStyle = '#6b7280'; ctx.lineWidth = 1;
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    axis.ticks.forEach((v) => {
      const y = Math.round(bottom - ((bottom - top) * v) / axis.max) + 0.5;
      ctx.beginPath(); ctx.moveTo(this.padL, y); ctx.lineTo(cssW - this.padR, y); ctx.stroke();
      if (has) ctx.fillText(axis.fmt(v), this.padL - 6, y);
    });
    // time labels: round times, each once
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    const ticks = timeTicks(this.from, this.until, w);
    this.canvas.dataset.ticks = ticks.map((t) => t.label).join('|');
    for (const t of ticks) {
      const x = this.xOf(t.t, w);
      ctx.strokeStyle = '#d1d5db';
      ctx.beginPath(); ctx.moveTo(Math.round(x) + 0.5, bottom); ctx.lineTo(Math.round(x) + 0.5, bottom + 4); ctx.stroke();
      const tw = ctx.measureText(t.label).width;
      ctx.fillText(t.label, Math.min(Math.max(x, this.padL + tw / 2), cssW - this.padR - tw / 2), bottom + 6);
    }
    // bands (diff selections)
    for (const b of this.bands) {
      const x0 = this.xOf(b.from, w), x1 = this.xOf(b.until, w);
      ctx.fillStyle = b.color;
      ctx.fillRect(x0, top, Math.max(2, x1 - x0), bottom - top);
    }
    if (d && has) {
      const xs = (i: number) => {
        // the middle of the part of the bucket inside the range
        const b0 = Math.max(d.start + i * d.step, this.from), b1 = Math.min(d.start + (i + 1) * d.step, this.until);
        return this.xOf((b0 + b1) / 2, w);
      };
      const yOf = (v: number) => bottom - (v / axis.max) * (bottom - top);
      ctx.save();
      ctx.beginPath(); ctx.rect(this.padL, top - 2, w, bottom - top + 4); ctx.clip();
      d.lines.forEach((l, li) => {
        // segments of consecutive drawn points
        let seg: number[] = [];
        const flush = () => {
          if (!seg.length) return;
          if (d.lines.length === 1) {
            ctx.beginPath();
            ctx.moveTo(xs(seg[0]), bottom);
            for (const i of seg) ctx.lineTo(xs(i), yOf(l.values[i]!));
            ctx.lineTo(xs(seg[seg.length - 1]), bottom);
            ctx.closePath();
            ctx.fillStyle = 'rgba(234,108,40,0.22)';
            ctx.fill();
          }
          ctx.beginPath();
          seg.forEach((i, k) => { if (k === 0) ctx.moveTo(xs(i), yOf(l.values[i]!)); else ctx.lineTo(xs(i), yOf(l.values[i]!)); });
          if (seg.length === 1) ctx.lineTo(xs(seg[0]) + 1, yOf(l.values[seg[0]]!));
          ctx.strokeStyle = l.color; ctx.lineWidth = d.lines.length === 1 ? 1.5 : 1.3;
          ctx.stroke();
          seg = [];
        };
        l.values.forEach((v, i) => { if (v === null) flush(); else seg.push(i); });
        flush();
        void li;
      });
      ctx.restore();
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
