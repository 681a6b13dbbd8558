// reef dashboard: draws the topology (SVG), colours links from the server's state
// events, lists flows and verdicts, and plots the selected flow's or port's series on
// canvases. Plain JavaScript, no dependencies.
'use strict';

const $ = (id) => document.getElementById(id);
const SVGNS = 'http://www.w3.org/2000/svg';
const W = 1000, H = 560, MAXROWS = 20000;
let planGen = -1, state = null, sel = null, fetching = false;
// marks are the times (ms) the charts mark: the time shown, or the measurement window
let marks = [];

function el(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  return e;
}

async function getJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(url + ': ' + r.status);
  return r.json();
}

// utilColour maps a utilisation (0…1) to grey when idle, then green → yellow → red.
function utilColour(u) {
  if (!(u > 0.005)) return '#9aa5b1';
  const hue = 120 * (1 - Math.min(u, 1));
  return 'hsl(' + hue.toFixed(0) + ',75%,42%)';
}

const fmtRate = (bps) => bps >= 1e9 ? (bps / 1e9).toFixed(2) + ' Gb/s' : (bps / 1e6).toFixed(1) + ' Mb/s';
const fmtBytes = (b) => b >= 1e6 ? (b / 1e6).toFixed(2) + ' MB' : (b / 1e3).toFixed(1) + ' KB';
const fmtTime = (ns) => ns >= 1e6 ? (ns / 1e6).toFixed(2) + ' ms' : (ns / 1e3).toFixed(1) + ' µs';

function drawTopology(t) {
  const svg = $('graph');
  svg.replaceChildren();
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  const pos = {};
  t.nodes.forEach((n) => { pos[n.name] = [20 + n.x * (W - 40), n.y * H]; });
  const gl = el('g', { id: 'links' }), gn = el('g', { id: 'nodes' });
  t.links.forEach((l) => {
    const a = pos[l.a], b = pos[l.b];
    if (!a || !b) return;
    const line = el('line', { x1: a[0], y1: a[1], x2: b[0], y2: b[1], id: 'link-' + l.id, class: 'link',
      stroke: utilColour(0), 'stroke-width': 2, 'data-link': l.id });
    const title = el('title');
    title.textContent = l.label + ' · ' + fmtRate(l.rate);
    line.appendChild(title);
    line.addEventListener('click', () => selectLink(l.id, l.label));
    gl.appendChild(line);
  });
  t.nodes.forEach((n) => {
    const p = pos[n.name];
    const g = el('g', { class: 'node ' + (n.host ? 'host' : 'switch'), transform: 'translate(' + p[0] + ',' + p[1] + ')',
      'data-node': n.name });
    g.appendChild(n.host ? el('circle', { r: 6 }) : el('rect', { x: -15, y: -9, width: 30, height: 18, rx: 3 }));
    const tx = el('text', { y: n.host ? 18 : 3, 'text-anchor': 'middle' });
    tx.textContent = n.name;
    g.appendChild(tx);
    gn.appendChild(g);
  });
  svg.append(gl, gn);
}

// statusText says whether the run is live or finished and what the figures measure.
function statusText(st) {
  if (st.live) return 'live · t = ' + fmtTime(st.now);
  if (st.view === 'window') return 'finished · measurement window ' + fmtTime(st.window[0]) + ' – ' + fmtTime(st.window[1]);
  if (st.view === 'at') return 'finished · t = ' + fmtTime(st.at) + ' of ' + fmtTime(st.now);
  return 'finished · t = ' + fmtTime(st.now);
}

async function applyState(st) {
  state = st;
  $('status').textContent = statusText(st);
  $('status').className = 'status ' + (st.live ? 'live' : 'done');
  showTimebar(st);
  $('title').textContent = st.title;
  $('note').textContent = st.note || '';
  if (st.plan_gen !== planGen) {
    planGen = st.plan_gen;
    drawTopology(await getJSON('/api/topology'));
  }
  st.links.forEach((ls, i) => {
    const line = $('link-' + i);
    if (!line) return;
    line.setAttribute('stroke', utilColour(ls.util));
    // width grows with the queue, in packets, on a log scale
    line.setAttribute('stroke-width', (2 + Math.min(8, Math.log2(1 + ls.queue / 1500))).toFixed(1));
    line.firstChild.textContent = line.firstChild.textContent.split(' ·')[0] + ' · ' + (100 * ls.util).toFixed(0) +
      '% · ' + (st.view === 'window' ? 'mean queue ' : 'queue ') + fmtBytes(ls.queue) + ' · drops ' + ls.drops + ' · marks ' + ls.marks;
  });
  const rows = st.flows.slice(0, 300).map((f, i) => {
    const tr = document.createElement('tr');
    tr.dataset.flow = i;
    if (sel && sel.kind === 'flow' && sel.id === i) tr.className = 'sel';
    [f.name + (f.done ? ' ✓' : ''), f.cc, f.src + '→' + f.dst, fmtRate(f.goodput), fmtBytes(f.cwnd), fmtTime(f.rtt)]
      .forEach((v, j) => { const td = document.createElement('td'); td.textContent = v; if (j >= 3) td.className = 'num'; tr.appendChild(td); });
    tr.addEventListener('click', () => selectSeries('flow', i, 'flow ' + f.name, []));
    return tr;
  });
  $('flows').tBodies[0].replaceChildren(...rows);
  const vs = st.verdicts.map((v) => {
    const li = document.createElement('li');
    li.className = v.pass ? 'pass' : 'fail';
    li.textContent = (v.pass ? 'PASS ' : 'FAIL ') + v.label + ': ' + v.check + ' = ' + v.value + ', bound ' + v.bound +
      (v.error ? ' (' + v.error + ')' : '');
    return li;
  });
  if (vs.length) $('verdicts').replaceChildren(...vs);
  if (sel) fetchSeries();
}

// showTimebar offers a finished run's time: a slider over its samples, and a button
// back to the measurement window.
function showTimebar(st) {
  const bar = $('timebar');
  bar.hidden = st.live || !st.step;
  marks = st.view === 'at' ? [st.at / 1e6] : st.view === 'window' ? [st.window[0] / 1e6, st.window[1] / 1e6] : [];
  if (bar.hidden) return;
  const t = $('time');
  t.max = st.now;
  t.step = st.step;
  if (!sliding) t.value = st.view === 'window' ? st.window[1] : st.at;
  $('time-label').textContent = st.view === 'window' ? 'window' : 't = ' + fmtTime(st.at);
  $('view-window').hidden = !(st.window[1] > st.window[0]);
  $('view-window').classList.toggle('on', st.view === 'window');
}

// The slider asks for the state at its time; one request at a time, the latest wins.
let sliding = false, wanted = null, asking = false;
async function ask(query) {
  wanted = query;
  if (asking) return;
  asking = true;
  try {
    while (wanted !== null) {
      const q = wanted;
      wanted = null;
      const st = await getJSON('/api/state?' + q);
      chain = chain.then(() => applyState(st));
      await chain;
    }
  } catch (e) {
    console.log(e);
  } finally {
    asking = false;
  }
}
$('time').addEventListener('input', (e) => { sliding = true; ask('at=' + e.target.value); });
$('time').addEventListener('change', () => { sliding = false; });
$('view-window').addEventListener('click', () => ask('view=window'));

function selectLink(id, label) {
  const ls = state && state.links[id];
  document.querySelectorAll('.link.sel').forEach((e) => e.classList.remove('sel'));
  $('link-' + id).classList.add('sel');
  if (!ls || !ls.ports.length) {
    sel = null;
    $('detail').hidden = false;
    $('detail-title').textContent = label + ': no switch port measures this link';
    $('charts').replaceChildren();
    return;
  }
  selectSeries('port', ls.ports[0], 'link ' + label, ls.ports);
}

function selectSeries(kind, id, title, choices) {
  sel = { kind: kind, id: id, title: title, next: 0, rows: [], columns: [] };
  $('detail').hidden = false;
  $('detail-title').textContent = title;
  $('charts').replaceChildren();
  const bs = choices.map((p) => {
    const b = document.createElement('button');
    b.textContent = state.ports[p].name;
    b.addEventListener('click', () => selectSeries('port', p, title, choices));
    return b;
  });
  $('detail-choices').replaceChildren(...bs);
  fetchSeries();
}

async function fetchSeries() {
  if (fetching || !sel) return;
  fetching = true;
  const s = sel;
  try {
    const r = await getJSON('/api/series?' + s.kind + '=' + s.id + '&from=' + s.next);
    if (s !== sel) return;
    s.columns = r.columns;
    s.next = r.next;
    s.rows.push(...r.rows);
    if (s.rows.length > MAXROWS) s.rows = s.rows.filter((_, i) => i % 2 === 0);
    $('detail-title').textContent = s.title + ' — ' + r.name;
    drawCharts(s);
  } catch (e) {
    console.log(e);
  } finally {
    fetching = false;
  }
}

function drawCharts(s) {
  const box = $('charts');
  while (box.children.length < s.columns.length - 1) {
    const cv = document.createElement('canvas');
    cv.width = 380; cv.height = 160;
    cv.className = 'chart';
    box.appendChild(cv);
  }
  const xs = s.rows.map((r) => r[0]);
  for (let c = 1; c < s.columns.length; c++) {
    drawChart(box.children[c - 1], s.columns[c], xs, s.rows.map((r) => r[c]));
  }
}

// drawChart plots ys against xs (t in ms) as a line with a labelled frame.
function drawChart(cv, label, xs, ys) {
  const ctx = cv.getContext('2d'), w = cv.width, h = cv.height;
  const L = 52, R = 10, T = 20, B = 22;
  ctx.clearRect(0, 0, w, h);
  ctx.font = '11px system-ui, sans-serif';
  ctx.fillStyle = '#243b53';
  ctx.fillText(label, L, 13);
  cv.dataset.points = xs.length;
  cv.dataset.label = label;
  if (!xs.length) return;
  let x0 = xs[0], x1 = xs[xs.length - 1], y0 = 0, y1 = 0;
  for (const y of ys) { if (y < y0) y0 = y; if (y > y1) y1 = y; }
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  y1 += (y1 - y0) * 0.05;
  const px = (x) => L + (x - x0) / (x1 - x0) * (w - L - R);
  const py = (y) => h - B - (y - y0) / (y1 - y0) * (h - T - B);
  ctx.strokeStyle = '#cbd2d9';
  ctx.lineWidth = 1;
  ctx.strokeRect(L, T, w - L - R, h - T - B);
  ctx.fillStyle = '#52606d';
  ctx.textAlign = 'right';
  for (const y of [y0, (y0 + y1) / 2, y1]) {
    ctx.fillText(fmtNum(y), L - 4, py(y) + 4);
    ctx.beginPath(); ctx.moveTo(L, py(y)); ctx.lineTo(w - R, py(y)); ctx.stroke();
  }
  ctx.textAlign = 'left';
  ctx.fillText(fmtNum(x0) + ' ms', L, h - 6);
  ctx.textAlign = 'right';
  ctx.fillText(fmtNum(x1) + ' ms', w - R, h - 6);
  ctx.textAlign = 'left';
  ctx.strokeStyle = '#f0b429';
  for (const m of marks) {
    if (m < x0 || m > x1) continue;
    ctx.beginPath(); ctx.moveTo(px(m), T); ctx.lineTo(px(m), h - B); ctx.stroke();
  }
  ctx.strokeStyle = '#2680c2';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  xs.forEach((x, i) => { if (i === 0) ctx.moveTo(px(x), py(ys[i])); else ctx.lineTo(px(x), py(ys[i])); });
  ctx.stroke();
}

function fmtNum(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
  if (a >= 1e3) return (v / 1e3).toFixed(1) + 'k';
  if (a >= 10 || a === 0) return v.toFixed(0);
  return v.toFixed(2);
}

// updates are applied one after the other (a new topology is fetched before links are coloured)
let chain = Promise.resolve();
// the state at once, whatever the event stream does
chain = chain.then(() => getJSON('/api/state')).then((st) => { if (!state) return applyState(st); }).catch((err) => console.log(err));
const es = new EventSource('/events');
es.addEventListener('state', (e) => {
  const st = JSON.parse(e.data);
  // a finished run never changes: nothing more will come
  if (!st.live) es.close();
  if (state && !state.live && !st.live && st.version === state.version) return; // the user may be elsewhere in the run
  chain = chain.then(() => applyState(st)).catch((err) => console.log(err));
});
es.onerror = () => {
  if (state && !state.live) return; // a finished run is shown whole: the server is no longer needed
  $('status').textContent = 'disconnected (retrying)';
  $('status').className = 'status';
};
