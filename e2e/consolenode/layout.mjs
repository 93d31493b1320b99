// Layout checks of the console's pages, run in the page: nothing wider
// than the window, nothing cut off at its edges, table headers over their
// columns.
import { must } from './browser.mjs';

// overflow lists what on the page passes the window's edges, outside any
// box that scrolls or clips it sideways (a table's, a tab strip's), and
// the page's own scroll width.
export async function overflow(page) {
  return page.evaluate(() => {
    const W = document.documentElement.clientWidth;
    // contained: a box that scrolls or clips sideways holds el. An
    // absolutely placed element escapes the boxes between it and its
    // containing block (a screen reader's label in a table can widen the
    // page), a fixed one all of them.
    const contained = (el) => {
      let mode = getComputedStyle(el).position;
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        if (mode === 'fixed') return false;
        const cs = getComputedStyle(p);
        const positioned = cs.position !== 'static' || cs.transform !== 'none';
        if (mode === 'absolute' && !positioned) continue;
        if (['auto', 'scroll', 'hidden', 'clip'].includes(cs.overflowX)) return true;
        mode = cs.position;
      }
      return false;
    };
    const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
    const out = [];
    for (const el of document.querySelectorAll('header *, main *, dialog[open] *')) {
      const b = el.getBoundingClientRect();
      if (!b.width || !b.height || getComputedStyle(el).visibility === 'hidden') continue;
      if ((b.right > W + 0.5 || b.left < -0.5) && !contained(el)) {
        out.push(`${name(el)} "${(el.textContent || '').trim().slice(0, 30)}" at ${Math.round(b.left)}..${Math.round(b.right)}`);
      }
    }
    return { scrollWidth: document.documentElement.scrollWidth, width: W, out };
  });
}

// fits fails unless the page at this width has no sideways scroll and
// nothing cut off.
export async function fits(page, what) {
  const r = await overflow(page);
  must(r.scrollWidth <= r.width && r.out.length === 0,
    `${what} at ${r.width} px: page ${r.scrollWidth} px wide; past the edges:\n  ${r.out.slice(0, 8).join('\n  ')}`);
}

// columnsAligned fails unless every table's header cells stand over the
// cells of its first row, right above it, and its caption spans the table
// above the header (a caption that stops being one becomes a cell of the
// first column, below the header, and widens that column).
export async function columnsAligned(page, what) {
  const off = await page.evaluate(() => {
    const out = [];
    const r = (b) => `${Math.round(b.left)}..${Math.round(b.right)} x ${Math.round(b.top)}..${Math.round(b.bottom)}`;
    for (const t of document.querySelectorAll('main table')) {
      const head = t.tHead?.rows[0];
      const row = [...(t.tBodies[0]?.rows || [])].find((r) => r.cells.length === head?.cells.length);
      if (!head || !row) continue;
      const tb = t.getBoundingClientRect();
      const hb = head.getBoundingClientRect();
      const rb = t.tBodies[0].rows[0].getBoundingClientRect();
      if (t.caption) {
        const cb = t.caption.getBoundingClientRect();
        if (Math.abs(cb.left - tb.left) > 1 || Math.abs(cb.right - tb.right) > 1 || cb.bottom > hb.top + 1) {
          out.push(`caption "${t.caption.textContent.trim().slice(0, 30)}" at ${r(cb)}, not across the top of the table at ${r(tb)} above its header at ${r(hb)}`);
        }
      }
      if (Math.abs(rb.top - hb.bottom) > 1) out.push(`header row at ${r(hb)} is not right above the first row at ${r(rb)}`);
      [...head.cells].forEach((th, i) => {
        const a = th.getBoundingClientRect();
        const b = row.cells[i].getBoundingClientRect();
        if (Math.abs(a.left - b.left) > 1 || Math.abs(a.right - b.right) > 1) {
          out.push(`"${th.textContent.trim() || i}" ${Math.round(a.left)}..${Math.round(a.right)} over ${Math.round(b.left)}..${Math.round(b.right)}`);
        }
      });
    }
    return out;
  });
  must(off.length === 0, `${what}: tables out of line: ${off.join("; ")}`);
}
