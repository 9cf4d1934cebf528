"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const LIVE = "cl-u (your inspections)";
const refuted = [];
const rho = D.rho.slice();
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));

// The line an entry is shown at: its lead line, as in the other reports. `grp` is a group of
// the shared table or of a ranking's own (CP's, split by its scores).
function firstLine(grp) {
  const lead = grp.lead;
  return lead ? {file: D.files[lead[0]].path, line: lead[1], src: (D.files[lead[0]].lines[lead[1] - 1] || "").trim()} : {file: "", line: 0, src: grp.label};
}

// Doric's cl of group g under the current rho (log space; matches src/analysis.rs).
function lnCl(g) {
  const grp = D.groups[g];
  const terms = grp.fail.map((k) => -rho[k] * Math.LN2 - Math.log1p(-Math.pow(2, -rho[k])));
  const m = Math.max(...terms);
  if (!isFinite(m)) return -Infinity;
  return m + Math.log(terms.reduce((s, t) => s + Math.exp(t - m), 0)) - Math.log(grp.ef + grp.ep);
}

function liveRanking() {
  const gone = new Set(refuted);
  const scored = D.groups.map((_, g) => g).filter((g) => !gone.has(g)).map((g) => ({g, v: lnCl(g)}));
  scored.sort((a, b) => b.v - a.v || a.g - b.g);
  const entries = [];
  for (let i = 0; i < scored.length; ) {
    let j = i;
    while (j < scored.length && scored[j].v === scored[i].v) j++;
    for (let k = i; k < j; k++) {
      const v = scored[k].v;
      entries.push({g: scored[k].g, score: Math.exp(v), log10: v / Math.LN10, rank: i + (j - i + 1) / 2, certain: false, changed: false});
    }
    i = j;
  }
  return {measure: LIVE, formula: "cl recomputed after the entries you marked as not the bug", probability: true, entries};
}

function fmtScore(r, e) {
  if (e.score === null) return "unscored";
  if (r.probability && e.score < 1e-4) return e.score > 0 ? e.score.toExponential(2) : "10^" + (e.log10 || -Infinity).toFixed(1);
  if (Math.abs(e.score) >= 1.7e308) return e.score > 0 ? "max" : "-max";
  return e.score.toFixed(4);
}

function ranking() {
  const name = $("measure").value;
  return name === LIVE ? liveRanking() : D.rankings.find((r) => r.measure === name);
}

function render() {
  const r = ranking();
  $("formula").textContent = r.formula;
  $("scorehead").textContent = r.probability ? "probability" : "score";
  const groups = r.groups || D.groups;
  // Functions first: each top function's heading, then its best entry; else the entries.
  const shown = r.functions
    ? r.functions.flatMap((f) => [{heading: f.label}, ...f.entries.map((i, k) => ({...r.entries[i], at: f.at[k], changed: f.changed[k]}))])
    : r.entries.slice(0, 50);
  const rows = shown.map((e) => {
    if (e.heading) return `<tr class="function"><td colspan="7">${esc(e.heading)}</td></tr>`;
    const g = groups[e.g];
    // Under a function, its own line of the entry; else the entry's lead.
    const f = e.at ? {file: D.files[e.at[0]].path, line: e.at[1], src: (D.files[e.at[0]].lines[e.at[1] - 1] || "").trim()} : firstLine(g);
    // "not the bug" refutes the shared group this entry is part of.
    const shared = g.base === undefined ? e.g : g.base;
    const more = g.units.length > 1 ? ` <span class="muted">(+${g.units.length - 1} lines alike)</span>` : "";
    const tags = (e.panicked ? '<span class="tag panicked" title="a failing test panicked on this line\'s own operation">panicked</span>' : "") +
      (e.certain ? '<span class="tag certain">certain</span>' : "") + (e.changed ? '<span class="tag changed">changed</span>' : "");
    const anchor = f.file ? `#L-${encodeURIComponent(f.file)}-${f.line}` : "#";
    const loc = e.at ? `${f.file}:${f.line}` : g.label;
    return `<tr class="${e.rank <= 1 ? "top" : ""}" data-loc="${esc(g.label)}" data-group="${shared}">` +
      `<td>${e.rank}</td><td>${fmtScore(r, e)}${tags}</td><td class="loc"><a href="${anchor}">${esc(loc)}</a></td>` +
      `<td>${g.ef}</td><td>${g.ep}</td><td><code>${esc(f.src)}</code>${more}</td>` +
      `<td><button class="refute" data-group="${shared}">not the bug</button></td></tr>`;
  });
  document.querySelector("#ranking tbody").innerHTML = rows.join("");
  for (const b of document.querySelectorAll("button.refute")) b.onclick = () => refute(Number(b.dataset.group));
  notice();
}

function refute(g) {
  if (refuted.includes(g)) return;
  refuted.push(g);
  const size = D.groups[g].units.length;
  for (const k of D.groups[g].fail) rho[k] -= size;
  $("measure").value = LIVE;
  render();
}

function undo() {
  refuted.length = 0;
  D.rho.forEach((v, i) => (rho[i] = v));
  render();
}

function notice() {
  const n = $("notice");
  if (refuted.length === 0) { n.style.display = "none"; return; }
  n.style.display = "block";
  n.innerHTML = `You marked ${refuted.length} entr${refuted.length === 1 ? "y" : "ies"} as not the bug: ` +
    `<span id="refuted">${refuted.map((g) => esc(D.groups[g].label)).join("; ")}</span>. ` +
    "Assumed (Doric's updating, cl-u): a refuted entry is not a cause, so each failing test that ran it is explained by the other lines it ran. " +
    "Its line count is taken out of that test's &rho;, which raises the causal likelihood of those lines (Proposition 3.12); cl is recomputed and the list re-ranked. " +
    'The other measures are unchanged. <button id="undo">undo all</button>';
  $("undo").onclick = undo;
}

function heat(ef, ep) {
  const F = D.summary.failed + D.summary.crashed, P = D.summary.passed;
  const fp = F ? ef / F : 0, pp = P ? ep / P : 0;
  if (ef + ep === 0) return "";
  const hue = fp + pp === 0 ? 60 : (120 * pp) / (pp + fp);
  const light = 95 - 25 * Math.max(fp, pp);
  return `hsl(${hue.toFixed(0)},100%,${light.toFixed(0)}%)`;
}

function sources() {
  const byFile = D.files.map(() => new Map());
  for (const u of D.units) byFile[u[0]].set(u[1], u);
  const html = D.files.map((f, fi) => {
    const lines = f.lines.map((text, i) => {
      const u = byFile[fi].get(i + 1);
      let style = "", title = "";
      if (u) {
        style = `background:${heat(u[3], u[4])}`;
        if (u[2] >= 0) {
          const g = D.groups[u[2]];
          const names = g.fail.map((k) => D.tests[D.failing[k]].name + " (failed)").concat(g.pass.map((t) => D.tests[t].name));
          title = `run by ${u[3]} failing and ${u[4]} passing tests:\n` + names.join("\n") + (g.passMore ? `\n… and ${g.passMore} more passing` : "");
        } else {
          title = `run by ${u[3]} failing and ${u[4]} passing tests`;
        }
      }
      return `<div id="L-${encodeURIComponent(f.path)}-${i + 1}" style="${style}" title="${esc(title)}"><span class="n">${i + 1}</span>${esc(text)}</div>`;
    });
    return `<div class="file"><h3>${esc(f.path)}</h3><div class="src">${lines.join("")}</div></div>`;
  });
  $("sources").innerHTML = html.join("");
}

function init() {
  const s = D.summary;
  $("summary").textContent = `${s.tests} tests: ${s.passed} passed, ${s.failed} failed, ${s.timed_out} timed out, ${s.crashed} crashed` +
    (s.flaky ? ` (${s.flaky} flaky: passed on a retry, ranked as failing)` : "") + " · " +
    `${s.failing_units} lines run by a failing test in ${s.entries} entries · ${s.all_failing_core} lines run by every failing test` +
    (D.diffBase ? ` · changed since ${D.diffBase}` : "");
  $("failing").innerHTML = D.failing.map((t) => {
    const x = D.tests[t];
    // The panic backtrace in the workspace's code, innermost frame first.
    const stack = x.stack.length
      ? `<pre class="stack">${x.stack.map(([file, line, fn]) => esc(`${file}:${line}  ${fn}`)).join("\n")}</pre>`
      : "";
    // A retried test: flaky (passed on a retry) or how many runs failed.
    const runs = x.runs ? ` <i class="runs">(${esc(x.runs)})</i>` : "";
    return `<div><b>${esc(x.outcome.toUpperCase())}</b> <code>${esc(x.name)}</code>${runs}${x.message ? `<pre>${esc(x.message)}</pre>` : ""}${stack}</div>`;
  }).join("");
  const sel = $("measure");
  for (const r of D.rankings) sel.add(new Option(r.measure, r.measure));
  sel.add(new Option(LIVE, LIVE));
  sel.onchange = render;
  sources();
  render();
}
init();
