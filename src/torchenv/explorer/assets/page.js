"use strict";
// The torchenv explorer. Every answer shown here was computed by torchenv's resolver when the
// page was generated; this script only reads what the user typed, finds the class it belongs
// to in the tables, and shows the stored answer with the typed values filled in.

(function () {
  const $ = (id) => document.getElementById(id);
  // a machine whose answer is a full fit with torchvision: what most visitors have in mind
  const DEFAULTS = { platform: "linux-x86_64", python: "3.12", gpu: "RTX 4090",
                     driver: "570.86.10", torch: "" };
  let data = null;
  let renders = 0;

  // ---- reading what the user typed (the same normalisation as the CLI's flags) ----

  const DRIVER_RE = /^\d{2,4}(\.\d{1,3}){1,2}$/;
  const CC_RE = /^(?:sm_?|compute_)?(\d{1,2})\.?(\d)([af]?)$/;
  const GFX_RE = /^gfx[0-9a-f]{3,4}$/;
  // one clause of a PEP 440 specifier over plain releases; anything else (pre-releases, epochs,
  // local versions, ===) is left to the command line
  const CLAUSE_RE = /^\s*(~=|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?\s*$/;
  const SPEC_MAX = 256;  // the longest specifier the CLI reads

  function normalizeDriver(text) {
    const t = String(text).trim();
    return DRIVER_RE.test(t) ? t : null;
  }
  function normalizeCc(text) {
    const m = CC_RE.exec(String(text).trim().toLowerCase());
    if (!m) return null;
    const major = parseInt(m[1], 10);
    if (major < data.ccMajors[0] || major > data.ccMajors[1]) return null;
    return `${major}.${m[2]}${m[3]}`;
  }
  function normalizeGfx(text) {
    const t = String(text).trim().toLowerCase().split(":")[0];
    return GFX_RE.test(t) ? t : null;
  }
  function gpuName(text) {
    let t = String(text).toLowerCase().trim();
    for (const prefix of ["nvidia ", "amd "]) if (t.startsWith(prefix)) t = t.slice(prefix.length);
    return t.split(/\s+/).filter(Boolean).join(" ");
  }
  // words of a GPU name that tell no model apart
  const BRANDS = new Set(["nvidia", "amd", "geforce", "radeon", "tesla", "instinct"]);
  function gpuWords(text) {
    return String(text).toLowerCase().split(/[^a-z0-9]+/).filter((w) => w && !BRANDS.has(w));
  }
  // the typed words appear in a row among a name's words, the last one possibly cut short
  function wordsMatch(typed, words) {
    for (let start = 0; start + typed.length <= words.length; start++) {
      if (typed.every((w, i) => (i === typed.length - 1 ? words[start + i].startsWith(w)
                                                        : words[start + i] === w))) return true;
    }
    return false;
  }
  function catalogEntries() {
    return [...data.catalog.nvidia.map((g) => ({ kind: "nvidia", key: g.cc, g })),
            ...data.catalog.amd.map((g) => ({ kind: "amd", key: g.gfx, g }))];
  }
  function fromEntries(found, text) {
    const keys = new Set(found.map((e) => `${e.kind}|${e.key}`));
    const names = found.map((e) => e.g.name);
    if (keys.size > 1) return { kind: "ambiguous", text, names };
    const e = found[0];
    const gpu = { kind: e.kind, name: found.length === 1 ? e.g.name : null, names };
    if (e.kind === "nvidia") gpu.cc = e.g.cc; else gpu.gfx = e.g.gfx;
    return gpu;
  }
  function readGpu(text) {
    const t = String(text).trim();
    if (!t) return { kind: "none" };
    const entries = catalogEntries();
    // a name or alias of the catalog, as NVML, nvidia-smi or amd-smi print it
    const wanted = gpuName(t);
    const exact = entries.filter((e) => [e.g.name, ...e.g.aliases].some((n) => gpuName(n) === wanted));
    if (exact.length) return fromEntries(exact, t);
    const gfx = normalizeGfx(t);
    if (gfx) return { kind: "amd", gfx };
    const cc = normalizeCc(t);
    if (cc) return { kind: "nvidia", cc };
    // a name as people say it: A100, RTX 4090, 4090, MI300X; taken when every model it can
    // mean has one compute capability (gfx target), else the models are listed
    const typedWords = gpuWords(t);
    const found = typedWords.length ? entries.filter((e) =>
      [e.g.name, ...e.g.aliases].some((n) => wordsMatch(typedWords, gpuWords(n)))) : [];
    if (found.length) return fromEntries(found, t);
    return { kind: "bad", text: t };
  }

  // ---- the torch specifier, read as the CLI reads it (packaging's SpecifierSet) ----

  function readSpec(text) {
    const t = String(text).trim();
    if (!t) return { kind: "any" };
    let spec = t;
    if (/^[0-9]+\.[0-9]+$/.test(t)) spec = `==${t}.*`;  // a bare X.Y is the series
    else if (/^[0-9]/.test(t)) spec = `==${t}`;          // any other version is that release
    const clauses = [];
    if (t.length > SPEC_MAX || !/^[\x00-\x7f]*$/.test(t)) return { kind: "other", text: t };
    for (const part of spec.split(",")) {
      if (!part.trim()) continue;
      const m = CLAUSE_RE.exec(part);
      if (!m) return { kind: "other", text: t };
      const [, op, version, star] = m;
      const release = version.split(".").map((d) => BigInt(d));
      if (star && op !== "==" && op !== "!=") return { kind: "other", text: t };
      if (op === "~=" && release.length < 2) return { kind: "other", text: t };
      clauses.push({ op, release, star: Boolean(star) });
    }
    return { kind: "set", text: t, clauses };
  }
  function releaseOf(version) { return String(version).split(".").map((d) => BigInt(d)); }
  function compareReleases(a, b) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const x = a[i] ?? 0n, y = b[i] ?? 0n;
      if (x !== y) return x < y ? -1 : 1;
    }
    return 0;
  }
  function startsWith(prefix, v) { return prefix.every((p, i) => (v[i] ?? 0n) === p); }
  function clauseHolds(c, v) {
    const order = compareReleases(v, c.release);
    switch (c.op) {
      case "==": return c.star ? startsWith(c.release, v) : order === 0;
      case "!=": return !(c.star ? startsWith(c.release, v) : order === 0);
      case "<=": return order <= 0;
      case ">=": return order >= 0;
      case "<": return order < 0;
      case ">": return order > 0;
      default: return order >= 0 && startsWith(c.release.slice(0, -1), v);  // ~=
    }
  }
  function specAdmits(spec, version) {
    const v = releaseOf(version);
    return spec.clauses.every((c) => clauseHolds(c, v));
  }
  // Python's repr() of a string, as the resolver's messages quote the specifier
  function pyRepr(text) {
    const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
    let out = quote;
    for (const ch of text) {
      const code = ch.codePointAt(0);
      if (ch === "\\" || ch === quote) out += "\\" + ch;
      else if (ch === "\t") out += "\\t";
      else if (ch === "\n") out += "\\n";
      else if (ch === "\r") out += "\\r";
      else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
      else out += ch;
    }
    return out + quote;
  }
  // the window's set of releases a specifier admits, named as the tables name them
  function specKey(w, spec) {
    const admitted = data.releases.filter((r) => specAdmits(spec, r));
    const inside = w.releases.filter((r) => admitted.includes(r));
    if (!inside.length) return admitted.length ? "outside" : "none";
    const same = (a, b) => a.length === b.length && a.every((x) => b.includes(x));
    return Object.keys(w.sets).find((k) => same(w.sets[k], inside)) ?? null;
  }

  // ---- finding the class ----

  function versionKey(text) { return String(text).split(".").map((p) => parseInt(p, 10)); }
  function compareKeys(a, b) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
    return a.length - b.length;
  }
  function driverClass(floors, driver) {
    if (driver === null) return -1;
    const key = versionKey(driver);
    let n = 0;
    for (const f of floors) if (compareKeys(versionKey(f), key) <= 0) n++;
    return n;
  }
  function ccIndex(cc) {
    const [major, minor] = cc.replace(/[af]$/, "").split(".").map((p) => parseInt(p, 10));
    return (major - data.ccMajors[0]) * 10 + minor;
  }
  function capabilityClass(classes, cc) { return parseInt(classes.cc[ccIndex(cc)], 36); }
  function windowSlot(w, gpu, driver) {
    if (gpu.kind === "none") return 0;
    const per = w.drivers.length + 2;
    if (gpu.kind === "nvidia") return 1 + capabilityClass(w, gpu.cc) * per + driverClass(w.drivers, driver) + 1;
    return 1 + w.ccCount * per + (w.gfx[gpu.gfx] ?? 0);
  }
  function columnSlot(col, gpu, driver) {
    if (gpu.kind === "nvidia") {
      return capabilityClass(col, gpu.cc) * (col.drivers.length + 2) + driverClass(col.drivers, driver) + 1;
    }
    return col.gfx[gpu.gfx] ?? 0;
  }
  function typed(gpu, driver, spec) {
    const cc = gpu.cc || "";
    const sm = "sm_" + cc.replace(".", "");
    // the specifier goes into JSON text: escaped as a JSON string's inside
    const quoted = JSON.stringify(pyRepr(spec && spec.text ? spec.text : "")).slice(1, -1);
    return { driver: driver || "", cc, sm, smbase: sm.replace(/[af]$/, ""), gfx: gpu.gfx || "",
             spec: quoted };
  }
  function fillText(text, values) {
    if (!text.includes("{{")) return text;
    for (const [name, token] of Object.entries(data.tokens)) text = text.split(token).join(values[name]);
    return text;
  }
  function fill(value, gpu, driver, spec) {
    return JSON.parse(fillText(JSON.stringify(value), typed(gpu, driver, spec)));
  }

  // ---- the state of the form ----

  function current() {
    const platform = $("platform").value;
    const python = $("python").value;
    const gpu = readGpu($("gpu").value);
    const driverText = $("driver").value.trim();
    const driver = driverText ? normalizeDriver(driverText) : null;
    const spec = readSpec($("torch").value);
    return { platform, python, gpu, driverText, driver, spec };
  }

  function cliCommand(s) {
    const parts = ["torchenv", "resolve", "--platform", s.platform, "--python", s.python];
    if (s.gpu.kind === "nvidia") {
      if (s.driver) parts.push("--driver", s.driver);
      parts.push("--gpu", s.gpu.cc);
    } else if (s.gpu.kind === "amd") {
      parts.push("--rocm-arch", s.gpu.gfx);
    } else {
      parts.push("--no-gpu");
    }
    if (s.spec.kind !== "any") parts.push("--torch", `'${s.spec.text.replace(/'/g, "'\\''")}'`);
    return parts.join(" ");
  }

  // ---- rendering ----

  // A link from the data is followed only to an http(s) page: the matrix refuses any other
  // URL, and this holds for a page built from data that did not pass through it.
  function webLink(url) {
    return typeof url === "string" && /^https?:\/\/[^\s\/?#]/i.test(url) ? url : null;
  }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v0] of Object.entries(attrs || {})) {
      const v = k === "href" ? webLink(v0) : v0;
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  function code(text) { return el("code", { text }); }

  function renderReads(s) {
    const gpuRead = $("gpu-read");
    gpuRead.className = "read";
    const models = (names) => (names.length > 6 ? [...names.slice(0, 6), "…"] : names).join(", ");
    if (s.gpu.kind === "nvidia") {
      gpuRead.textContent = (s.gpu.name ? `NVIDIA ${s.gpu.name.replace(/^NVIDIA /, "")}: `
        : s.gpu.names ? `${models(s.gpu.names)}: ` : "NVIDIA GPU, ") + `compute capability ${s.gpu.cc}`;
    } else if (s.gpu.kind === "amd") {
      gpuRead.textContent = (s.gpu.name ? `AMD ${s.gpu.name.replace(/^AMD /, "")}: `
        : s.gpu.names ? `${models(s.gpu.names)}: ` : "AMD GPU, ") + `target ${s.gpu.gfx}`;
    } else if (s.gpu.kind === "ambiguous") {
      gpuRead.textContent = `'${s.gpu.text}' can be any of: ${models(s.gpu.names)} — type more of the name`;
      gpuRead.className = "read bad";
    } else if (s.gpu.kind === "bad") {
      gpuRead.textContent = `'${s.gpu.text}' is neither a GPU in the catalog, a compute capability nor a gfx target`;
      gpuRead.className = "read bad";
    } else {
      gpuRead.textContent = "no GPU";
    }
    const driverRead = $("driver-read");
    driverRead.className = "read";
    if (s.driverText && s.driver === null) {
      driverRead.textContent = `'${s.driverText}' is not an NVIDIA driver version`;
      driverRead.className = "read bad";
    } else if (s.driverText && s.gpu.kind !== "nvidia") {
      driverRead.textContent = "used only with an NVIDIA GPU";
    } else if (!s.driverText && s.gpu.kind === "nvidia") {
      driverRead.textContent = "not known";
    } else {
      driverRead.textContent = "";
    }
  }

  function problem(message) {
    return [el("p", { class: "problem", id: "d-unanswered", text: message })];
  }

  function decide(s) {
    const body = $("decision-body");
    body.replaceChildren();
    const w = data.windows[`${s.platform}|${s.python}`];
    if (s.gpu.kind === "bad") {
      body.dataset.state = "input";
      body.append(...problem("Fix the GPU field: give a GPU name, a compute capability or a gfx target."));
      return null;
    }
    if (s.gpu.kind === "ambiguous") {
      body.dataset.state = "input";
      body.append(...problem(`Say which GPU: '${s.gpu.text}' names models with different ` +
        `compute capabilities or targets (${s.gpu.names.join(", ")}).`));
      return null;
    }
    if (s.driverText && s.driver === null && s.gpu.kind === "nvidia") {
      body.dataset.state = "input";
      body.append(...problem("Fix the driver field: give the version as nvidia-smi prints it, e.g. 550.54.15."));
      return null;
    }
    const driver = s.gpu.kind === "nvidia" ? s.driver : null;
    const slot = windowSlot(w, s.gpu, driver);
    let ids = w.any;
    if (s.spec.kind !== "any") {
      const key = s.spec.kind === "set" ? specKey(w, s.spec) : null;
      if (key !== null && w.specs[key]) {
        ids = w.specs[key];
      } else {
        body.dataset.state = "unanswered";
        const series = data.specifiers.filter((m) => w.sets[m]);
        const offered = series.length ? series.map((m) => `==${m}.*`).join(", ") : "none";
        body.append(...problem(
          `This page cannot answer exactly for --torch '${s.spec.text}'. It holds answers for ` +
          `these release series (and each of their releases) with Python ${s.python} on ` +
          `${s.platform}: ${offered}, and for every specifier that admits no release with a ` +
          "wheel there (a page made with 'torchenv matrix html --specifiers all' holds every " +
          "series). Run the command above for any other specifier."));
        return null;
      }
    }
    const plan = fill(data.plans[ids[slot]], s.gpu, driver, s.spec);
    if (plan.torch === null) renderNoMatch(body, plan);
    else renderPlan(body, plan);
    return plan;
  }

  function value(v) { return v === null || v === undefined ? "—" : String(v); }
  function fact(dl, id, label, v) {
    dl.append(el("dt", { text: label }),
              el("dd", { id, "data-null": v === null || v === undefined ? "true" : null, text: value(v) }));
  }
  function list(id, cls, items) {
    return el("ul", { id, class: cls }, items.map((t) => el("li", { text: t })));
  }

  function renderPlan(body, plan) {
    body.dataset.state = "ok";
    body.append(el("p", { class: "headline" },
      el("strong", { id: "d-headline", text: `torch ${plan.torch} ${plan.variant}` }),
      el("span", { class: `badge ${plan.level}`, text: plan.level === "full" ? "fully compatible" : "works with warnings" })));
    const dl = el("dl", { class: "facts" });
    fact(dl, "d-torch", "torch", plan.torch);
    fact(dl, "d-torchvision", "torchvision", plan.torchvision);
    fact(dl, "d-torchaudio", "torchaudio", plan.torchaudio);
    fact(dl, "d-variant", "variant", plan.variant);
    fact(dl, "d-level", "level", plan.level);
    fact(dl, "d-accelerator", "accelerator", plan.accelerator);
    fact(dl, "d-index", "index", plan.index_url === null ? "PyPI" : plan.index_url);
    const ev = plan.evidence || {};
    fact(dl, "d-evidence", "GPU support", ev.arch === "n/a" || !ev.arch ? "n/a" :
      ev.arch + (ev.arch_rule ? ` (${ev.arch_rule})` : ""));
    body.append(dl);
    if (plan.warnings.length) {
      body.append(el("h3", { text: "Warnings" }), list("d-warnings", "warnings", plan.warnings));
    }
    body.append(el("h3", { text: "Install" }));
    const table = el("table", { class: "commands" });
    for (const name of ["pip", "uv", "conda", "pixi"]) {
      const id = `cmd-${name}`;
      table.append(el("tr", {},
        el("th", { scope: "row", text: name }),
        el("td", {}, el("code", { id, text: plan.commands[name] })),
        el("td", { class: "act" }, el("button", { type: "button", class: "copy", "data-copy": id,
                                                 "aria-label": `Copy the ${name} command`, text: "Copy" }))));
    }
    body.append(table);
    body.append(el("h3", { text: "Why" }), list("d-reasons", "reasons", plan.reasons));
    body.append(el("h3", { text: "Best evidence-backed alternative" }));
    const alt = plan.evidence_alternative;
    let altText;
    if (alt) {
      altText = `torch ${alt.torch} ${alt.variant}: support ${alt.evidence}` + (alt.rule ? ` (${alt.rule})` : "") +
        ` — --torch ==${alt.torch} --variant ${alt.variant}`;
    } else if (ev.arch === "unknown" && plan.accelerator !== "cpu") {
      altText = "none: no build in the matrix has confirmed or inferred support for this GPU";
    } else if (ev.arch === "confirmed" || ev.arch === "inferred") {
      altText = `the decision itself: its support for this GPU is ${ev.arch}`;
    } else {
      altText = "not applicable: no GPU decides this build";
    }
    body.append(el("p", { id: "d-evidence-alternative", text: altText }));
    const extra = [];
    if (plan.confirmed_alternative) {
      const c = plan.confirmed_alternative;
      extra.push(`Newest build that fits without warnings: torch ${c.torch} ${c.variant} (--torch ==${c.torch} --variant ${c.variant}).`);
    }
    if (plan.newer_unverified) {
      const n = plan.newer_unverified;
      extra.push(`Newer, but support for this GPU unknown: torch ${n.torch} ${n.variant}.`);
    }
    if (extra.length) body.append(list("d-extra", "extra", extra));
    body.append(el("p", { class: "note", text: "Then prove it works: torchenv validate" }));
  }

  function renderNoMatch(body, plan) {
    body.dataset.state = "nomatch";
    body.append(el("p", { class: "headline" },
      el("strong", { id: "d-headline", text: "Nothing fits" }),
      el("span", { class: "badge none", text: "exit 3" })));
    body.append(el("p", { id: "d-error", text: plan.error }));
    if (plan.fixes.length) body.append(el("h3", { text: "What would fix it" }), list("d-fixes", "fixes", plan.fixes));
  }

  // ---- the grid ----

  const KIND_ORDER = { cpu: 0, cu: 1, rocm: 2, xpu: 3 };
  // a verdict is told by a mark as well as by colour
  const MARKS = { ok: "✓", warn: "!", no: "✕" };
  const words = { ok: "runs", warn: "runs with a warning", no: "does not run" };
  function variantKey(name) {
    const kind = name === "cpu" ? "cpu" : name === "xpu" ? "xpu" : name.startsWith("rocm") ? "rocm" : "cu";
    const digits = (name.match(/\d+/g) || []).map((d) => parseInt(d, 10));
    return [KIND_ORDER[kind], ...digits];
  }

  function verdictsFor(s) {
    const g = data.grid[s.platform];
    const wheel = g.wheel[s.python];
    const driver = s.gpu.kind === "nvidia" ? s.driver : null;
    const values = typed(s.gpu, driver);
    const out = new Array(g.cells.length).fill(null);
    const kind = s.gpu.kind === "bad" || s.gpu.kind === "ambiguous" ? "none" : s.gpu.kind;
    for (const [name, col] of Object.entries(g.columns)) {
      const own = (kind === "nvidia" && /^cu\d+$/.test(name)) || (kind === "amd" && name.startsWith("rocm"));
      if (!own) continue;
      const row = col.rows[col.slots[columnSlot(col, s.gpu, driver)]];
      col.cells.forEach((cell, i) => { out[cell] = row[i]; });
    }
    for (let i = 0; i < g.cells.length; i++) {
      if (wheel[i] >= 0) out[i] = wheel[i];
      else if (out[i] === null) out[i] = g.fixed[kind][i];
    }
    return out.map((id) => {
      if (id === null || id < 0) return null;
      const [status, evidence, text] = data.verdicts[id];
      return [status, evidence, fillText(text, values)];
    });
  }

  // the table of a (platform, Python) is built once; each answer only repaints its cells
  let gridKey = null;
  let gridCells = [];   // rows of cell elements (null where a release has no such build)
  let cellIndex = [];   // rows of indices into the platform's cells
  function buildGrid(s) {
    const g = data.grid[s.platform];
    const names = [...new Set(g.cells.map((c) => c[1]))].sort((a, b) => compareKeys(variantKey(a), variantKey(b)));
    const releases = [...new Set(g.cells.map((c) => c[0]))];
    const at = new Map(g.cells.map((c, i) => [`${c[0]}|${c[1]}`, i]));
    const table = el("table", { class: "grid", role: "grid", "aria-label": `Every build for ${s.platform}, Python ${s.python}` });
    table.append(el("thead", {}, el("tr", { role: "row" },
      el("th", { scope: "col", role: "columnheader", text: "torch" }),
      names.map((n) => el("th", { scope: "col", role: "columnheader", text: n })))));
    const tbody = el("tbody");
    gridCells = [];
    cellIndex = [];
    for (const torch of releases) {
      const tr = el("tr", { role: "row" }, el("th", { scope: "row", role: "rowheader", text: torch }));
      const rowCells = [];
      const rowIndex = [];
      for (const name of names) {
        const i = at.get(`${torch}|${name}`);
        if (i === undefined) {
          tr.append(el("td", { role: "gridcell" }));
          rowCells.push(null);
          rowIndex.push(null);
          continue;
        }
        const span = el("span", { class: "cell", tabindex: "-1", "data-torch": torch, "data-variant": name });
        tr.append(el("td", { role: "gridcell" }, span));
        rowCells.push(span);
        rowIndex.push(i);
      }
      tbody.append(tr);
      gridCells.push(rowCells);
      cellIndex.push(rowIndex);
    }
    table.append(tbody);
    $("grid-scroller").replaceChildren(table);
    gridKey = `${s.platform}|${s.python}`;
  }

  function renderGrid(s, plan) {
    if (gridKey !== `${s.platform}|${s.python}`) buildGrid(s);
    const verdicts = s.gpu.kind === "bad" || s.gpu.kind === "ambiguous" ? null : verdictsFor(s);
    let focusable = null;
    let first = null;
    gridCells.forEach((row, r) => row.forEach((span, c) => {
      if (!span) return;
      const v = verdicts ? verdicts[cellIndex[r][c]] : null;
      const torch = span.dataset.torch;
      const name = span.dataset.variant;
      if (!first) first = span;
      if (!v) {
        span.className = "cell";
        span.textContent = "";
        span.title = `torch ${torch} ${name}: no answer until the machine is described`;
        span.setAttribute("aria-label", span.title);
        return;
      }
      const [status, evidence, text] = v;
      const chosen = Boolean(plan && plan.torch === torch && plan.variant === name);
      const line = `torch ${torch} ${name}: ${words[status]}; evidence ${evidence}. ${text}`;
      span.className = `cell ${status}${chosen ? " chosen" : ""}`;
      span.textContent = MARKS[status] + (evidence[0] || "?").toUpperCase();
      span.title = line;
      span.setAttribute("aria-label", (chosen ? "the decision: " : "") + line);
      span.dataset.status = status;
      span.dataset.evidence = evidence;
      span.dataset.reason = text;
      if (chosen) focusable = span;
      if (span.tabIndex === 0 && span !== document.activeElement) span.tabIndex = -1;
    }));
    const holder = gridCells.flat().find((x) => x && x === document.activeElement);
    if (!holder) (focusable || first || { tabIndex: 0 }).tabIndex = 0;
    // the reason on show is the shown cell's for this machine, or none
    if (shownCell && shownCell.isConnected) showCell(shownCell);
    else $("cell-detail").textContent = "\u200b";
  }

  let shownCell = null;
  function showCell(span) {
    shownCell = span;
    $("cell-detail").textContent = span.getAttribute("title");
  }
  function moveFocus(span, dr, dc) {
    let r = gridCells.findIndex((row) => row.includes(span));
    let c = gridCells[r].indexOf(span);
    for (;;) {
      r += dr; c += dc;
      if (r < 0 || r >= gridCells.length || c < 0 || c >= gridCells[0].length) return;
      if (dr !== 0) {
        // the nearest cell of the next row, this column first
        const row = gridCells[r];
        let best = null;
        for (let d = 0; d < row.length && !best; d++) best = row[c - d] || row[c + d] || null;
        if (best) return focusCell(span, best);
        continue;
      }
      if (gridCells[r][c]) return focusCell(span, gridCells[r][c]);
    }
  }
  function focusCell(from, to) {
    from.tabIndex = -1;
    to.tabIndex = 0;
    to.focus();
  }
  function onGridKey(event) {
    const span = event.target.closest(".cell");
    if (!span) return;
    const moves = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] };
    if (moves[event.key]) {
      event.preventDefault();
      moveFocus(span, ...moves[event.key]);
    } else if (event.key === "Home" || event.key === "End") {
      event.preventDefault();
      const row = gridCells.find((cells) => cells.includes(span)).filter(Boolean);
      focusCell(span, event.key === "Home" ? row[0] : row[row.length - 1]);
    }
  }

  // ---- the data to browse (built when a section is first opened) ----

  function sourceLinks(ids) {
    return (ids || []).map((id, i) => {
      const src = data.matrix.sources[id];
      const a = src ? el("a", { href: src.url, text: id, title: src.title }) : el("span", { text: id });
      return i ? [", ", a] : [a];
    }).flat();
  }
  function renderReleases() {
    const out = [];
    for (const r of data.matrix.releases) {
      const box = el("div", { class: "release" });
      box.append(el("h3", { text: `torch ${r.torch}` + (r.released ? ` (${r.released})` : "") }));
      box.append(el("p", {}, `torchvision ${value(r.torchvision)}, torchaudio ${value(r.torchaudio)}; sources: `,
        ...sourceLinks(r.sources)));
      const py = el("table", { class: "data" }, el("tr", {}, el("th", { text: "platform" }),
        el("th", { text: "Python tags" }), el("th", { text: "PyPI build" }), el("th", { text: "glibc floor" })));
      for (const [p, tags] of Object.entries(r.python)) {
        py.append(el("tr", {}, el("td", { text: p }), el("td", { text: tags.join(", ") }),
          el("td", { text: value(r.pypi_default[p]) }), el("td", { text: value(r.manylinux[p]) })));
      }
      box.append(py);
      const vt = el("table", { class: "data" }, el("tr", {}, el("th", { text: "variant" }),
        el("th", { text: "platforms" }), el("th", { text: "arch list per platform (evidence)" }),
        el("th", { text: "index entry" }), el("th", { text: "sources" })));
      for (const v of r.variants) {
        const arch = [];
        if (v.evidence) {
          for (const [p, f] of Object.entries(v.evidence)) {
            arch.push(`${p}: ${f.arch_list ? f.arch_list.join(" ") : "unknown"} (SASS ${f.sass}, PTX ${f.ptx}` +
              (f.rule ? `, rule ${f.rule}` : "") + ")");
          }
        } else if (v.arch_list) {
          arch.push(v.arch_list.join(" "));
        }
        vt.append(el("tr", {}, el("td", { text: v.name }), el("td", { text: v.platforms.join(", ") }),
          el("td", {}, arch.length ? list(null, "plain", arch) : "—"), el("td", { text: v.index }),
          el("td", {}, ...sourceLinks(v.sources))));
      }
      box.append(vt);
      out.push(box);
    }
    $("releases-body").replaceChildren(...out);
  }
  function renderFloors() {
    const t = el("table", { class: "data" }, el("tr", {}, el("th", { text: "CUDA" }),
      el("th", { text: "Linux driver ≥" }), el("th", { text: "Windows driver ≥" }),
      el("th", { text: "SASS for" }), el("th", { text: "sources" })));
    for (const f of data.floors.toolkit) {
      t.append(el("tr", {}, el("td", { text: f.cuda }), el("td", { text: value(f.linux) }),
        el("td", { text: value(f.windows) }),
        el("td", { text: f.oldest_arch && f.newest_arch ? `${f.oldest_arch} – ${f.newest_arch}` : "—" }),
        el("td", {}, ...sourceLinks(f.sources))));
    }
    const c = el("table", { class: "data" }, el("tr", {}, el("th", { text: "CUDA major" }),
      el("th", { text: "Linux driver ≥" }), el("th", { text: "Windows driver ≥" }), el("th", { text: "sources" })));
    for (const f of data.floors.compat) {
      c.append(el("tr", {}, el("td", { text: `${f.major}.x` }), el("td", { text: value(f.linux) }),
        el("td", { text: value(f.windows) }), el("td", {}, ...sourceLinks(f.sources))));
    }
    $("floors-body").replaceChildren(el("h3", { text: "Toolkit floors (fully compatible at or above)" }), t,
      el("h3", { text: "Minor-version compatibility floors (works, with warnings, at or above)" }), c);
  }
  function renderRocm() {
    const t = el("table", { class: "data" }, el("tr", {}, el("th", { text: "variant" }),
      el("th", { text: "torch releases" }), el("th", { text: "gfx targets" }), el("th", { text: "sources" })));
    for (const r of data.rocm) {
      t.append(el("tr", {}, el("td", { text: r.name }), el("td", { text: r.torch.length ? r.torch.join(", ") : "all" }),
        el("td", { text: r.gfx.join(" ") }), el("td", {}, ...sourceLinks(r.sources))));
    }
    $("rocm-body").replaceChildren(t);
  }
  function renderCatalog() {
    const n = el("table", { class: "data" }, el("tr", {}, el("th", { text: "NVIDIA GPU" }),
      el("th", { text: "compute capability" }), el("th", { text: "architecture" }), el("th", { text: "segment" })));
    for (const g of data.catalog.nvidia) {
      n.append(el("tr", {}, el("td", { text: g.name }), el("td", { text: g.cc }),
        el("td", { text: g.architecture }), el("td", { text: g.segment })));
    }
    const a = el("table", { class: "data" }, el("tr", {}, el("th", { text: "AMD GPU" }),
      el("th", { text: "gfx target" }), el("th", { text: "architecture" })));
    for (const g of data.catalog.amd) {
      a.append(el("tr", {}, el("td", { text: g.name }), el("td", { text: g.gfx }), el("td", { text: g.architecture })));
    }
    $("catalog-body").replaceChildren(n, a);
  }
  function renderSources() {
    const ul = el("ul", {});
    for (const [id, s] of Object.entries(data.matrix.sources)) {
      ul.append(el("li", {}, el("a", { href: s.url, text: s.title }), ` (${id})`));
    }
    $("sources-body").replaceChildren(ul);
  }

  // ---- wiring ----

  function fillPythons(keep) {
    const select = $("python");
    const tags = data.pythons[$("platform").value] || [];
    select.replaceChildren(...tags.map((t) => el("option", { value: t, text: t })));
    select.value = tags.includes(keep) ? keep : (tags.includes(DEFAULTS.python) ? DEFAULTS.python : tags[tags.length - 1]);
  }
  function fillSpecs(s) {
    const w = data.windows[`${s.platform}|${s.python}`];
    const specs = data.specifiers.filter((m) => w.sets[m]).map((m) => `==${m}.*`);
    $("torch-specs").replaceChildren(...specs.map((v) => el("option", { value: v })));
    const series = data.specifiers.filter((m) => w.sets[m]);
    $("torch-hint").textContent = "Optional: a specifier, such as ==2.7.* or ==2.7.1. Answered " +
      (series.length ? `here: the series ${series.join(", ")} and each of their releases, ` : "here: ") +
      "and any specifier that admits no release for this Python.";
  }

  // the machine of the link (#platform=…&python=…&gpu=…&driver=…&torch=…), defaults elsewhere
  function fromHash() {
    const given = new URLSearchParams(location.hash.slice(1));
    const pick = (key) => (given.has(key) ? given.get(key) : DEFAULTS[key]);
    const platform = $("platform");
    platform.value = data.platforms.includes(pick("platform")) ? pick("platform") : DEFAULTS.platform;
    fillPythons(pick("python"));
    $("gpu").value = pick("gpu");
    $("driver").value = pick("driver");
    $("torch").value = pick("torch");
  }

  function update() {
    const s = current();
    renderReads(s);
    fillSpecs(s);
    $("cli-command").textContent = cliCommand(s);
    const spec = s.spec.kind === "any" ? "" : s.spec.text;
    const torchRead = $("torch-read");
    torchRead.className = "read";
    torchRead.textContent = s.spec.kind === "any" ? "any release" : "";
    const plan = decide(s);
    renderGrid(s, plan);
    const hash = new URLSearchParams({ platform: s.platform, python: s.python, gpu: $("gpu").value.trim(),
                                       driver: $("driver").value.trim(), torch: spec });
    history.replaceState(null, "", `#${hash}`);
    renders += 1;
    document.body.dataset.renders = String(renders);
  }

  async function copy(button) {
    const text = $(button.dataset.copy).textContent;
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch (e) {
      const area = el("textarea", { "aria-hidden": "true" });
      area.value = text;
      document.body.append(area);
      area.select();
      ok = document.execCommand("copy");
      area.remove();
    }
    button.textContent = ok ? "Copied" : "Select and copy";
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  }

  function init() {
    const platform = $("platform");
    platform.replaceChildren(...data.platforms.map((p) => el("option", { value: p, text: p })));
    const names = [...data.catalog.nvidia.map((g) => el("option", { value: g.name, label: `NVIDIA · compute capability ${g.cc}` })),
                   ...data.catalog.amd.map((g) => el("option", { value: g.name, label: `AMD · ${g.gfx}` }))];
    $("gpu-names").replaceChildren(...names);
    fromHash();
    // a link opened in a tab that already shows the page
    window.addEventListener("hashchange", () => { fromHash(); update(); });
    platform.addEventListener("change", () => { fillPythons($("python").value); update(); });
    for (const id of ["python", "gpu", "driver", "torch"]) {
      $(id).addEventListener("input", update);
      $(id).addEventListener("change", update);
    }
    $("machine").addEventListener("submit", (e) => e.preventDefault());
    document.addEventListener("click", (e) => {
      const button = e.target.closest("button.copy");
      if (button) copy(button);
    });
    const scroller = $("grid-scroller");
    scroller.addEventListener("keydown", onGridKey);
    scroller.addEventListener("focusin", (e) => { if (e.target.classList.contains("cell")) showCell(e.target); });
    scroller.addEventListener("mouseover", (e) => { const c = e.target.closest(".cell"); if (c) showCell(c); });
    const lazy = { "browse-releases": renderReleases, "browse-floors": renderFloors,
                   "browse-rocm": renderRocm, "browse-catalog": renderCatalog, "browse-sources": renderSources };
    for (const [id, render] of Object.entries(lazy)) {
      const details = $(id);
      details.addEventListener("toggle", () => { if (details.open && !details.dataset.built) { render(); details.dataset.built = "1"; } });
    }
    if (data.overlay) $("overlay-note").textContent = " (with the overlay of 'torchenv matrix update')";
    for (const id of ["picker", "decision", "grid-section", "browse"]) $(id).hidden = false;
    $("loading").remove();
    update();
    document.body.dataset.ready = "1";
  }

  async function inflate(base64) {
    const bytes = Uint8Array.from(atob(base64), (ch) => ch.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  window.torchenvExplorer = {
    normalizeDriver: (t) => normalizeDriver(t),
    normalizeCc: (t) => normalizeCc(t),
    normalizeGfx: (t) => normalizeGfx(t),
    readGpu: (t) => readGpu(t),
    // the releases of the matrix a specifier admits, or null where the page does not read it
    admits: (t) => { const s = readSpec(t); return s.kind === "set" ? data.releases.filter((r) => specAdmits(s, r)) : s.kind === "any" ? data.releases : null; },
    pyRepr: (t) => pyRepr(t),
  };

  (async () => {
    try {
      data = await inflate($("data").textContent.trim());
    } catch (error) {
      const status = $("loading");
      status.className = "problem";
      status.textContent = "This browser cannot unpack the page's tables (it needs DecompressionStream): " + error;
      return;
    }
    init();
  })();
})();
