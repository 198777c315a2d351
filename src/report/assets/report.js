// rlbench's report.html: the over-time charts (uPlot) and the per-key
// timeline (SVG), drawn from the JSON the page carries (#rlbench-data).
// No network: everything is in the page.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rlbench-data").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  var COLORS = { a: "#2e7d32", r: "#ef6c00", u: "#9e9e9e" };
  var WORDS = { a: "admitted", r: "rejected", u: "unknown (error or timeout)" };

  function el(tag, attrs, parent) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function fmt(v, digits) {
    return v == null ? "–" : Number(v).toFixed(digits);
  }

  // Faults as shaded bands on a uPlot chart, named at the top.
  function shadeFaults(faults) {
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      faults.forEach(function (f) {
        var x0 = u.valToPos(f.from_s, "x", true);
        var x1 = u.valToPos(f.to_s, "x", true);
        ctx.fillStyle = "rgba(255,170,60,0.18)";
        ctx.fillRect(x0, u.bbox.top, Math.max(1, x1 - x0), u.bbox.height);
        ctx.fillStyle = "#a15c00";
        ctx.font = 11 * devicePixelRatio + "px sans-serif";
        ctx.fillText(f.name, x0 + 3, u.bbox.top + 12 * devicePixelRatio);
      });
      ctx.restore();
    };
  }

  // A band from 0 to `most` (what a correct limiter may reach) and the limit.
  function drawBand(win) {
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      var y = u.valToPos(win.most, "y", true);
      var y0 = u.valToPos(0, "y", true);
      ctx.fillStyle = "rgba(46,125,50,0.10)";
      ctx.fillRect(u.bbox.left, y, u.bbox.width, y0 - y);
      ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
      ctx.strokeStyle = "#222";
      ctx.lineWidth = devicePixelRatio;
      var yl = u.valToPos(win.limit, "y", true);
      ctx.beginPath();
      ctx.moveTo(u.bbox.left, yl);
      ctx.lineTo(u.bbox.left + u.bbox.width, yl);
      ctx.stroke();
      ctx.restore();
    };
  }

  // What a legend says when the pointer is not on the chart: the
  // series' total or its peak, so a glance reads something.
  function peak(values) {
    var m = null;
    values.forEach(function (v) { if (v != null && (m == null || v > m)) m = v; });
    return m;
  }

  // One chart: `series` items are { label, color, values, dash, idle,
  // unit, digits }; `idle` is the legend's text off the chart.
  function chart(box, title, x, series, faults, extra, stepped) {
    var div = document.createElement("div");
    div.className = "chart";
    div.dataset.points = x.length - (stepped ? 1 : 0);
    box.appendChild(div);
    var width = Math.max(480, Math.min(1000, box.clientWidth || 960));
    var fromZero = function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; };
    var opts = {
      title: title,
      width: width,
      height: 190,
      scales: { x: { time: false, range: function (u, min, max) { return [Math.min(0, min), max]; } },
        y: { range: (extra && extra.range) || fromZero } },
      cursor: { sync: { key: box.dataset.sync } },
      axes: [{ label: "s since the load started" }, { size: 60 }],
      series: [{ label: "at", value: function (u, v) { return v == null ? "" : fmt(v, 2) + " s"; } }].concat(series.map(function (s) {
        var o = {
          label: s.label, stroke: s.color, width: 1.5, dash: s.dash, points: { show: false },
          value: function (u, v, si, idx) {
            if (idx == null) return s.idle;
            return v == null ? "–" : fmt(v, s.digits || 0) + (s.unit || "");
          },
        };
        if (stepped) o.paths = uPlot.paths.stepped({ align: 1 });
        return o;
      })),
      hooks: { drawClear: [shadeFaults(faults)].concat(extra || []) },
    };
    // Where the axes begin, as drawn (read by the browser tests).
    opts.hooks.draw = [function (u) {
      div.dataset.xmin = u.scales.x.min;
      div.dataset.ymin = u.scales.y.min;
    }];
    return new uPlot(opts, [x].concat(series.map(function (s) { return s.values; })), div);
  }

  function caption(box, text) {
    var p = document.createElement("p");
    p.className = "meta";
    p.textContent = text;
    box.appendChild(p);
  }

  function sum(values) { return values.reduce(function (a, b) { return a + b; }, 0); }

  function same(a, b) {
    return a.length === b.length && a.every(function (v, j) { return v === b[j]; });
  }

  // A bucketed series drawn as steps: each bucket's value held from its
  // start to its end, the last one closed at the run's end.
  function held(values) { return values.length ? values.concat([values[values.length - 1]]) : values; }

  function overTime(arm, i) {
    var box = document.getElementById("over-time-" + i);
    if (!box || typeof uPlot === "undefined") return;
    box.dataset.sync = "arm" + i;
    var s = arm.series;
    var w = s.bucket_s || 1;
    var n = s.admitted.length;
    if (n === 0) {
      box.textContent = "No requests were sent.";
      return;
    }
    var x = [];
    for (var j = 0; j <= n; j++) x.push(+(j * w).toFixed(6));
    var width = w >= 1 ? fmt(w, 0) + " s" : fmt(w * 1000, 0) + " ms";
    var counted = function (label, color, counts, dash) {
      return {
        label: label, color: color, dash: dash, digits: 1, unit: "/s",
        values: held(counts.map(function (c) { return c / w; })),
        idle: sum(counts) + " in all",
      };
    };
    // Outcomes solid; an HTTP status class dashed when it says more than
    // the outcomes do (not all zero, not the same counts as one of them).
    var outcomes = [
      counted("admitted", COLORS.a, s.admitted),
      counted("rejected", COLORS.r, s.rejected),
      counted("errors", "#c62828", s.errors),
      counted("timeouts", "#6a1b9a", s.timeouts),
    ];
    var raw = [s.admitted, s.rejected, s.errors, s.timeouts];
    var statusColors = { "2xx": COLORS.a, "429": COLORS.r, "4xx": "#8d6e63", "5xx": "#c62828", other: "#1565c0", none: "#6a1b9a" };
    var statuses = s.status.filter(function (p) {
      return sum(p[1]) > 0 && !raw.some(function (r) { return same(r, p[1]); });
    }).map(function (p) {
      return counted("HTTP " + p[0], statusColors[p[0]] || "#555", p[1], [5, 3]);
    });
    chart(box, "Requests per second, by outcome" + (statuses.length ? " and (dashed) by HTTP status" : "") +
      " — buckets of " + width + " of send time", x, outcomes.concat(statuses), arm.faults, null, true);
    if (arm.window && arm.window.t.length) {
      var win = arm.window;
      var band = drawBand(win);
      var max = Math.max(win.most, peak(win.admitted) || 0) * 1.15;
      var hooks = [band];
      hooks.range = function () { return [0, max > 0 ? max : 1]; };
      chart(box, "Admits of " + win.key + " decided within any " + fmt(win.span_s, 2) + " s",
        win.t, [{ label: "admits in the span", color: "#1565c0", values: win.admitted, idle: "peak " + peak(win.admitted) }],
        arm.faults, hooks, false);
      caption(box, "Dashed: the limit, " + win.limit + ". Shaded: at most " + win.most +
        " for a correct limiter whose windows' alignment is unknown (" + win.why +
        "). Each admit counts once its whole [sent, answered] lies in the span, so a correct run stays inside the band; above it is a violation.");
    }
    if (arm.metrics && arm.metrics.length) {
      // The limiter's own counts (read every second) beside the trace's
      // requests sent by then (by send time: a guide, the verdict is the
      // summary's bound).
      var mt = arm.metrics.map(function (m) { return m.t_s; });
      var upTo = function (counts, t) {
        var total = 0;
        counts.forEach(function (c, j) { if ((j + 1) * w <= t + 1e-9) total += c; });
        return total;
      };
      var own = [];
      var line = function (label, color, values, dash) {
        var last = values.length ? values[values.length - 1] : null;
        return { label: label, color: color, dash: dash, digits: 0, unit: "", values: values,
          idle: last == null ? "none" : fmt(last, 0) + " in all" };
      };
      var trace = function (counts) { return mt.map(function (t) { return upTo(counts, t); }); };
      if (arm.metrics[0].admitted != null) {
        own.push(line("admitted (its counters)", COLORS.a, arm.metrics.map(function (m) { return m.admitted; })));
        own.push(line("admitted (the trace)", COLORS.a, trace(s.admitted), [5, 3]));
      }
      if (arm.metrics[0].rejected != null) {
        own.push(line("rejected (its counters)", COLORS.r, arm.metrics.map(function (m) { return m.rejected; })));
        own.push(line("rejected (the trace)", COLORS.r, trace(s.rejected), [5, 3]));
      }
      chart(box, "The limiter's own counts so far, read every second, and the trace's (dashed)",
        mt, own, arm.faults, null, false);
    }
    var ms = function (label, color, values, dash) {
      var p = peak(values);
      return { label: label, color: color, dash: dash, digits: 1, unit: " ms", values: held(values),
        idle: p == null ? "none" : "peak " + fmt(p, 1) + " ms" };
    };
    // A bucket nothing was sent in has no latency and no lag: a gap, not 0.
    var sent = s.admitted.map(function (a, j) { return a + s.rejected[j] + s.errors[j] + s.timeouts[j]; });
    var where = function (values) { return values.map(function (v, j) { return sent[j] > 0 ? v : null; }); };
    chart(box, "Latency from the intended send time (ms), per bucket of " + width, x, [
      ms("p50", "#1565c0", where(s.p50_ms)),
      ms("p99", "#ef6c00", where(s.p99_ms)),
      ms("max", "#c62828", where(s.max_ms), [4, 3]),
    ], arm.faults, null, true);
    chart(box, "Schedule lag: how late the generator sent (ms, the most per bucket of " + width + ")", x, [
      ms("lag max", "#6a1b9a", where(s.lag_max_ms)),
    ], arm.faults, null, true);
  }

  // ---- per-key timeline -------------------------------------------------

  var state = { arm: 0, key: 0, witness: -1, t0: 0, t1: 1 };
  var tl = document.getElementById("timeline");

  function armData() { return data.arms[state.arm]; }
  function keyData() { return armData().keys[state.key]; }

  function witnessesOf(arm, key) {
    return (arm.witnesses || []).filter(function (w) { return w.key === key.key; });
  }

  function fillKeys() {
    var sel = document.getElementById("timeline-key");
    var list = document.getElementById("timeline-keys");
    sel.innerHTML = "";
    list.innerHTML = "";
    armData().keys.forEach(function (k, j) {
      var o = document.createElement("option");
      o.value = j;
      var n = witnessesOf(armData(), k).length;
      o.textContent = k.key + (k.why === "busiest" ? " (busiest)" : "") + (n ? " — " + n + " witness" + (n > 1 ? "es" : "") : "");
      sel.appendChild(o);
      var d = document.createElement("option");
      d.value = k.key;
      list.appendChild(d);
    });
  }

  function select(armIndex, keyIndex, witnessIndex) {
    var armChanged = armIndex !== state.arm || !tl.dataset.filled;
    state.arm = armIndex;
    if (armChanged) {
      document.getElementById("timeline-arm").value = armIndex;
      fillKeys();
      tl.dataset.filled = "1";
    }
    state.key = keyIndex;
    document.getElementById("timeline-key").value = keyIndex;
    var k = keyData();
    if (!k) return render();
    var ws = witnessesOf(armData(), k);
    state.witness = witnessIndex != null ? witnessIndex : (ws.length ? 0 : -1);
    var span = armData().window ? armData().window.span_s : 1;
    var first = k.sent_ms.length ? k.sent_ms[0] / 1000 : 0;
    var last = k.done_ms.length ? Math.max.apply(null, k.done_ms) / 1000 : 1;
    if (state.witness >= 0) {
      // The witness's span, with room around it to see what came before.
      var w = ws[state.witness];
      var pad = Math.max((w.to_s - w.from_s) * 1.5, 0.02);
      state.t0 = Math.max(0, w.from_s - pad);
      state.t1 = w.to_s + pad;
    } else {
      state.t0 = Math.max(0, first);
      state.t1 = Math.min(last, first + 4 * span);
    }
    if (state.t1 <= state.t0) state.t1 = state.t0 + 1;
    render();
  }

  // Greedy rows inside a lane, so overlapping requests do not hide each other.
  function pack(ids, k) {
    var rows = [];
    var rowOf = {};
    ids.forEach(function (i) {
      var s = k.sent_ms[i], d = k.done_ms[i];
      for (var r = 0; r < rows.length; r++) {
        if (rows[r] < s) { rows[r] = d; rowOf[i] = r; return; }
      }
      if (rows.length < 8) { rows.push(d); rowOf[i] = rows.length - 1; }
      else { rowOf[i] = rows.length - 1; }
    });
    return { rows: Math.max(1, rows.length), rowOf: rowOf };
  }

  function render() {
    var svg = document.getElementById("timeline-svg");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var arm = armData(), k = keyData();
    var says = document.getElementById("timeline-witness");
    says.innerHTML = "";
    if (!k) {
      svg.setAttribute("height", 30);
      el("text", { x: 10, y: 20 }, svg).textContent = "No key's requests are on this page for this arm.";
      svg.dataset.requests = 0;
      return;
    }
    var W = Math.max(600, Math.min(1000, tl.clientWidth || 960));
    var left = 90, right = 10, top = 24;
    var t0 = state.t0, t1 = state.t1;
    var X = function (t) { return left + (t - t0) / (t1 - t0) * (W - left - right); };
    var replicas = [];
    k.replica.forEach(function (r) { if (replicas.indexOf(r) < 0) replicas.push(r); });
    replicas.sort(function (a, b) { return a - b; });
    var visible = [];
    for (var i = 0; i < k.seq.length; i++) {
      if (k.done_ms[i] / 1000 >= t0 && k.sent_ms[i] / 1000 <= t1) visible.push(i);
    }
    var lanes = replicas.map(function (r) {
      return pack(visible.filter(function (i) { return k.replica[i] === r; }), k);
    });
    var rowH = 9, y = top, laneY = [];
    lanes.forEach(function (l) { laneY.push(y); y += l.rows * rowH + 10; });
    var H = y + 6;
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    // Axis: ticks at round seconds.
    var step = Math.pow(10, Math.floor(Math.log10((t1 - t0) / 5)));
    if ((t1 - t0) / step > 10) step *= 2;
    for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      el("line", { x1: X(t), x2: X(t), y1: top - 4, y2: H, stroke: "#eee" }, svg);
      el("text", { x: X(t), y: 12, "text-anchor": "middle", "class": "tick" }, svg).textContent = +t.toFixed(3) + " s";
    }
    arm.faults.forEach(function (f) {
      if (f.to_s < t0 || f.from_s > t1) return;
      var a = X(Math.max(t0, f.from_s)), b = X(Math.min(t1, f.to_s));
      el("rect", { x: a, y: top - 6, width: Math.max(1, b - a), height: H - top + 6, fill: "rgba(255,170,60,0.18)", "class": "fault" }, svg);
      el("text", { x: a + 3, y: top + 4, "class": "tick" }, svg).textContent = f.name;
    });
    var ws = witnessesOf(arm, k);
    var w = state.witness >= 0 ? ws[state.witness] : null;
    var hits = {};
    if (w) {
      (w.requests || []).forEach(function (r) { hits[r.seq] = true; });
      if (w.reject) hits[w.reject.seq] = true;
      var a = X(w.from_s), b = X(w.to_s);
      el("rect", { x: a, y: top - 6, width: Math.max(2, b - a), height: H - top + 6, "class": "witness-span" }, svg);
    }
    replicas.forEach(function (r, li) {
      el("text", { x: 4, y: laneY[li] + 10, "class": "lane" }, svg).textContent = "replica " + r;
    });
    var drawn = 0, hit = 0;
    visible.forEach(function (i) {
      var li = replicas.indexOf(k.replica[i]);
      var row = lanes[li].rowOf[i];
      var a = X(k.sent_ms[i] / 1000), b = X(k.done_ms[i] / 1000);
      var o = k.outcome.charAt(i);
      var isHit = !!hits[k.seq[i]];
      var rect = el("rect", {
        x: a, y: laneY[li] + row * rowH, width: Math.max(2, b - a), height: rowH - 2,
        fill: COLORS[o], "class": "req" + (isHit ? " hit" : ""),
      }, svg);
      el("title", {}, rect).textContent = "seq " + k.seq[i] + " · replica " + k.replica[i] + " · " + WORDS[o] +
        " · sent " + fmt(k.sent_ms[i] / 1000, 4) + " s, done " + fmt(k.done_ms[i] / 1000, 4) + " s";
      drawn++;
      if (isHit) hit++;
    });
    svg.dataset.requests = drawn;
    svg.dataset.hits = hit;
    // The policy's window, following the pointer.
    var cursor = el("g", { "class": "cursor", visibility: "hidden" }, svg);
    var cursorRect = el("rect", { y: top - 6, height: H - top + 6, "class": "window" }, cursor);
    var cursorText = el("text", { y: H - 4, "class": "tick" }, cursor);
    svg.onmousemove = function (ev) {
      if (!arm.window) return;
      var box = svg.getBoundingClientRect();
      var px = (ev.clientX - box.left) * W / box.width;
      var at = t0 + (px - left) / (W - left - right) * (t1 - t0);
      var from = at - arm.window.span_s;
      var n = 0;
      for (var j = 0; j < k.seq.length; j++) {
        if (k.outcome.charAt(j) === "a" && k.sent_ms[j] / 1000 > from && k.done_ms[j] / 1000 <= at) n++;
      }
      cursor.setAttribute("visibility", "visible");
      cursorRect.setAttribute("x", X(from));
      cursorRect.setAttribute("width", Math.max(1, X(at) - X(from)));
      cursorText.setAttribute("x", Math.max(left, X(from)) + 2);
      cursorText.textContent = n + " admits decided inside (" + fmt(from, 3) + " s, " + fmt(at, 3) + " s]: limit " +
        arm.window.limit + ", a correct limiter may reach " + arm.window.most;
    };
    svg.onmouseleave = function () { cursor.setAttribute("visibility", "hidden"); };
    // Witnesses of this key, to pick from.
    ws.forEach(function (x, j) {
      var p = document.createElement("p");
      p.className = "witness-choice" + (j === state.witness ? " chosen" : "");
      var b = document.createElement("b");
      b.textContent = x.kind === "violation" ? "Violation" : "False reject";
      p.appendChild(b);
      p.appendChild(document.createTextNode(": " + x.rule));
      if (x.replicas) p.appendChild(document.createTextNode(". " + x.replicas.charAt(0).toUpperCase() + x.replicas.slice(1) + "."));
      p.onclick = function () { select(state.arm, state.key, j); };
      says.appendChild(p);
    });
    var note = document.getElementById("timeline-note");
    note.textContent = drawn + " of this key's requests in view" +
      (k.left_out ? " (" + k.left_out + " more are not carried by this page)" : "") +
      (w ? "; outlined: the " + hit + " requests of the witness shown" : "") +
      ". Scroll to zoom, drag to pan, hover for a request.";
  }

  function zoomAndPan(svg) {
    var drag = null;
    svg.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var box = svg.getBoundingClientRect();
      var f = (ev.clientX - box.left) / box.width;
      var at = state.t0 + f * (state.t1 - state.t0);
      var k = ev.deltaY > 0 ? 1.25 : 0.8;
      state.t0 = at - (at - state.t0) * k;
      state.t1 = at + (state.t1 - at) * k;
      render();
    }, { passive: false });
    svg.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, t0: state.t0, t1: state.t1 }; });
    window.addEventListener("mouseup", function () { drag = null; });
    svg.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var box = svg.getBoundingClientRect();
      var dt = (ev.clientX - drag.x) / box.width * (drag.t1 - drag.t0);
      state.t0 = drag.t0 - dt;
      state.t1 = drag.t1 - dt;
      render();
    });
  }

  function timeline() {
    if (!tl) return;
    var armSel = document.getElementById("timeline-arm");
    data.arms.forEach(function (a, i) {
      var o = document.createElement("option");
      o.value = i;
      o.textContent = a.name;
      armSel.appendChild(o);
    });
    armSel.onchange = function () { select(+armSel.value, 0); };
    document.getElementById("timeline-key").onchange = function (ev) { select(state.arm, +ev.target.value); };
    var search = document.getElementById("timeline-search");
    search.onchange = function () {
      var j = armData().keys.findIndex(function (k) { return k.key === search.value; });
      var msg = document.getElementById("timeline-note");
      if (j >= 0) select(state.arm, j);
      else msg.textContent = "\u201c" + search.value + "\u201d is not among the keys this page carries for " +
        armData().name + " (the busiest, those with witnesses, then by name); `rlbench explain RUN --key KEY` prints any key's proof.";
    };
    zoomAndPan(document.getElementById("timeline-svg"));
    // Links from the witnesses' list: show that one on the timeline.
    document.querySelectorAll("a.show-witness").forEach(function (a) {
      a.onclick = function () {
        var arm = +a.dataset.arm;
        var keys = data.arms[arm].keys;
        var j = keys.findIndex(function (k) { return k.key === a.dataset.key; });
        if (j < 0) return;
        var ws = witnessesOf(data.arms[arm], keys[j]);
        var w = ws.findIndex(function (x) { return x.rule === data.arms[arm].witnesses[+a.dataset.witness].rule; });
        select(arm, j, w < 0 ? null : w);
      };
    });
    // The first arm with a witness, else the first arm; its first key.
    var start = data.arms.findIndex(function (a) { return (a.witnesses || []).length > 0; });
    var armIndex = start < 0 ? 0 : start;
    var keyIndex = 0;
    if (start >= 0) {
      var wk = data.arms[start].witnesses[0].key;
      var found = data.arms[start].keys.findIndex(function (k) { return k.key === wk; });
      if (found >= 0) keyIndex = found;
    }
    select(armIndex, keyIndex);
  }

  data.arms.forEach(overTime);
  timeline();
  document.body.dataset.ready = "1";
})();
