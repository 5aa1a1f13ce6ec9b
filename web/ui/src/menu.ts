// menu.ts: a small context menu (right-click on a frame or a table row): items with an action,
// closed by a click elsewhere, Escape, scrolling or choosing an item; arrows and Enter work.

export interface MenuItem { label: string; action: () => void; hint?: string }

export class Menu {
  private items: MenuItem[] = [];
  private active = 0;

  constructor(private el: HTMLUListElement) {
    el.addEventListener('mousedown', (e) => e.preventDefault());
    el.addEventListener('click', (e) => {
      const li = (e.target as HTMLElement).closest('li');
      if (li) this.choose(Number(li.dataset.i));
    });
    window.addEventListener('mousedown', (e) => { if (!el.contains(e.target as Node)) this.close(); });
    window.addEventListener('scroll', () => this.close(), true);
    window.addEventListener('blur', () => this.close());
    window.addEventListener('keydown', (e) => {
      if (this.el.hidden) return;
      if (e.key === 'Escape') this.close();
      else if (e.key === 'ArrowDown') { this.active = (this.active + 1) % this.items.length; this.render(); }
      else if (e.key === 'ArrowUp') { this.active = (this.active + this.items.length - 1) % this.items.length; this.render(); }
      else if (e.key === 'Enter') this.choose(this.active);
      else return;
      e.preventDefault();
    });
  }

  get open(): boolean { return !this.el.hidden; }

  show(title: string, items: MenuItem[], x: number, y: number): void {
    this.items = items;
    this.active = 0;
    this.el.dataset.title = title;
    this.render();
    this.el.hidden = false;
    const w = this.el.offsetWidth, h = this.el.offsetHeight;
    this.el.style.left = Math.max(4, Math.min(x, window.innerWidth - w - 4)) + 'px';
    this.el.style.top = Math.max(4, Math.min(y, window.innerHeight - h - 4)) + 'px';
  }

  close(): void { this.el.hidden = true; }

  private choose(i: number): void {
    const it = this.items[i];
    this.close();
    it?.action();
  }

  private render(): void {
    const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
    this.el.innerHTML = `<li class="menu-title">${esc(this.el.dataset.title ?? '')}</li>` +
      this.items.map((it, i) => `<li data-i="${i}" class="${i === this.active ? 'active' : ''}">${esc(it.label)}${it.hint ? `<span class="hint">${esc(it.hint)}</span>` : ''}</li>`).join('');
  }
}
