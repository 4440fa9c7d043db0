"""What a person would see wrong in a page's layout, measured in the browser.

:data:`LAYOUT_PROBLEMS` is JavaScript for Playwright's ``page.evaluate``: it returns one line per
problem found on the page as drawn (an empty list for a page that holds):

- clipped text: a widget label, metric, heading, caption, markdown block, formula, select box
  value or upload hint (in the main area and the sidebar) whose content
  is wider than its box (``scrollWidth > clientWidth``, by more than the 2 pixels of a glyph's overhang), or a chart title,
  subtitle or tile title that leaves its figure;
- a small heatmap: a heatmap's plot area (all its tiles together, for small multiples) narrower
  than half its column; in slide mode (``slide``: true) one as high as half the screen passes too;
- a squeezed chart: a line, bar or scatter chart whose plot area is narrower than half its figure
  or lower than a third of it (a legend or axis titles taking the room);
- a tile title of small multiples drawn over a tile;
- a colour bar shorter or taller than its heatmap by more than a tenth;
- a word broken across two lines (a label too narrow for its words);
- an error box or a traceback;
- a slide taller than the screen (it must fit without scrolling);
- overlapping texts of a chart: its title, subtitle, axis titles, annotations (the titles of
  tiles) and legend entries, any two whose boxes overlap;
- overlapping tick labels: two tick labels of one axis of a heatmap whose boxes overlap by more
  than a pixel each way.
"""

LAYOUT_PROBLEMS = r"""
(slide) => {
  const problems = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const visible = e => e.offsetParent !== null || e.getClientRects().length > 0;
  const name = e => (e.innerText || e.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 60);
  for (const e of main.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]'))
    problems.push(`error box: "${name(e)}"`);
  const TEXT = ['[data-testid="stWidgetLabel"]', '[data-testid="stMetricValue"]', '[data-testid="stMetricLabel"]',
                '[data-testid="stMetricDelta"]', '[data-testid="stCaptionContainer"]', 'h1', 'h2', 'h3',
                '[data-testid="stMarkdownContainer"]', '.katex-display', '[data-testid="stPageLink"]',
                '[data-testid="stCheckbox"] label', '[data-testid="stRadio"] label', 'button p',
                '[data-testid="stTickBarMin"]', '[data-testid="stTickBarMax"]', '.posviz-slide-title',
                '[data-testid="stSelectbox"] [data-baseweb="select"] > div', '[data-testid="stFileUploaderDropzoneInstructions"]'];
  const broken = box => {  // a word of the box's text drawn on two lines
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('.katex, [data-testid="stTooltipIcon"]')) continue;
      for (const m of node.textContent.matchAll(/[^\s\-‐–—\/]{2,}/g)) {  // a break after a hyphen or slash is fine
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (tops.size > 1) return m[0];
      }
    }
    return null;
  };
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  const boxes = [main, ...(sidebar && visible(sidebar) ? [sidebar] : [])].flatMap(r => [...r.querySelectorAll(TEXT.join(','))]);
  for (const box of boxes) {
    if (!visible(box) || !name(box)) continue;
    const word = broken(box);
    if (word) problems.push(`word broken across lines: "${word}" in "${name(box)}"`);
    for (const e of [box, ...box.querySelectorAll('*')]) {
      // visually hidden text (KaTeX's MathML for screen readers) is one pixel wide; an italic glyph
      // may overhang its box by a pixel or two
      if (e.closest('[data-testid="stPlotlyChart"], [data-testid="stDataFrame"], [data-testid="stTooltipIcon"]')) continue;
      if (e.clientWidth > 2 && e.scrollWidth > e.clientWidth + 2) {
        problems.push(`clipped text: "${name(e)}" (${e.scrollWidth} px in ${e.clientWidth})`);
        break;
      }
    }
  }
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
                            Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  for (const chart of main.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    if (!visible(chart)) continue;
    const svg = chart.querySelector('svg.main-svg');
    if (!svg) continue;
    const frame = svg.getBoundingClientRect();
    const title = name(chart.querySelector('.gtitle') || chart) || '(untitled)';
    for (const t of chart.querySelectorAll('.gtitle, .gtitle-subtitle, .annotation-text')) {
      const r = t.getBoundingClientRect();
      if (r.width && (r.top < frame.top - 1 || r.right > frame.right + 1 || r.left < frame.left - 1))
        problems.push(`title outside its figure: "${name(t)}"`);
    }
    const texts = [...chart.querySelectorAll('.gtitle, .gtitle-subtitle, .g-xtitle text, .g-ytitle text, .annotation-text, .legendtext')]
                  .filter(t => name(t)).map(t => ({text: name(t), box: t.getBoundingClientRect()}));
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (overlap(texts[i].box, texts[j].box))
          problems.push(`overlapping texts in "${title}": "${texts[i].text}" and "${texts[j].text}"`);
    const areas = [...chart.querySelectorAll('.nsewdrag')].map(d => d.getBoundingClientRect());
    if (!chart.querySelector('.hm, .heatmaplayer image')) {  // a line, bar or scatter chart
      const plot = Math.max(...areas.map(a => a.right)) - Math.min(...areas.map(a => a.left));
      const high = Math.max(...areas.map(a => a.bottom)) - Math.min(...areas.map(a => a.top));
      if (areas.length && (plot < frame.width / 2 || high < frame.height / 3))
        problems.push(`squeezed chart: "${title}" plot area ${Math.round(plot)}×${Math.round(high)} px in a figure ` +
                      `of ${Math.round(frame.width)}×${Math.round(frame.height)}`);
      continue;
    }
    if (areas.length > 1)  // small multiples: no tile's title over another tile
      for (const t of chart.querySelectorAll('.annotation-text'))
        for (const a of areas) {  // a text's box reaches a few pixels below its last line's glyphs
          const r = t.getBoundingClientRect();
          if (overlap({left: r.left, right: r.right, top: r.top, bottom: r.bottom - 5}, a))
            problems.push(`tile title over a tile in "${title}": "${name(t)}"`);
        }
    if (!areas.length) continue;
    const area = {left: Math.min(...areas.map(a => a.left)), right: Math.max(...areas.map(a => a.right)),
                  top: Math.min(...areas.map(a => a.top)), bottom: Math.max(...areas.map(a => a.bottom))};
    const width = area.right - area.left, height = area.bottom - area.top;
    const column = (chart.closest('[data-testid="stColumn"]') || chart.closest('[data-testid="stVerticalBlock"]'))
                   .getBoundingClientRect().width;
    if (width < column / 2 && !(slide && height >= window.innerHeight / 2))
      problems.push(`small heatmap: "${title}" plot area ${Math.round(width)}×${Math.round(height)} px ` +
                    `in a column of ${Math.round(column)} px`);
    const bar = chart.querySelector('.colorbar .cbfills');
    if (bar && areas.length === 1) {
      const h = bar.getBoundingClientRect().height;
      if (Math.abs(h - height) > 0.1 * height)
        problems.push(`colour bar of "${title}" ${Math.round(h)} px high beside a plot area of ${Math.round(height)} px`);
    }
    for (const axis of ['xtick', 'ytick']) {
      const ticks = [...chart.querySelectorAll(`.${axis} text`)].filter(t => name(t))
                    .map(t => ({text: name(t), box: t.getBoundingClientRect()}));
      for (let i = 0; i < ticks.length; i++)
        for (let j = i + 1; j < ticks.length; j++)
          if (overlap(ticks[i].box, ticks[j].box))
            problems.push(`overlapping tick labels in "${title}": "${ticks[i].text}" and "${ticks[j].text}"`);
    }
  }
  if (slide && main.scrollHeight > window.innerHeight + 2)
    problems.push(`slide taller than the screen: ${main.scrollHeight} px in ${window.innerHeight}`);
  return [...new Set(problems)];
}
"""
