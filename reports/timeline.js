/* The timeline panel of the HTML report (docs/report-html.md, "Timeline").
 * Embedded in the page at build time (embed_js.py). Each <div class="gp-tl"
 * data-src=ID> gets a canvas drawn from the JSON in the element ID:
 * host threads and GPU streams as rows, steps shaded, ranges as bands over
 * their thread's calls, kernels coloured by name. Outside the detail
 * window (and wherever it is left out) the whole run is drawn from the
 * aggregated columns. Strings from the trace reach the page only through
 * textContent and the canvas's fillText: never as markup. */
(function () {
  "use strict";
  var KIND = ["API call", "kernel", "memcpy", "memset", "sync", "range"];
  var COPY = ["copy", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "default"];
  var SYNC = ["sync", "event", "stream wait event", "stream", "context"];
  var LABEL_W = 190, AXIS_H = 34, ROW_H = 22, MIN_PX = 1;

  function fmt(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e10 ? 2 : 3) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e7 ? 2 : 3) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(a >= 1e4 ? 2 : 3) + " us";
    return Math.round(ns) + " ns";
  }

  /* An axis label: in the unit of the tick spacing, with the digits that
   * tell neighbouring ticks apart. */
  function tick(t, step) {
    var u = step >= 1e9 ? [1e9, " s"] : step >= 1e6 ? [1e6, " ms"] : step >= 1e3 ? [1e3, " us"] : [1, " ns"];
    var dec = Math.max(0, Math.ceil(-Math.log10(step / u[0]) - 1e-9));
    return (t / u[0]).toFixed(Math.min(dec, 6)) + u[1];
  }

  function bytes(b) {
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (b >= 1024 && i < u.length - 1) b /= 1024, i++;
    return (i ? b.toFixed(1) : b) + " " + u[i];
  }

  /* A stable colour per name. */
  var hueCache = {};
  function hue(name) {
    if (hueCache[name] !== undefined) return hueCache[name];
    var h = 2166136261;
    for (var i = 0; i < name.length; i++) {
      h ^= name.charCodeAt(i);
      h = Math.imul(h, 16777619) >>> 0;
    }
    return (hueCache[name] = h % 360);
  }

  function colour(kind, name, light) {
    if (kind === 2) return light ? "#90caf9" : "#1565c0";
    if (kind === 3) return light ? "#ce93d8" : "#7b1fa2";
    if (kind === 4) return light ? "#ef9a9a" : "#c62828";
    var h = hue(name || "?");
    if (kind === 1) return "hsl(" + h + ",65%," + (light ? 72 : 45) + "%)";
    if (kind === 5) return "hsla(" + h + ",55%,60%,0.55)";
    return "hsl(" + h + ",25%," + (light ? 80 : 58) + "%)";
  }

  function Timeline(root, d) {
    this.root = root;
    this.d = d;
    this.rows = d.rows;
    this.v0 = 0;
    this.v1 = Math.max(d.span, 1);
    this.sel = -1;
    this.hover = null;
    this.index();
    this.build();
    this.draw();
  }

  /* Events per row, sorted by start; device records by correlation id to
   * the call that launched them. */
  Timeline.prototype.index = function () {
    var d = this.d, ev = d.ev, n = ev.length / 8, byRow = [], api = {};
    for (var r = 0; r < this.rows.length; r++) byRow.push([]);
    for (var i = 0; i < n; i++) {
      var row = ev[8 * i];
      if (row < byRow.length) byRow[row].push(i);
      if (ev[8 * i + 1] === 0 && ev[8 * i + 5]) api[ev[8 * i + 5]] = i;
    }
    for (r = 0; r < byRow.length; r++)
      byRow[r].sort(function (a, b) { return ev[8 * a + 2] - ev[8 * b + 2]; });
    this.byRow = byRow;
    this.api = api;
    this.n = n;
  };

  Timeline.prototype.f = function (i, k) { return this.d.ev[8 * i + k]; };
  Timeline.prototype.name = function (i) {
    var k = this.f(i, 1), nm = this.f(i, 4);
    if (k === 2) return "memcpy " + (COPY[this.f(i, 7)] || "copy");
    if (k === 3) return "memset";
    if (k === 4) return "sync (" + (SYNC[this.f(i, 6)] || "sync") + ")";
    return nm >= 0 ? this.d.names[nm] : "?";
  };
  Timeline.prototype.launch = function (i) {
    var k = this.f(i, 1), c = this.f(i, 5);
    if (k < 1 || k > 4 || !c) return -1;
    var a = this.api[c];
    return a === undefined ? -1 : a;
  };

  Timeline.prototype.build = function () {
    var root = this.root, self = this;
    var wrap = document.createElement("div");
    var bar = document.createElement("div");
    bar.className = "sub gp-tl-range";
    this.rangeEl = bar;
    var c = document.createElement("canvas");
    c.tabIndex = 0;
    c.setAttribute("role", "img");
    c.setAttribute("aria-label", "timeline of host threads and GPU streams");
    this.canvas = c;
    var tip = document.createElement("div");
    tip.className = "gp-tl-tip";
    this.tip = tip;
    var sel = document.createElement("div");
    sel.className = "sub gp-tl-sel";
    this.selEl = sel;
    wrap.appendChild(bar);
    wrap.appendChild(c);
    wrap.appendChild(sel);
    root.appendChild(wrap);
    root.appendChild(tip);
    var W = Math.max(400, Math.min(1100, root.clientWidth || 1000));
    this.W = W;
    this.H = AXIS_H + this.rows.length * ROW_H + 4;
    var dpr = window.devicePixelRatio || 1;
    c.width = Math.round(W * dpr);
    c.height = Math.round(this.H * dpr);
    c.style.width = W + "px";
    c.style.height = this.H + "px";
    this.ctx = c.getContext("2d");
    this.ctx.scale(dpr, dpr);
    root.setAttribute("data-rows", String(this.rows.length));

    c.addEventListener("wheel", function (e) {
      e.preventDefault();
      var x = self.pos(e).x;
      self.zoom(e.deltaY < 0 ? 1 / 1.25 : 1.25, self.t(x));
    }, { passive: false });
    var drag = null;
    c.addEventListener("mousedown", function (e) {
      drag = { x: e.clientX, v0: self.v0, v1: self.v1, moved: false };
      c.focus();
    });
    window.addEventListener("mouseup", function (e) {
      if (drag && !drag.moved) self.click(self.pos(e));
      drag = null;
    });
    c.addEventListener("mousemove", function (e) {
      if (drag && e.buttons & 1) {
        var dx = e.clientX - drag.x;
        if (Math.abs(dx) > 2) drag.moved = true;
        if (drag.moved) {
          var per = (drag.v1 - drag.v0) / self.plotW();
          self.set(drag.v0 - dx * per, drag.v1 - dx * per);
        }
        return;
      }
      self.hoverAt(self.pos(e));
    });
    c.addEventListener("mouseleave", function () {
      self.hover = null;
      tip.style.display = "none";
    });
    c.addEventListener("keydown", function (e) {
      var span = self.v1 - self.v0, mid = (self.v0 + self.v1) / 2;
      if (e.ctrlKey || e.metaKey || e.altKey) return; /* the browser's */
      var k = e.key.length === 1 ? e.key.toLowerCase() : e.key; /* Shift, Caps Lock */
      if (k === "w" || k === "+" || k === "=") self.zoom(1 / 1.5, mid);
      else if (k === "s" || k === "-") self.zoom(1.5, mid);
      else if (k === "a" || k === "ArrowLeft") self.set(self.v0 - span / 5, self.v1 - span / 5);
      else if (k === "d" || k === "ArrowRight") self.set(self.v0 + span / 5, self.v1 + span / 5);
      else if (k === "0" || k === "Home") self.set(0, Math.max(self.d.span, 1));
      else return;
      e.preventDefault();
    });
  };

  Timeline.prototype.plotW = function () { return this.W - LABEL_W; };
  Timeline.prototype.x = function (t) {
    return LABEL_W + (t - this.v0) / (this.v1 - this.v0) * this.plotW();
  };
  Timeline.prototype.t = function (x) {
    return this.v0 + (x - LABEL_W) / this.plotW() * (this.v1 - this.v0);
  };
  Timeline.prototype.pos = function (e) {
    var b = this.canvas.getBoundingClientRect();
    return { x: e.clientX - b.left, y: e.clientY - b.top };
  };

  Timeline.prototype.set = function (a, b) {
    var span = Math.max(this.d.span, 1), len = b - a;
    if (len > span * 1.02) { a = 0; b = span; len = span; }
    if (len < 10) { var m = (a + b) / 2; a = m - 5; b = m + 5; len = 10; }
    if (a < -len * 0.5) { a = -len * 0.5; b = a + len; }
    if (b > span + len * 0.5) { b = span + len * 0.5; a = b - len; }
    this.v0 = a;
    this.v1 = b;
    this.draw();
  };
  Timeline.prototype.zoom = function (k, at) {
    this.set(at - (at - this.v0) * k, at + (this.v1 - at) * k);
  };

  /* ---- drawing ---- */

  Timeline.prototype.draw = function () {
    var g = this.ctx, d = this.d, W = this.W, H = this.H;
    g.clearRect(0, 0, W, H);
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    var det0 = d.detail.from, det1 = d.detail.to;
    /* row backgrounds and labels */
    for (var r = 0; r < this.rows.length; r++) {
      var y = AXIS_H + r * ROW_H;
      g.fillStyle = r % 2 ? "#fafafa" : "#f0f0f0";
      g.fillRect(0, y, W, ROW_H);
      g.fillStyle = this.rows[r][0] === "stream" ? "#0d47a1" : "#333";
      g.save();
      g.beginPath();
      g.rect(0, y, LABEL_W - 4, ROW_H);
      g.clip();
      g.fillText(this.rows[r][1], 4, y + ROW_H / 2);
      g.restore();
    }
    g.save();
    g.beginPath();
    g.rect(LABEL_W, 0, W - LABEL_W, H);
    g.clip();
    this.drawSteps(g);
    this.drawAgg(g, det0, det1);
    this.drawEvents(g);
    this.drawSel(g);
    /* the detail window on the axis */
    g.fillStyle = "#1565c0";
    var x0 = this.x(det0), x1 = this.x(det1);
    g.fillRect(x0, AXIS_H - 4, Math.max(x1 - x0, 1), 3);
    g.restore();
    this.drawAxis(g);
    var prec = (this.v1 - this.v0) / 100;
    var txt = "visible +" + tick(Math.max(this.v0, 0), prec) + " .. +" +
      tick(Math.min(this.v1, d.span), prec) + " (" + fmt(this.v1 - this.v0) +
      "); blue on the axis: full detail +" + fmt(det0) + " .. +" + fmt(det1);
    this.rangeEl.textContent = txt;
    this.root.setAttribute("data-view", Math.round(this.v0) + ".." + Math.round(this.v1));
  };

  Timeline.prototype.drawAxis = function (g) {
    var span = this.v1 - this.v0, step = Math.pow(10, Math.floor(Math.log10(span / 6)));
    if (span / step > 12) step *= 2;
    if (span / step > 12) step *= 2.5;
    g.fillStyle = "#fff";
    g.fillRect(0, 0, LABEL_W, AXIS_H - 5);
    g.strokeStyle = "#bbb";
    g.fillStyle = "#444";
    for (var t = Math.ceil(this.v0 / step) * step; t <= this.v1; t += step) {
      var x = this.x(t);
      if (x < LABEL_W) continue;
      g.beginPath();
      g.moveTo(x + 0.5, AXIS_H - 6);
      g.lineTo(x + 0.5, this.H);
      g.globalAlpha = 0.35;
      g.stroke();
      g.globalAlpha = 1;
      g.fillText("+" + tick(t, step), x + 2, 8);
    }
  };

  Timeline.prototype.drawSteps = function (g) {
    var s = this.d.steps;
    for (var i = 0; i < s.length; i += 3) {
      var x0 = this.x(s[i]), x1 = this.x(s[i] + s[i + 1]);
      if (x1 < LABEL_W || x0 > this.W) continue;
      g.fillStyle = (s[i + 2] % 2) ? "rgba(255,193,7,0.10)" : "rgba(255,193,7,0.22)";
      g.fillRect(x0, AXIS_H, Math.max(x1 - x0, 1), this.H - AXIS_H);
      if (x1 - x0 > 30) {
        g.fillStyle = "#8d6e00";
        g.fillText("step #" + s[i + 2], Math.max(x0, LABEL_W) + 2, 21);
      }
    }
  };

  /* The aggregated columns, where the detail does not reach. */
  Timeline.prototype.drawAgg = function (g, det0, det1) {
    var a = this.d.agg, w = a.w;
    for (var b = 0; b < a.n; b++) {
      var t0 = b * w, t1 = t0 + w;
      if (t1 < this.v0 || t0 > this.v1) continue;
      if (t0 >= det0 && t1 <= det1) continue;
      var x0 = this.x(t0), x1 = this.x(t1);
      for (var r = 0; r < this.rows.length; r++) {
        var pm = a.busy[r][b];
        if (!pm) continue;
        var dom = a.dom[r][b], nm = dom >= 0 ? this.d.names[dom] : "";
        var kind = this.rows[r][0] === "stream" ? (nm === "memcpy" ? 2 : nm === "memset" ? 3 : 1) : 0;
        var h = Math.max(2, (ROW_H - 4) * pm / 1000), y = AXIS_H + (r + 1) * ROW_H - 2 - h;
        g.fillStyle = colour(kind, nm, true);
        g.fillRect(x0, y, Math.max(x1 - x0, 1), h);
      }
    }
  };

  /* y and height of event i in its row */
  Timeline.prototype.box = function (i) {
    var y = AXIS_H + this.f(i, 0) * ROW_H;
    if (this.f(i, 1) === 5) return [y + 2 + Math.min(this.f(i, 6), 3) * 2, 3];
    if (this.rows[this.f(i, 0)][0] === "thread") return [y + 10, ROW_H - 12];
    /* a synchronisation record spans the kernels and copies it waits for:
     * a band under them, so that it hides none */
    if (this.f(i, 1) === 4) return [y + ROW_H - 5, 3];
    return [y + 3, ROW_H - 9];
  };

  Timeline.prototype.drawEvents = function (g) {
    for (var r = 0; r < this.byRow.length; r++) {
      var list = this.byRow[r], lastX = -1, lastK = -1;
      for (var j = 0; j < list.length; j++) {
        var i = list[j], s = this.f(i, 2), du = this.f(i, 3);
        if (s + du < this.v0 || s > this.v1) continue;
        var x0 = this.x(s), x1 = Math.max(this.x(s + du), x0 + MIN_PX);
        var k = this.f(i, 1);
        /* many events in one pixel: draw one */
        if (x1 - x0 <= MIN_PX && Math.floor(x0) === lastX && k === lastK) continue;
        lastX = Math.floor(x0);
        lastK = k;
        var bx = this.box(i);
        g.fillStyle = colour(k, this.name(i), false);
        g.fillRect(x0, bx[0], x1 - x0, bx[1]);
        if (x1 - x0 > 40 && k !== 5) {
          g.save();
          g.beginPath();
          g.rect(x0, bx[0], x1 - x0, bx[1]);
          g.clip();
          g.fillStyle = "#fff";
          g.fillText(this.name(i), x0 + 2, bx[0] + bx[1] / 2);
          g.restore();
        }
      }
    }
  };

  Timeline.prototype.outline = function (g, i, c) {
    var bx = this.box(i), x0 = this.x(this.f(i, 2));
    var x1 = Math.max(this.x(this.f(i, 2) + this.f(i, 3)), x0 + MIN_PX);
    g.strokeStyle = c;
    g.lineWidth = 2;
    g.strokeRect(x0 - 1, bx[0] - 1, x1 - x0 + 2, bx[1] + 2);
    return [x0, bx[0] + bx[1] / 2];
  };

  Timeline.prototype.drawSel = function (g) {
    if (this.sel < 0) return;
    var a = this.outline(g, this.sel, "#000"), l = this.launch(this.sel);
    if (l < 0) return;
    var b = this.outline(g, l, "#d50000");
    g.strokeStyle = "#d50000";
    g.lineWidth = 1.5;
    g.beginPath();
    g.moveTo(b[0], b[1]);
    g.lineTo(a[0], a[1]);
    g.stroke();
    g.lineWidth = 1;
  };

  /* ---- hover and click ---- */

  /* The event under p, or -1: the shortest one covering the point (with a
   * few pixels of slack for thin ones). */
  Timeline.prototype.hit = function (p) {
    var r = Math.floor((p.y - AXIS_H) / ROW_H);
    if (r < 0 || r >= this.rows.length || p.x < LABEL_W) return -1;
    var t = this.t(p.x), slack = 3 * (this.v1 - this.v0) / this.plotW();
    var list = this.byRow[r], best = -1, bestD = Infinity;
    for (var j = 0; j < list.length; j++) {
      var i = list[j], s = this.f(i, 2), du = this.f(i, 3);
      if (s - slack > t) break;
      if (t > s + du + slack) continue;
      var bx = this.box(i);
      if (p.y < bx[0] - 2 || p.y > bx[0] + bx[1] + 2) continue;
      if (du < bestD) { best = i; bestD = du; }
    }
    return best;
  };

  Timeline.prototype.describe = function (i) {
    var k = this.f(i, 1), lines = [this.name(i)];
    lines.push(KIND[k] + ", " + fmt(this.f(i, 3)) + " at +" + fmt(this.f(i, 2)));
    lines.push(this.rows[this.f(i, 0)][1]);
    if (k === 1) lines.push("grid " + this.f(i, 6) + " blocks x " + this.f(i, 7) + " threads");
    if ((k === 2 || k === 3 || k === 0) && this.f(i, 6)) lines.push(bytes(this.f(i, 6)));
    if (k === 0 && this.f(i, 7)) lines.push("returned error " + this.f(i, 7));
    var l = this.launch(i);
    if (l >= 0)
      lines.push("launched by " + this.name(l) + " on " + this.rows[this.f(l, 0)][1] +
        " at +" + fmt(this.f(l, 2)));
    else if (k >= 1 && k <= 4 && this.f(i, 5))
      lines.push("launching call outside the detail window");
    return lines.join("\n");
  };

  Timeline.prototype.describeAgg = function (p) {
    var r = Math.floor((p.y - AXIS_H) / ROW_H), a = this.d.agg;
    if (r < 0 || r >= this.rows.length || p.x < LABEL_W) return null;
    var t = this.t(p.x), b = Math.floor(t / a.w);
    if (b < 0 || b >= a.n) return null;
    if (t >= this.d.detail.from && t < this.d.detail.to) return null;
    var pm = a.busy[r][b], dom = a.dom[r][b];
    return this.rows[r][1] + "\n+" + fmt(b * a.w) + " .. +" + fmt((b + 1) * a.w) +
      " (aggregated): busy " + (pm / 10).toFixed(1) + "%" +
      (dom >= 0 ? "\nmostly " + this.d.names[dom] : "");
  };

  Timeline.prototype.hoverAt = function (p) {
    var i = this.hit(p), text = i >= 0 ? this.describe(i) : this.describeAgg(p);
    this.hover = i;
    if (!text) {
      this.tip.style.display = "none";
      return;
    }
    this.tip.textContent = text;
    this.tip.style.display = "block";
    var left = this.canvas.offsetLeft + p.x + 14, top = this.canvas.offsetTop + p.y + 14;
    if (left + 360 > this.W) left = Math.max(0, left - 380);
    this.tip.style.left = left + "px";
    this.tip.style.top = top + "px";
  };

  Timeline.prototype.click = function (p) {
    var i = this.hit(p), k = i >= 0 ? this.f(i, 1) : -1;
    this.sel = k >= 1 && k <= 4 ? i : -1;
    if (this.sel < 0) {
      this.selEl.textContent = "";
    } else {
      var l = this.launch(i);
      this.selEl.textContent = "selected: " + this.name(i) + " at +" + fmt(this.f(i, 2)) +
        (l >= 0 ? "; launched by " + this.name(l) + " at +" + fmt(this.f(l, 2)) +
          " (outlined in red)" : "; its launching call is not in the detail");
    }
    this.draw();
  };

  /* For tests and the curious: the page position of the first event of
   * that name in view. */
  Timeline.prototype.locate = function (name) {
    for (var i = 0; i < this.n; i++) {
      if (this.name(i) !== name) continue;
      var s = this.f(i, 2), du = this.f(i, 3);
      if (s + du < this.v0 || s > this.v1) continue;
      var x0 = Math.max(this.x(s), LABEL_W), x1 = Math.min(this.x(s + du), this.W);
      var bx = this.box(i), b = this.canvas.getBoundingClientRect();
      return { x: b.left + (x0 + Math.max(x1, x0 + 1)) / 2, y: b.top + bx[0] + bx[1] / 2 };
    }
    return null;
  };

  var panels = document.querySelectorAll(".gp-tl");
  for (var p = 0; p < panels.length; p++) {
    var el = panels[p], data = document.getElementById(el.getAttribute("data-src"));
    if (!data) continue;
    try {
      el.gpTimeline = new Timeline(el, JSON.parse(data.textContent));
    } catch (e) {
      var msg = document.createElement("p");
      msg.className = "bad";
      msg.textContent = "The timeline could not be drawn: " + e.message;
      el.appendChild(msg);
    }
  }
})();
