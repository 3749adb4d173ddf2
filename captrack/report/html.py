"""Static, self-contained HTML for leaderboards: inline CSS/JS, no CDN, safe for untrusted text.

Every piece of data goes through ``esc`` (html.escape with quotes); scripts only read
``textContent`` and ``data-*`` attributes, so model outputs can never execute.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["esc", "page", "table"]

CSS = """
:root { --fg:#1d2433; --muted:#5b6475; --line:#d9dee7; --bg:#ffffff; --head:#f3f5f9; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1200px; padding: 16px; }
h1 { font-size: 1.5rem; margin: .2rem 0 .6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
p.note, .muted { color: var(--muted); }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; border: 1px solid var(--line); border-radius: 6px; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--head); position: sticky; top: 0; cursor: pointer; white-space: nowrap; }
th[aria-sort="ascending"]::after { content: " \\25B2"; } th[aria-sort="descending"]::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.pos { color: #1a5e9a; } td.neg { color: #b3261e; }
td.v-regressed { color: #b3261e; font-weight: 600; } td.v-improved { color: #1a5e9a; font-weight: 600; }
td.v-equivalent { color: #2e6b3a; } td.v-inconclusive { color: var(--muted); font-style: italic; }
pre.text { white-space: pre-wrap; word-break: break-word; margin: 0; max-height: 18rem; overflow: auto;
           font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; background: #fafbfc; padding: 4px; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
body.wide { max-width: 1400px; }
.scroll th:first-child, .scroll td:first-child { position: sticky; left: 0; z-index: 1; background: var(--bg);
                                               box-shadow: inset -1px 0 0 var(--line); }
.scroll th:first-child { z-index: 3; background: var(--head); }
table.drill { width: auto; min-width: 100%; }
table.drill .key { width: 4.5rem; min-width: 4.5rem; max-width: 4.5rem; }
table.drill .key2 { position: sticky; left: 4.5rem; z-index: 1; background: var(--bg); width: 9rem; min-width: 9rem;
                    max-width: 9rem; overflow-wrap: anywhere; box-shadow: inset -1px 0 0 var(--line); }
table.drill th.key2 { z-index: 3; background: var(--head); }
table.drill .change { min-width: 7.5rem; }
table.drill .question { width: 30rem; min-width: 26rem; }
table.drill .gold { min-width: 9rem; max-width: 18rem; }
table.drill .response { width: 26rem; min-width: 22rem; }
table.drill pre.text { max-height: 14rem; }
details.preamble summary { cursor: pointer; color: var(--muted); font-size: .8rem; margin-top: 4px; }
.extracted { font-size: .85rem; margin-bottom: 3px; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; margin: .8rem 0; }
.filters select, .filters input { font: inherit; padding: 4px 6px; }
nav a { margin-right: 12px; }
@media (max-width: 600px) { body { padding: 8px; font-size: 14px; } th, td { padding: 4px 5px; } }
"""

JS = """
function cellValue(row, i) {
  const t = row.cells[i].getAttribute('data-sort') ?? row.cells[i].textContent.trim();
  const n = parseFloat(t.replace('%', '').replace('+', ''));
  return (t !== '' && !isNaN(n) && /^[-+]?[0-9.]/.test(t)) ? n : t.toLowerCase();
}
document.querySelectorAll('table.sortable').forEach(table => {
  table.querySelectorAll('th').forEach((th, i) => th.addEventListener('click', () => {
    const asc = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('th').forEach(h => h.removeAttribute('aria-sort'));
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort((a, b) => { const x = cellValue(a, i), y = cellValue(b, i);
      if (x === y) return 0; if (typeof x !== typeof y) return (typeof x === 'number') === asc ? -1 : 1;
      return (x < y) === asc ? -1 : 1; });
    rows.forEach(r => body.appendChild(r));
  }));
});
const filters = document.querySelectorAll('[data-filter]');
function applyFilters() {
  const want = {}; filters.forEach(f => { want[f.getAttribute('data-filter')] = f.value.toLowerCase(); });
  document.querySelectorAll('tr[data-item]').forEach(row => {
    let show = true;
    for (const [key, value] of Object.entries(want)) {
      if (!value) continue;
      if (key === 'text') { if (!row.textContent.toLowerCase().includes(value)) show = false; }
      else if ((row.getAttribute('data-' + key) || '').toLowerCase() !== value) show = false;
    }
    row.hidden = !show;
  });
  const counter = document.getElementById('shown');
  if (counter) counter.textContent = document.querySelectorAll('tr[data-item]:not([hidden])').length;
}
filters.forEach(f => { f.addEventListener('input', applyFilters); f.addEventListener('change', applyFilters); });
"""


def esc(value: object) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], table_id: str, sortable: bool = True) -> str:
    """An HTML table; cells in `rows` must already be rendered (``<td>...</td>``)."""
    head = "".join(f"<th scope=\"col\">{esc(h)}</th>" for h in header)
    body = "\n".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    cls = ' class="sortable"' if sortable else ""
    return f'<div class="scroll"><table id="{esc(table_id)}"{cls}><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>'


def page(title: str, body: str, nav: str = "", wide: bool = False) -> str:
    """A complete page with the shared CSS and JS inlined (`wide`: up to 1,400 px instead of 1,200)."""
    body_tag = '<body class="wide">' if wide else "<body>"
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n{body_tag}\n{nav}\n{body}\n"
        f"<script>{JS}</script>\n</body></html>\n"
    )
