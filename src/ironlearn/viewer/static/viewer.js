// viewer.js: the page. Reads the model from the JSON block, picks a renderer, and either draws one
// fixed picture (#bare) or runs the interactive viewer: pan, zoom, the training picture beside it.
//   #bare&size=WxH[&view=x0,y0,x1,y1]   the picture (or that region) in a W x H canvas, nothing else
//   &cpu                                skip WebGL2: the JavaScript path, as without a GPU
// window.ironlearnViewer exposes the state to tests and benchmarks (ready, zoom, benchmark()); a live
// fit's page (live.js) adds live: its status and the step it draws.
"use strict";

IL.MAX_ZOOM = 1000;  // beyond this a screen pixel is a few float32 steps of the coordinates
IL.MIN_ZOOM = 0.25;
IL.OUTSIDE = [0.086, 0.094, 0.11, 1];  // the page background, for points outside the [-1, 1] square

IL.parseHash = function (hash) {
  const options = { bare: false, cpu: false, size: null, view: [-1, -1, 1, 1] };
  for (const part of hash.replace(/^#/, "").split("&")) {
    const [key, value] = part.split("=");
    if (key === "bare") options.bare = true;
    else if (key === "cpu") options.cpu = true;
    else if (key === "size" && /^\d+x\d+$/.test(value)) options.size = value.split("x").map(Number);
    else if (key === "view") {
      const numbers = (value || "").split(",").map(Number);
      if (numbers.length === 4 && numbers.every(Number.isFinite) && numbers[0] < numbers[2] && numbers[1] < numbers[3]) {
        options.view = numbers;
      } else {
        console.warn(`ignored view=${value}: it needs x0,y0,x1,y1 with x0 < x1 and y0 < y1`);
      }
    }
  }
  return options;
};

// WebGL2 unless told otherwise or unable; the CPU path otherwise, with the reason in one line.
IL.makeNetwork = function (canvas, data, weights, forceCPU) {
  if (!forceCPU) {
    try {
      return { network: new IL.GLNetwork(canvas, data, weights), canvas, reason: null };
    } catch (error) {
      if (!(error instanceof IL.Unavailable)) throw error;
      // A canvas keeps its first context type: a fresh one for the 2-D context.
      const fresh = canvas.cloneNode(false);
      canvas.replaceWith(fresh);
      return { network: new IL.CPUNetwork(fresh, data, weights), canvas: fresh, reason: error.message };
    }
  }
  return { network: new IL.CPUNetwork(canvas, data, weights), canvas, reason: "the CPU path was asked for (#cpu)" };
};

IL.start = function () {
  const data = JSON.parse(document.getElementById("ironlearn-data").textContent);
  const options = IL.parseHash(location.hash);
  const api = window.ironlearnViewer = { ready: false, error: null, mode: null, zoom: 1, data };
  if (options.bare) document.body.classList.add("bare");
  if (data.app) IL.app(data, options, api);
  else if (data.file) IL.showFile(data, options, api);
  // A live fit's page for a large model has no weights: it draws the frames the fit renders (live.js).
  else IL.show(data, data.weights ? IL.unpack(data.weights) : Promise.resolve(null), options, api);
};

// Draw the model of `data` once its numbers (`unpacked`, a promise) are there.
IL.show = function (data, unpacked, options, api) {
  unpacked.then((weights) => {
    api.weights = weights;
    const canvas = document.getElementById("network");
    const made = weights ? IL.makeNetwork(canvas, data, weights, options.cpu)
      : { network: new IL.FrameNetwork(canvas), canvas, reason: null };
    api.mode = made.network instanceof IL.GLNetwork ? "webgl2" : weights ? "cpu" : "frames";
    api.network = made.network;
    api.canvas = made.canvas;
    IL.watchContext(made.canvas, api);
    const notice = made.reason && `${made.reason}: drawing on the CPU, a tile at a time (slower, same picture)`;
    if (options.bare) IL.bare(made, options, api, notice);
    else IL.interactive(made, data, api, notice);
    if (data.live) IL.live(data, api);
  }, (error) => IL.refuse(api, error));
};

// IL.readIlc in a worker made of the page's own scripts (those Python marks data-worker: page.py's
// DECODER_SCRIPTS), so that decoding a file, however long it
// takes, never freezes the page; in this thread where no worker can start. A refusal comes back as
// the same IL.FileRefused. Aborting `signal` (a later file took this one's place) ends the worker
// at once and rejects with the signal's reason; a decode in this thread runs on, for the caller to
// set aside.
IL.readIlcOffThread = function (bytes, codec, signal) {
  const sources = [...document.querySelectorAll("script[data-worker]")];
  if (typeof Worker === "undefined" || !sources.length) return IL.readIlc(bytes, codec);
  if (signal && signal.aborted) return Promise.reject(signal.reason);
  const answer = `self.onmessage = async (event) => {
    try {
      self.postMessage({ picture: await IL.readIlc(event.data.bytes, event.data.codec) });
    } catch (error) {
      self.postMessage({ error: { refused: error instanceof IL.FileRefused, name: error.name, message: error.message } });
    }
  };`;
  const url = URL.createObjectURL(new Blob([...sources.map((script) => script.textContent), answer],
                                           { type: "text/javascript" }));
  return new Promise((resolve, reject) => {
    let worker;
    try {
      worker = new Worker(url);
    } catch (error) {  // a policy that forbids workers from blob: URLs
      URL.revokeObjectURL(url);
      resolve(IL.readIlc(bytes, codec));
      return;
    }
    const stop = () => { done(); reject(signal.reason); };
    const done = () => {
      worker.terminate();
      URL.revokeObjectURL(url);
      if (signal) signal.removeEventListener("abort", stop);
    };
    if (signal) signal.addEventListener("abort", stop);
    worker.onmessage = ({ data }) => {
      done();
      if (!data.error) resolve(data.picture);
      else if (data.error.refused) reject(new IL.FileRefused(data.error.message));
      else reject(Object.assign(new Error(data.error.message), { name: data.error.name }));
    };
    worker.onerror = (event) => {  // the worker could not start: decode here instead
      event.preventDefault();
      done();
      resolve(IL.readIlc(bytes, codec));
    };
    worker.postMessage({ bytes, codec });
  });
};

// The page of a compressed file (ironlearn view FILE.ilc): the file's own bytes, decoded here as the
// page for any file decodes one dropped on it. ironlearn read the file before it wrote the page, so
// bytes the decoder refuses now are the page's damage.
IL.showFile = function (data, options, api) {
  const drawn = (async () => {
    const picture = await IL.readIlcOffThread(IL.base64Bytes(data.file.data), data.codec);
    return IL.pictureData(picture, data.codec, data.file.name);
  })();
  drawn.then((picture) => {
    api.data = picture;
    IL.show(picture, Promise.resolve(picture.unpacked), options, api);
  }, (error) => IL.refuse(api, error instanceof IL.FileRefused ? IL.damaged(error.message) : error));
};

// The page for any compressed file (ironlearn view --app): it waits for an .ilc file, dropped on it or
// picked, decodes it here (ilcdecode.js) and draws it as the file's own page would (picture.js). A
// file it cannot read is refused in one line, and the page waits for another. Each picture gets a
// fresh stage and panel: the last one's listeners (api.signal) go with them.
IL.app = function (data, options, api) {
  const pristine = ["stage", "panel"].map((id) => document.getElementById(id).cloneNode(true));
  let controller = null;
  const fresh = () => {
    if (controller) controller.abort();
    for (const element of pristine) document.getElementById(element.id).replaceWith(element.cloneNode(true));
    controller = new AbortController();
    api.signal = controller.signal;
    wire();
  };
  // The file being read: a later one takes its place (its worker ended, what it gives set aside),
  // so that a slow file dropped first never replaces a fast one dropped after it.
  let reading = null;
  const read = async (file) => {
    if (reading) reading.abort();
    const mine = reading = new AbortController();
    let drawn;
    try {
      if (file.size > IL.ILC.MAX_FILE_BYTES) {  // container.read_file's check: refused before reading
        throw new IL.FileRefused(`it has ${IL.withCommas(file.size)} bytes, over the `
          + `${IL.withCommas(IL.ILC.MAX_FILE_BYTES)} ironlearn reads: it is not a compressed picture; ${IL.ILC.FOREIGN_HINT}`);
      }
      const bytes = new Uint8Array(await file.arrayBuffer());
      const picture = await IL.readIlcOffThread(bytes, data.codec, mine.signal);
      drawn = IL.pictureData(picture, data.codec, file.name);
    } catch (error) {
      if (mine.signal.aborted) return;
      const why = error instanceof IL.FileRefused ? error.message
        : `it cannot be drawn (${error.name}: ${error.message}); is it a file of ironlearn compress?`;
      IL.refuse(api, new IL.FileRefused(`${file.name}: ${why}`));
      return;
    }
    if (mine.signal.aborted) return;
    fresh();
    document.getElementById("open").hidden = true;
    document.getElementById("another").hidden = false;
    delete document.documentElement.dataset.ready;
    delete document.documentElement.dataset.error;
    Object.assign(api, { data: drawn, error: null, ready: false });
    IL.show(drawn, Promise.resolve(drawn.unpacked), options, api);
  };
  const wire = () => {
    for (const input of document.querySelectorAll("#file, #another-file")) {
      input.addEventListener("change", () => { if (input.files.length) read(input.files[0]); });
    }
  };
  wire();
  document.getElementById("open").hidden = false;
  document.getElementById("title").textContent = "Open a compressed picture";
  document.querySelector("#panel details").hidden = true;  // no network yet (the next panel has its own)
  const box = () => document.getElementById("open");
  document.addEventListener("dragover", (event) => { event.preventDefault(); box().classList.add("over"); });
  document.addEventListener("dragleave", () => box().classList.remove("over"));
  document.addEventListener("drop", (event) => {
    event.preventDefault();
    box().classList.remove("over");
    if (event.dataTransfer.files.length) read(event.dataTransfer.files[0]);
  });
  api.waiting = true;
};

// A WebGL context the browser takes back (a GPU reset, too little memory) leaves a blank canvas that
// the painter would still call done: the page says so in one line and is not ready, so that nothing
// (a screenshot waiting on `ready`, a reader) takes the blank canvas for the picture.
IL.watchContext = function (canvas, api) {
  canvas.addEventListener("webglcontextlost", () => {
    api.ready = false;
    api.contextLost = true;
    document.documentElement.dataset.ready = "false";
    api.error = "the browser took back this page's WebGL context (a GPU reset, or too little memory): reload the page";
    const line = document.getElementById("error");
    line.textContent = api.error;
    line.hidden = false;
  });
};

// What a painter's end of a picture sets: ready, unless the context was lost on the way.
IL.markReady = function (api) {
  if (api.contextLost) return;
  api.ready = true;
  document.documentElement.dataset.ready = "true";
};

// Numbers that do not unpack draw nothing: the page says why, in place of the picture.
IL.refuse = function (api, error) {
  if (!(error instanceof IL.Damaged || (IL.FileRefused && error instanceof IL.FileRefused))) throw error;
  api.error = error.message;
  const line = document.getElementById("error");
  line.textContent = error.message;
  line.hidden = false;
  document.documentElement.dataset.error = "true";
};

IL.bare = function ({ network, canvas }, options, api, notice) {
  if (notice) console.info(notice);
  const [width, height] = options.size || [256, 256];
  canvas.width = width;
  canvas.height = height;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const painter = new IL.Painter(network, {
    preview: false,
    budgetMs: 250,  // nothing to answer here: fewer frames, fewer copies to the screen
    onDone: (timing) => { api.timing = timing; IL.markReady(api); },
  });
  api.benchmark = (frames = 3) => painter.benchmark(options.view, width, height, frames);
  api.view = options.view;
  api.redraw = () => painter.paint(options.view, width, height);
  api.redraw();
};

// The interactive page: the picture on a stage that pans and zooms (IL.stageView), beside the panel;
// pointers, the wheel and keys move the view, a box lays the training picture over it.
IL.interactive = function ({ network, canvas }, data, api, notice) {
  network.outside = IL.OUTSIDE;
  IL.panel(data);
  if (notice) {
    const line = document.getElementById("notice");
    line.textContent = notice;
    line.hidden = false;
  }
  const viewer = IL.stageView(network, canvas, data, api);
  IL.followPointers(viewer);
  IL.followWheelAndKeys(viewer, data, api);
  new ResizeObserver(viewer.resize).observe(viewer.stage);
  IL.watchPixelRatio(viewer.resize, api);
  api.zoomAt = viewer.zoomAt;
  api.panBy = viewer.panBy;
  api.redraw = viewer.redraw;
  api.setCompare = viewer.setCompare;
};

// The view of the stage, and what changes it and draws it: the centre (in the [-1, 1] square), a zoom
// relative to the picture fitted to the stage, and the stage's size (`size`, in CSS pixels). The
// listeners (IL.followPointers, IL.followWheelAndKeys) and the api share what it returns.
IL.stageView = function (network, canvas, data, api) {
  const stage = document.getElementById("stage");
  const zoomLabel = document.getElementById("zoom");
  const timingLabel = document.getElementById("timing");
  const picture = { width: data.picture.width || 1, height: data.picture.height || 1 };
  const state = { cx: 0, cy: 0, zoom: 1, split: 0.5, compare: false, pointer: null };
  const size = { width: 1, height: 1, dpr: 1 };
  const { scale, view } = IL.stageGeometry(picture, state, size);

  const painter = new IL.Painter(network, {
    onDone: ({ drawMs, width, height }) => {
      timingLabel.textContent = `full redraw ${drawMs.toFixed(0)} ms at ${width}\u00d7${height}`;
      IL.markReady(api);
    },
  });
  api.benchmark = (frames = 3) => painter.benchmark(view(), canvas.width, canvas.height, frames);
  const viewer = { stage, state, size, scale, view };
  const { overlay, split, drawOriginal, setCompare } = IL.originalOverlay(viewer, data);

  function redraw() {
    api.ready = false;
    api.zoom = state.zoom;
    api.view = view();
    const digits = state.zoom < 10 ? 2 : state.zoom < 100 ? 1 : 0;
    zoomLabel.textContent = `${state.zoom.toFixed(digits)}\u00d7`;
    const [sx] = scale();
    zoomLabel.title = `the whole picture would be ${Math.round(2 * sx * size.dpr)} pixels wide at this zoom`;
    drawOriginal();
    painter.paint(api.view, canvas.width, canvas.height);
  }

  function resize() {
    size.dpr = window.devicePixelRatio || 1;
    size.width = Math.max(1, stage.clientWidth);
    size.height = Math.max(1, stage.clientHeight);
    for (const target of [canvas, overlay]) {
      target.width = Math.round(size.width * size.dpr);
      target.height = Math.round(size.height * size.dpr);
    }
    redraw();
  }

  // Zoom by `factor` keeping the point under (px, py) (CSS pixels in the stage) where it is.
  function zoomAt(factor, px = size.width / 2, py = size.height / 2) {
    const [x0, y0] = view(), [sx, sy] = scale();
    const ux = x0 + px / sx, uy = y0 + py / sy;
    state.zoom = Math.min(IL.MAX_ZOOM, Math.max(IL.MIN_ZOOM, state.zoom * factor));
    const [nx, ny] = scale();
    state.cx = ux - (px - size.width / 2) / nx;
    state.cy = uy - (py - size.height / 2) / ny;
    redraw();
  }

  function panBy(dx, dy) {
    const [sx, sy] = scale();
    state.cx -= dx / sx;
    state.cy -= dy / sy;
    redraw();
  }

  function reset() {
    Object.assign(state, { cx: 0, cy: 0, zoom: 1 });
    redraw();
  }

  return Object.assign(viewer, { split, drawOriginal, setCompare, redraw, resize, zoomAt, panBy, reset });
};

// The picture fitted to a stage of `size` (CSS pixels), at the view's centre and zoom (`state`):
// scale() the CSS pixels per unit of x and of y, view() the region [x0, y0, x1, y1] in view.
IL.stageGeometry = function (picture, state, size) {
  const scale = () => {
    const fit = 0.94 * Math.min(size.width / picture.width, size.height / picture.height);
    return [fit * state.zoom * picture.width / 2, fit * state.zoom * picture.height / 2];
  };
  const view = () => {
    const [sx, sy] = scale();
    const hw = size.width / 2 / sx, hh = size.height / 2 / sy;
    return [state.cx - hw, state.cy - hh, state.cx + hw, state.cy + hh];
  };
  return { scale, view };
};

// The training picture (data.original), laid over the left of the stage up to the split line while
// `compare` is on (the box, the key o, api.setCompare); `viewer` is IL.stageView's.
IL.originalOverlay = function ({ state, size, scale, view }, data) {
  const overlay = document.getElementById("original");
  const split = document.getElementById("split");
  const original = new Image();
  let originalReady = false;
  if (data.original) {
    original.onload = () => { originalReady = true; drawOriginal(); };
    original.src = data.original;
    document.getElementById("compare-label").hidden = false;
  }

  function drawOriginal() {
    const context = overlay.getContext("2d");
    context.setTransform(1, 0, 0, 1, 0, 0);
    context.clearRect(0, 0, overlay.width, overlay.height);
    split.hidden = !state.compare;
    if (!state.compare || !originalReady) return;
    split.style.left = `${state.split * 100}%`;
    const [x0, y0] = view(), [sx, sy] = scale(), dpr = size.dpr;
    context.save();
    context.beginPath();
    context.rect(0, 0, state.split * overlay.width, overlay.height);
    context.clip();
    context.imageSmoothingEnabled = false;  // the training pixels as they are
    // The picture's pixels span [-1, 1] on each axis, whatever size it was embedded at.
    context.setTransform(2 / original.naturalWidth * sx * dpr, 0, 0, 2 / original.naturalHeight * sy * dpr,
      (-1 - x0) * sx * dpr, (-1 - y0) * sy * dpr);
    context.drawImage(original, 0, 0);
    context.restore();
  }

  const compareBox = document.getElementById("compare");
  function setCompare(on) {
    state.compare = on;
    compareBox.checked = on;
    drawOriginal();
  }
  compareBox.addEventListener("change", () => setCompare(compareBox.checked));
  return { overlay, split, drawOriginal, setCompare };
};

// Where a pointer event is, in CSS pixels of the stage.
IL.stagePoint = function (stage, event) {
  const box = stage.getBoundingClientRect();
  return [event.clientX - box.left, event.clientY - box.top];
};

// Pointers: one drags (the view, or the split line when grabbed there); two pinch.
IL.followPointers = function ({ stage, split, state, size, scale, drawOriginal, panBy, zoomAt }) {
  const local = (event) => IL.stagePoint(stage, event);
  const pointers = new Map();
  let draggingSplit = false;
  stage.addEventListener("pointerdown", (event) => {
    stage.focus();
    stage.setPointerCapture(event.pointerId);
    pointers.set(event.pointerId, local(event));
    draggingSplit = split.contains(event.target);
    stage.classList.add("dragging");
  });
  stage.addEventListener("pointermove", (event) => {
    state.pointer = local(event);
    if (!pointers.has(event.pointerId)) return;
    const before = [...pointers.values()];
    pointers.set(event.pointerId, local(event));
    const after = [...pointers.values()];
    if (draggingSplit) {
      state.split = Math.min(1, Math.max(0, after[0][0] / size.width));
      drawOriginal();
    } else if (after.length === 1) {
      panBy(after[0][0] - before[0][0], after[0][1] - before[0][1]);
    } else if (after.length === 2) {
      const mid = (p) => [(p[0][0] + p[1][0]) / 2, (p[0][1] + p[1][1]) / 2];
      const gap = (p) => Math.hypot(p[0][0] - p[1][0], p[0][1] - p[1][1]) || 1;
      const [m0, m1] = [mid(before), mid(after)];
      const [sx, sy] = scale();
      state.cx -= (m1[0] - m0[0]) / sx;
      state.cy -= (m1[1] - m0[1]) / sy;
      zoomAt(gap(after) / gap(before), m1[0], m1[1]);
    }
  });
  const release = (event) => {
    pointers.delete(event.pointerId);
    if (!pointers.size) {
      draggingSplit = false;
      stage.classList.remove("dragging");
    }
  };
  stage.addEventListener("pointerup", release);
  stage.addEventListener("pointercancel", release);
  stage.addEventListener("pointerleave", () => { state.pointer = null; });
};

// The wheel zooms at the pointer; a double click and the keys + - 0 o act on the view.
IL.followWheelAndKeys = function ({ stage, state, size, zoomAt, reset, setCompare }, data, api) {
  stage.addEventListener("wheel", (event) => {
    event.preventDefault();
    const lines = event.deltaMode === 1 ? 40 : event.deltaMode === 2 ? size.height : 1;
    // A trackpad pinch arrives as a wheel event with ctrlKey, in smaller steps.
    const rate = event.ctrlKey ? 0.01 : 0.002;
    zoomAt(Math.exp(-event.deltaY * lines * rate), ...IL.stagePoint(stage, event));
  }, { passive: false });
  stage.addEventListener("dblclick", reset);
  window.addEventListener("keydown", (event) => {
    if (event.target instanceof HTMLInputElement && event.target.type !== "checkbox") return;
    const at = state.pointer || [size.width / 2, size.height / 2];
    if (event.key === "+" || event.key === "=") zoomAt(1.25, ...at);
    else if (event.key === "-" || event.key === "_") zoomAt(1 / 1.25, ...at);
    else if (event.key === "0") reset();
    else if ((event.key === "o" || event.key === "O") && data.original) setCompare(!state.compare);
    else return;
    event.preventDefault();
  }, { signal: api.signal });
};

// Browser zoom or a move to another screen changes the device pixel ratio: `resize` then, each time.
IL.watchPixelRatio = function (resize, api) {
  matchMedia(`(resolution: ${window.devicePixelRatio}dppx)`).addEventListener("change", () => {
    resize();
    IL.watchPixelRatio(resize, api);
  }, { once: true, signal: api.signal });
};

// The side panel: title, metrics, time-lapse, loss plot, notes, architecture.
IL.panel = function (data) {
  document.getElementById("title").textContent = data.title.replace(/: ironlearn viewer$/, "");
  const m = data.metrics || {};
  const rows = [
    ["PSNR", m.psnr_db !== undefined ? `${m.psnr_db.toFixed(2)} dB` : null],
    ["accuracy", m.accuracy !== undefined ? `${(100 * m.accuracy).toFixed(2)} %` : null],
    ["parameters", m.params !== undefined ? m.params.toLocaleString("en") : null],
    ["steps", m.steps !== undefined ? m.steps.toLocaleString("en") : null],
    ["training time", m.seconds !== undefined ? `${m.seconds.toFixed(1)} s` : null],
    ["device", m.device || null],
    ["file", m.bytes !== undefined ? `${m.bytes.toLocaleString("en")} bytes, ${m.bpp.toFixed(3)} bpp` : null],
    ["model", data.preset || null],
    [m.bytes !== undefined ? "picture" : "trained on", data.picture.width
      ? `${data.picture.width}\u00d7${data.picture.height}${data.picture.mode ? " " + data.picture.mode : ""}` : null],
  ];
  const table = document.getElementById("metrics");
  for (const [name, value] of rows) {
    if (value === null) continue;
    const row = table.insertRow();
    const th = document.createElement("th");
    th.textContent = name;
    row.appendChild(th);
    row.insertCell().textContent = value;
  }
  if (data.timelapse) {
    document.getElementById("timelapse").src = data.timelapse;
    document.getElementById("timelapse-figure").hidden = false;
  }
  const loss = document.getElementById("loss");
  if (data.lossPlot) {
    const image = new Image();
    image.src = data.lossPlot;
    image.alt = "loss and PSNR against step";
    loss.appendChild(image);
    document.getElementById("loss-figure").hidden = false;
  } else if (data.history && data.history.length > 1) {
    loss.appendChild(IL.plot(data.history));
    document.getElementById("loss-figure").hidden = false;
  }
  const notes = document.getElementById("notes");
  for (const note of data.notes || []) notes.appendChild(document.createElement("li")).textContent = note;
  document.getElementById("architecture").textContent = data.model;
};

// A small SVG of PSNR (and log loss) against step, for runs that have history.csv but no loss.png.
IL.plot = function (rows) {
  const ns = "http://www.w3.org/2000/svg", width = 300, height = 150, pad = 6;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const steps = rows.map((r) => r[0]);
  const series = [[rows.map((r) => Math.log10(Math.max(r[1], 1e-12))), "#1f77b4"], [rows.map((r) => r[2]), "#ff7f0e"]];
  const [s0, s1] = [Math.min(...steps), Math.max(...steps)];
  for (const [values, colour] of series) {
    const [lo, hi] = [Math.min(...values), Math.max(...values)];
    const points = values.map((v, i) => [
      pad + (width - 2 * pad) * (steps[i] - s0) / ((s1 - s0) || 1),
      height - pad - (height - 2 * pad) * (v - lo) / ((hi - lo) || 1),
    ].map((n) => n.toFixed(1)).join(","));
    const line = svg.appendChild(document.createElementNS(ns, "polyline"));
    line.setAttribute("points", points.join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", colour);
    line.setAttribute("stroke-width", "1.5");
  }
  return svg;
};

IL.start();
