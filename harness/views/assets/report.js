(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var recs = data.records, cases = data.cases, backends = data.backends, messages = data.messages;
  var table = document.getElementById("matrix");
  var tbody = table.tBodies[0];
  var details = document.getElementById("details");
  var LABEL = {};  // outcome -> title, from harness.outcomes (the payload's vocabulary)
  Object.keys(data.vocabulary.outcomes).forEach(function (o) { LABEL[o] = data.vocabulary.outcomes[o].title; });
  var KNOWN = Object.keys(LABEL);
  var UNEXPECTED = data.vocabulary.unexpected;
  function unexpected(r) { return UNEXPECTED.indexOf(r.verdict) >= 0; }
  function caseOf(r) { return cases[r.c]; }
  function full(r, key) { return r[key] !== undefined ? r[key] : caseOf(r)[key]; }
  function outcomeClass(o) { return KNOWN.indexOf(o) >= 0 ? "o-" + o : "o-other"; }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // -- index the server-rendered matrix --------------------------------------------------------
  var byKey = new Map();
  recs.forEach(function (r, i) { byKey.set(r.b + "\u0000" + r.c, i); });
  // Rows of cases, a header row per family, and one per group of cases (an OpInfo op's samples):
  // a group starts collapsed when the server says so, and a filter shows its matching rows anyway.
  var rows = [], famRows = new Map(), groups = new Map();
  Array.prototype.forEach.call(tbody.rows, function (tr) {
    if (tr.classList.contains("fam")) { famRows.set(tr.getAttribute("data-family"), tr); return; }
    if (tr.classList.contains("grp")) {
      var folded = tr.classList.contains("collapsed");
      groups.set(tr.getAttribute("data-g"), {tr: tr, collapsed: folded, initially: folded});
      return;
    }
    var c = Number(tr.getAttribute("data-c"));
    var cells = [];
    for (var j = 1; j < tr.cells.length; j++) {
      var td = tr.cells[j], k = td.getAttribute("data-r");
      cells.push({td: td, col: j - 1, r: k === null ? -1 : Number(k)});
    }
    rows.push({tr: tr, c: c, id: cases[c].id, lower: cases[c].id.toLowerCase(), family: cases[c].family,
               group: tr.getAttribute("data-g"), cells: cells});
  });
  function setHidden(tr, hide) { if (tr.hidden !== hide) tr.hidden = hide; }  // untouched rows cost no style work

  // -- filters -------------------------------------------------------------------------------------
  var fText = document.getElementById("f-text"), fFamily = document.getElementById("f-family");
  var fUnexpected = document.getElementById("f-unexpected"), fCount = document.getElementById("f-count");
  var fNone = document.getElementById("f-none"), toolbar = document.getElementById("toolbar");
  var outcomeBoxes = Array.prototype.slice.call(document.querySelectorAll("input[data-outcome]"));
  var backendBoxes = Array.prototype.slice.call(document.querySelectorAll("input[data-backend]"));
  var collapsed = new Set();
  var colStyle = document.createElement("style");
  document.head.appendChild(colStyle);

  function apply() {
    var terms = fText.value.toLowerCase().split(/\s+/).filter(Boolean);
    var family = fFamily.value, onlyUnexp = fUnexpected.checked;
    var allowed = new Set(outcomeBoxes.filter(function (b) { return b.checked; }).map(function (b) { return b.getAttribute("data-outcome"); }));
    var outcomeFilter = allowed.size < outcomeBoxes.length;
    var hidden = new Set(backendBoxes.filter(function (b) { return !b.checked; }).map(function (b) { return Number(b.getAttribute("data-backend")); }));
    var css = "";
    hidden.forEach(function (j) { css += "#matrix tr>:nth-child(" + (j + 2) + "){display:none}"; });
    colStyle.textContent = css;
    var t0 = performance.now();
    var filtering = outcomeFilter || onlyUnexp, shown = 0, famShown = new Map(), groupShown = new Map();
    var searching = filtering || terms.length > 0;
    rows.forEach(function (row) {
      var ok = (!family || row.family === family) && terms.every(function (t) { return row.lower.indexOf(t) >= 0; });
      var any = false;
      row.cells.forEach(function (cell) {
        if (cell.r < 0) return;
        var r = recs[cell.r];
        var match = (!outcomeFilter || allowed.has(r.outcome)) && (!onlyUnexp || unexpected(r));
        cell.td.classList.toggle("dim", filtering && !match);
        if (match && !hidden.has(cell.col)) any = true;
      });
      ok = ok && (!filtering || any);
      if (ok) {
        shown++;
        famShown.set(row.family, (famShown.get(row.family) || 0) + 1);
        if (row.group) groupShown.set(row.group, true);
      }
      var folded = row.group && groups.get(row.group).collapsed && !searching;
      setHidden(row.tr, !ok || collapsed.has(row.family) || folded);
    });
    famRows.forEach(function (tr, fam) {
      setHidden(tr, !famShown.get(fam));
      tr.classList.toggle("collapsed", collapsed.has(fam));
    });
    groups.forEach(function (g, key) {
      setHidden(g.tr, !groupShown.get(key) || collapsed.has(g.tr.getAttribute("data-family")));
      g.tr.classList.toggle("collapsed", g.collapsed && !searching);
    });
    fCount.textContent = "Showing " + shown + " of " + rows.length + " cases";
    fNone.hidden = shown > 0 || rows.length === 0;
    void document.body.offsetHeight;  // the layout, so that the time below is what the reader waits
    document.body.setAttribute("data-filter-ms", String(Math.round(performance.now() - t0)));
  }
  // -- colour by speedup (--perf): green faster than eager, red slower, grey not significant -----
  var fSpeed = document.getElementById("f-speed");
  function speedColour(s) {
    if (s.low <= 1 && 1 <= s.high) return "rgba(128,128,128,0.2)";
    var strength = Math.min(1, Math.abs(Math.log(s.value) / Math.LN2) / 2);   // full colour at 4x
    return (s.value > 1 ? "rgba(34,139,34," : "rgba(200,40,40,") + (0.15 + 0.6 * strength).toFixed(2) + ")";
  }
  function colourBySpeed() {
    rows.forEach(function (row) {
      row.cells.forEach(function (cell) {
        var s = cell.r >= 0 && recs[cell.r].perf && recs[cell.r].perf.speedup;
        if (!s) return;
        cell.td.style.background = fSpeed.checked ? speedColour(s) : "";
        cell.td.title = fSpeed.checked ? "speedup over eager " + s.value + "x (" + s.low + "-" + s.high + ")" : "";
      });
    });
  }
  if (fSpeed) fSpeed.addEventListener("change", colourBySpeed);

  fText.addEventListener("input", apply);
  [fFamily, fUnexpected].concat(outcomeBoxes, backendBoxes).forEach(function (b) { b.addEventListener("change", apply); });
  document.getElementById("f-reset").addEventListener("click", function () {
    fText.value = ""; fFamily.value = ""; fUnexpected.checked = false; collapsed.clear();
    groups.forEach(function (g) { g.collapsed = g.initially; });
    outcomeBoxes.concat(backendBoxes).forEach(function (b) { b.checked = true; });
    sortBy("case", 1);
    apply();
  });
  famRows.forEach(function (tr, fam) {
    tr.cells[0].addEventListener("click", function () {
      if (collapsed.has(fam)) collapsed.delete(fam); else collapsed.add(fam);
      apply();
    });
  });
  groups.forEach(function (g) {
    g.tr.cells[0].addEventListener("click", function () { g.collapsed = !g.collapsed; apply(); });
  });

  // -- sorting: by case id, or by the outcome on one backend; rows stay grouped by family ----------
  var SEVERITY = {crashed: 0, timed_out: 1, runtime_error: 2, mismatch: 3, wrong_lowering: 3, compile_error: 4,
                  not_run: 6, passed: 7};
  function rank(row, col) {
    var cell = row.cells[col];
    if (!cell || cell.r < 0) return 100;
    var r = recs[cell.r];
    var s = SEVERITY[r.outcome] !== undefined ? SEVERITY[r.outcome] : 5;
    return (unexpected(r) ? 0 : 10) + s;
  }
  var sortState = {key: "case", dir: 1};
  function sortBy(key, dir) {
    sortState = {key: key, dir: dir};
    var sorted = rows.slice().sort(function (a, b) {
      var d = 0;
      if (key !== "case") d = rank(a, Number(key)) - rank(b, Number(key));
      if (d === 0) d = a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
      return key === "case" ? d * dir : (d === 0 ? 0 : d * dir);
    });
    var fams = Array.from(famRows.keys()).sort();
    if (key === "case" && dir < 0) fams.reverse();
    // A group keeps its rows together, placed where its first row sorts.
    var members = new Map();
    sorted.forEach(function (row) {
      var g = row.group || "\u0000" + row.c;
      if (!members.has(g)) members.set(g, []);
      members.get(g).push(row);
    });
    var order = document.createDocumentFragment();
    fams.forEach(function (fam) {
      order.appendChild(famRows.get(fam));
      members.forEach(function (list, g) {
        if (list[0].family !== fam) return;
        if (groups.has(g)) order.appendChild(groups.get(g).tr);
        list.forEach(function (row) { order.appendChild(row.tr); });
      });
    });
    tbody.appendChild(order);
    arrows();
  }
  function arrows() {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var mine = th.getAttribute("data-sort") === String(sortState.key);
      th.querySelector(".arrow").textContent = mine ? (sortState.dir > 0 ? "\u25B2" : "\u25BC") : "";
      th.setAttribute("aria-sort", mine ? (sortState.dir > 0 ? "ascending" : "descending") : "none");
    });
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    th.addEventListener("click", function () {
      var key = th.getAttribute("data-sort");
      sortBy(key, sortState.key === key ? -sortState.dir : 1);
    });
  });

  // -- details panel ------------------------------------------------------------------------------
  var dTitle = document.getElementById("d-title"), dBody = document.getElementById("d-body");
  var selected = null;

  function section(title, extra) {
    var h = el("h3", null, title);
    if (extra) h.appendChild(extra);
    dBody.appendChild(h);
  }
  function valueText(v) {
    if (v === null || v === undefined) return "";
    return typeof v === "string" ? v : JSON.stringify(v);
  }
  // How close each output came to failing: its worst error over its tolerance (1.0 at the limit),
  // a bar to the limit, and a float16/bfloat16 output's ULPs.
  function margins(r) {
    section("Margins (error over tolerance)");
    var shown = {};
    Object.keys(r.margins).forEach(function (k) {
      var u = r.ulps && r.ulps[k];
      shown[k] = [r.margins[k], u ? "ULPs max " + u.max + ", p99 " + u.p99 : ""];
    });
    kvTable(shown, function (td, v) {
      var bar = el("span", "pbar" + (v[0] > 1 ? " over" : ""));
      bar.style.width = Math.max(2, Math.round(160 * Math.min(v[0], 1))) + "px";
      td.appendChild(bar);
      td.appendChild(document.createTextNode(String(v[0]) + (v[1] ? " \u00B7 " + v[1] : "")));
    });
  }
  function worstMargin(r) {
    var keys = r.margins ? Object.keys(r.margins) : [];
    return keys.length ? Math.max.apply(null, keys.map(function (k) { return r.margins[k]; })) : null;
  }
  function kvTable(obj, fmt) {
    var keys = obj && typeof obj === "object" ? Object.keys(obj) : [];
    if (!keys.length) { dBody.appendChild(el("div", "muted", "none")); return; }
    var t = el("table", "kvt");
    keys.forEach(function (k) {
      var tr = t.insertRow();
      tr.appendChild(el("td", null, k));
      var td = el("td");
      if (fmt) fmt(td, obj[k]); else td.textContent = valueText(obj[k]);
      tr.appendChild(td);
    });
    dBody.appendChild(t);
  }
  function badge(cls, key, value) {
    var b = el("span", "badge " + cls);
    b.appendChild(el("span", "k", key));
    b.appendChild(document.createTextNode(value === null || value === undefined ? "\u2014" : String(value)));
    return b;
  }

  // --isolate's findings: each distinct culprit op once, its most likely node's module, how far off.
  function culprits(iso) {
    section("Culprit ops (--isolate)");
    if (iso.error) { dBody.appendChild(el("div", "muted", "not isolated: " + iso.error)); return; }
    var seen = new Map();
    (iso.culprits || []).forEach(function (c) {
      var first = seen.get(c.op);
      if (first) first.places += 1; else seen.set(c.op, {c: c, places: 1});
    });
    if (!seen.size) {
      var failed = iso.failed_ops || [];
      dBody.appendChild(el("div", "muted", failed.length ? "no op is off alone; the backend fails " + failed[0].op +
                           " alone: " + failed[0].failure : iso.cut || "no op is off alone"));
      return;
    }
    var t = el("table", "kvt");
    seen.forEach(function (v) {
      var tr = t.insertRow(), c = v.c;
      tr.appendChild(el("td", null, c.op));
      tr.appendChild(el("td", null, (c.module || "(the program)") + (v.places > 1 ? "  (" + v.places + " nodes)" : "")));
      var ref = c.reference || "eager", against = c.against || "float64";
      tr.appendChild(el("td", null, c.ratio !== null && c.ratio !== undefined ?
                        Number(c.ratio).toPrecision(3) + "x " + ref + "'s error" :
                        against !== "float64" ? "off " + against + "'s results beyond the tolerance" : ref + "'s error 0"));
      tr.appendChild(el("td", null, c.bundle || ""));
    });
    dBody.appendChild(t);
    if (iso.folder) dBody.appendChild(el("div", "muted", "details: " + iso.folder));
  }

  function open(i, scroll) {
    var r = recs[i];
    if (!r) return;
    var c = caseOf(r), backend = backends[r.b];
    if (selected) selected.classList.remove("sel");
    selected = table.querySelector('td[data-r="' + i + '"]');
    if (selected) {
      selected.classList.add("sel");
      var cell = selected;
      // Scroll after the first paint (and only when needed): an early jump can leave a blank frame.
      if (scroll) requestAnimationFrame(function () {
        var box = cell.getBoundingClientRect();
        if (box.top < toolbar.offsetHeight + 40 || box.bottom > window.innerHeight) cell.scrollIntoView({block: "center", inline: "nearest"});
      });
    }
    dTitle.textContent = "";
    dTitle.appendChild(el("div", "case", c.id));
    dTitle.appendChild(el("div", "sub", "on " + backend + "  \u00B7  " + (r.nodeid || "")));
    dBody.textContent = "";

    var badges = el("div", "badges");
    var ob = badge(outcomeClass(r.outcome) + (unexpected(r) ? " un" : ""), "outcome", LABEL[r.outcome] || r.outcome);
    badges.appendChild(ob);
    var vcls = unexpected(r) ? "v-bad" : r.verdict === "ok" ? "v-ok" : "v-skipped";
    badges.appendChild(badge(vcls, "verdict", r.verdict ? String(r.verdict).replace(/_/g, " ") : null));
    badges.appendChild(badge("plain", "expected", r.expected));
    if (r.phase) badges.appendChild(badge("plain", "phase", r.phase));
    if (r.expected_phase) badges.appendChild(badge(r.expected_phase !== r.phase ? "v-bad" : "plain", "entry's phase", r.expected_phase));
    dBody.appendChild(badges);

    var others = el("div", "others");
    backends.forEach(function (name, j) {
      var k = byKey.get(j + "\u0000" + r.c);
      var other = k === undefined ? null : recs[k];
      var b = el("button", other ? outcomeClass(other.outcome) + (unexpected(other) ? " un" : "") +
                 (j === r.b ? " cur" : "") : "o-missing", name);
      b.type = "button";
      b.title = other ? name + ": " + (LABEL[other.outcome] || other.outcome) + " (" + other.verdict + ")" : name + ": no result";
      if (other) b.addEventListener("click", function () { go(k); });
      others.appendChild(b);
    });
    section("This case on every backend");
    dBody.appendChild(others);

    section("Result");
    var dl = el("dl", "kv");
    function row(k, v) {
      dl.appendChild(el("dt", null, k));
      var empty = v === null || v === undefined || v === "";
      dl.appendChild(el("dd", empty ? "none" : null, empty ? "\u2014" : v));
    }
    row("case", c.id);
    row("backend", backend);
    row("outcome", r.outcome);
    row("verdict", r.verdict);
    row("expected", r.expected);
    row("phase", r.phase);
    row("expected_phase", r.expected_phase);
    row("signature", r.signature);
    row("duration_s", typeof r.duration_s === "number" ? r.duration_s.toFixed(3) + " s" : r.duration_s);
    row("expectation_source", r.expectation_source);
    row("artifacts", r.artifacts);
    if (r.reduced) {  // [link to model.py, "N ops: ..."]: python -m harness reduce --all
      dl.appendChild(el("dt", null, "reduced"));
      var link = el("a", null, r.reduced[1]);
      link.href = r.reduced[0];
      var dd = el("dd");
      dd.appendChild(link);
      dl.appendChild(dd);
    }
    var tags = full(r, "tags");
    row("tags", tags && tags.length ? tags.join(", ") : null);
    dBody.appendChild(dl);

    if (r.isolation) culprits(r.isolation);
    if (r.margins && Object.keys(r.margins).length) margins(r);

    var msg = messages[r.m] || "";
    var wrapBtn = el("button", null, "no wrap");
    wrapBtn.type = "button";
    section("Message", msg ? wrapBtn : null);
    if (msg) {
      var pre = el("pre", "msg wrap", msg);
      wrapBtn.addEventListener("click", function () {
        wrapBtn.textContent = pre.classList.toggle("wrap") ? "no wrap" : "wrap lines";
      });
      dBody.appendChild(pre);
    } else {
      dBody.appendChild(el("div", "muted", "no message"));
    }

    var copyBtn = el("button", null, "copy");
    copyBtn.type = "button";
    section("Reproduce", r.repro ? copyBtn : null);
    if (r.repro) {
      var cmd = el("pre", "cmd", r.repro);
      copyBtn.addEventListener("click", function () {
        var done = function () { copyBtn.textContent = "copied"; };
        var range = document.createRange();
        range.selectNodeContents(cmd);
        var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(r.repro).then(done, function () { copyBtn.textContent = "selected: press Ctrl+C"; });
        } else {
          try { document.execCommand("copy"); done(); } catch (e) { copyBtn.textContent = "selected: press Ctrl+C"; }
        }
      });
      dBody.appendChild(cmd);
    } else {
      dBody.appendChild(el("div", "muted", "not available for this record"));
    }

    section("Params");
    kvTable(full(r, "params"));
    section("Phase durations");
    var pd = r.phase_durations || {}, most = 0;
    Object.keys(pd).forEach(function (k) { if (typeof pd[k] === "number" && pd[k] > most) most = pd[k]; });
    kvTable(pd, function (td, v) {
      if (typeof v === "number") {
        var bar = el("span", "pbar");
        bar.style.width = Math.max(2, Math.round(160 * v / (most || 1))) + "px";
        td.appendChild(bar);
        td.appendChild(document.createTextNode(v.toFixed(4) + " s"));
      } else td.textContent = valueText(v);
    });
    section("Notes");
    kvTable(r.notes);

    details.hidden = false;
    dBody.scrollTop = 0;
  }

  function close() {
    details.hidden = true;
    if (selected) selected.classList.remove("sel");
    selected = null;
    if (location.hash) {
      try { history.replaceState(null, "", location.pathname + location.search); }
      catch (e) { location.hash = ""; }
    }
  }
  function go(i) {
    var r = recs[i];
    var hash = "#cell=" + encodeURIComponent(backends[r.b] + "/" + cases[r.c].id);
    if (location.hash === hash) open(i, true); else location.hash = hash;
  }
  function fromHash() {
    if (location.hash === "#speed" && fSpeed) { fSpeed.checked = true; colourBySpeed(); return; }   // a link to it
    var q = /^#q=(.*)$/.exec(location.hash);   // a link to a filtered view: #q=topk%20float32
    if (q) {
      try { fText.value = decodeURIComponent(q[1]); } catch (e) { return; }
      apply();
      return;
    }
    var m = /^#cell=(.*)$/.exec(location.hash);
    if (!m) { if (!details.hidden) close(); return; }
    var key;
    try { key = decodeURIComponent(m[1]); } catch (e) { return; }
    // Backend names have no "/", case ids do: the backend is everything before the first "/".
    var cut = key.indexOf("/"), b = backends.indexOf(key.slice(0, cut));
    var c = -1;
    for (var x = 0; x < cases.length; x++) if (cases[x].id === key.slice(cut + 1)) { c = x; break; }
    var i = byKey.get(b + "\u0000" + c);
    if (cut > 0 && i !== undefined) open(i, true);
  }

  tbody.addEventListener("click", function (ev) {
    var td = ev.target.closest("td[data-r]");
    if (td) go(Number(td.getAttribute("data-r")));
  });
  tbody.addEventListener("mouseover", function (ev) {
    var td = ev.target.closest("td[data-r]");
    if (!td || td.title) return;
    var r = recs[Number(td.getAttribute("data-r"))];
    var first = (messages[r.m] || "").split("\n")[0].slice(0, 200);
    var entry = r.expected_phase && r.expected_phase !== r.phase ? " (its entry expects " + r.expected_phase + ")" : "";
    var margin = worstMargin(r);
    td.title = backends[r.b] + ": " + (LABEL[r.outcome] || r.outcome) + (r.phase ? " in " + r.phase : "") + entry +
               " \u00B7 " + r.verdict + (margin === null ? "" : " \u00B7 margin " + margin) + (first ? "\n" + first : "");
  });
  document.getElementById("d-close").addEventListener("click", close);
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && !details.hidden) close();
  });
  window.addEventListener("hashchange", fromHash);

  // Keep the matrix header just under the sticky toolbar.
  function measure() { document.documentElement.style.setProperty("--toolbar-h", (toolbar.offsetHeight - 1) + "px"); }
  window.addEventListener("resize", measure);
  measure();

  arrows();        // the server wrote the rows sorted by case id
  apply();
  fromHash();
  void document.body.offsetHeight;
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));  // since navigation began
  document.body.setAttribute("data-ready", "1");
})();
