// live.js: the page of a fit that is still training (ironlearn fit --live; viewer/live.py). It asks the
// fit's server for /state every data.live.pollMs; on a new snapshot it uploads the weights into the
// network it has (or, for a model too large to send, draws the frame the fit rendered of the region in
// view) and redraws at the user's zoom and pan. The loss and PSNR curves grow beside the picture. When
// the fit is done the server serves the run's final page, and this one reloads into it; when training
// stops, or the fit stops answering, the page says so and keeps what it drew last.
"use strict";

IL.LIVE_TIMEOUT_MS = 3000;  // a request that takes longer has failed (a fit stopped with SIGSTOP hangs them)
IL.LIVE_FAILURES = 2;  // polls that fail in a row before the page says the fit is no longer answering
IL.NOT_ANSWERING = "training stopped (the fit is no longer answering)";

// The renderer of a model too large to send: the last frame the fit rendered, placed where its region
// lies in the current view (stretched, until the fit renders the new view).
IL.FrameNetwork = class {
  constructor(canvas) {
    this.canvas = canvas;
    this.context = canvas.getContext("2d");
    this.outside = [0, 0, 0, 0];
    this.frame = null;  // { image, view }
  }

  setFrame(image, view) {
    this.frame = { image, view };
  }

  draw(view, width, height, rect) {
    const c = this.context, [r, g, b] = this.outside.map((v) => Math.round(255 * v));
    c.save();
    c.beginPath();
    c.rect(...rect);
    c.clip();
    c.fillStyle = `rgb(${r}, ${g}, ${b})`;
    c.fillRect(...rect);
    if (this.frame) {
      const [x0, y0, x1, y1] = this.frame.view;
      const sx = width / (view[2] - view[0]), sy = height / (view[3] - view[1]);
      c.imageSmoothingEnabled = true;
      c.drawImage(this.frame.image, (x0 - view[0]) * sx, (y0 - view[1]) * sy, (x1 - x0) * sx, (y1 - y0) * sy);
    }
    c.restore();
  }

  preview(view, width, height) {
    this.draw(view, width, height, [0, 0, width, height]);
  }

  finish() {}
};

IL.live = function (data, api) {
  const live = data.live, line = document.getElementById("live");
  api.live = { status: live.status, step: data.metrics.steps, version: null, message: live.message };
  const say = (text, kind) => {
    line.textContent = text;
    line.dataset.kind = kind;
    line.hidden = false;
    api.live.message = text;
  };
  const end = (text) => {
    api.live.status = "stopped";
    say(text, "stopped");
  };
  if (live.status !== "training") {
    say(live.message, live.status);
    return;
  }
  say("training\u2026", "training");

  async function draw() {
    const response = await IL.liveRequest("snapshot");
    const version = Number(response.headers.get("X-Version")), step = Number(response.headers.get("X-Step"));
    if (live.mode === "frames") {
      const view = response.headers.get("X-View").split(",").map(Number);
      api.network.setFrame(await createImageBitmap(await response.blob()), view);
    } else {
      api.network.setWeights(new Float32Array(await response.arrayBuffer()));
    }
    api.ready = false;
    document.documentElement.dataset.ready = "false";
    api.live.version = version;
    api.live.step = step;
    api.redraw();
  }

  let asked = null;
  async function askView() {  // the region a frame should show: what the page shows now, at its canvas size
    const wanted = JSON.stringify({ view: api.view, width: api.canvas.width, height: api.canvas.height });
    if (wanted === asked) return;
    await IL.liveRequest("view", { method: "POST", body: wanted, headers: { "Content-Type": "application/json" } });
    asked = wanted;
  }

  let failures = 0;
  async function poll() {
    let state;
    try {
      state = await (await IL.liveRequest("state")).json();
      failures = 0;
    } catch (error) {
      if (++failures >= IL.LIVE_FAILURES) return end(IL.NOT_ANSWERING);
      return setTimeout(poll, live.pollMs);
    }
    IL.curves(state.rows);
    if (state.status === "done") return location.reload();  // the server now serves the final page
    if (state.status === "stopped") return end(state.message);
    try {
      // A view the server refuses (400: past +-1000) keeps the frames coming, of the last view it took.
      if (live.mode === "frames") await askView().catch((error) => console.info(`live: ${error.message}`));
      // A new snapshot once the last is drawn in full: a slow GPU shows fewer, never none whole.
      if (state.version && state.version !== api.live.version && api.ready) await draw();
    } catch (error) {
      console.info(`live: ${error.message}`);  // the next poll tells whether the fit is still there
    }
    say(IL.trainingLine(state, api.live.step, live.mode), "training");
    setTimeout(poll, live.pollMs);
  }
  poll();
};

// A request to the fit's server that fails when it answers other than ok, or not within
// IL.LIVE_TIMEOUT_MS.
IL.liveRequest = async function (url, init = {}) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), IL.LIVE_TIMEOUT_MS);
  try {
    const response = await fetch(url, { cache: "no-store", ...init, signal: abort.signal });
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    return response;
  } finally {
    clearTimeout(timer);
  }
};

// The live line while the fit trains: the step drawn (`drawnStep`: a snapshot's, or a frame's the
// fit rendered) of the steps trained, the last PSNR, the seconds.
IL.trainingLine = function (state, drawnStep, mode) {
  const last = state.rows.length ? state.rows[state.rows.length - 1] : null;
  const psnr = last && last[2] !== null ? `, PSNR ${last[2].toFixed(2)} dB` : "";
  const drawing = mode === "frames" ? "the fit's frame of step" : "drawing step";
  // The snapshot drawn can be newer than the state polled before it: never "step 2,460 of 2,434".
  const drawn = drawnStep || 0, trained = Math.max(state.step, drawn);
  return `training: ${drawing} ${drawn.toLocaleString("en")} of ${trained.toLocaleString("en")}`
    + `${psnr}, ${state.seconds.toFixed(1)} s`;
};

// The loss and PSNR so far, in the panel's loss figure.
IL.curves = function (rows) {
  const finite = rows.filter((row) => row.every((v) => v !== null));
  if (finite.length < 2) return;
  const loss = document.getElementById("loss");
  loss.replaceChildren(IL.plot(finite));
  const figure = document.getElementById("loss-figure");
  figure.querySelector("figcaption").textContent = "log loss (blue) and PSNR (orange) against step, so far";
  figure.hidden = false;
};
