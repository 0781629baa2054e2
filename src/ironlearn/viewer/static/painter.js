// painter.js: draws a view a band of rows at a time, so the page answers while a large network renders.
// Each animation frame spends about FRAME_BUDGET_MS drawing: first, after the view changed, a
// low-resolution preview of the whole canvas when a full frame would not fit the budget; then
// full-resolution bands, from the middle outwards, as many rows each as the measured cost allows.
"use strict";

IL.FRAME_BUDGET_MS = 30;

IL.Painter = class {
  constructor(network, { onDone = () => {}, preview = true } = {}) {
    this.network = network;
    this.onDone = onDone;
    this.usePreview = preview;
    this.msPerPixel = null;  // measured on the first band; null before
    this.warm = false;
    this.job = null;
    this.scheduled = false;
  }

  // Start drawing `view` over a width x height canvas, abandoning what was under way.
  paint(view, width, height) {
    const middle = Math.floor(height / 2);
    this.job = { view, width, height, up: middle, down: middle, preview: this.usePreview, drawMs: 0,
      started: performance.now() };
    this.schedule();
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.frame();
    });
  }

  timed(action, pixels) {
    const start = performance.now();
    action();
    this.network.finish();
    const ms = performance.now() - start;
    if (pixels > 0) {
      const rate = ms / pixels;
      this.msPerPixel = this.msPerPixel === null ? rate : 0.5 * this.msPerPixel + 0.5 * rate;
    }
    return ms;
  }

  // The next band of rows: below the middle, then above, alternating, until both ends are reached.
  nextBand(job) {
    const { width, height } = job;
    const rows = this.msPerPixel === null ? 1
      : Math.max(1, Math.min(height, Math.floor(IL.FRAME_BUDGET_MS / 2 / (this.msPerPixel * width))));
    const middle = Math.floor(height / 2);
    if (job.down < height && (job.up <= 0 || job.down - middle <= middle - job.up)) {
      const band = [0, job.down, width, Math.min(rows, height - job.down)];
      job.down += band[3];
      return band;
    }
    const top = Math.max(0, job.up - rows);
    const band = [0, top, width, job.up - top];
    job.up = top;
    return band;
  }

  frame() {
    const job = this.job;
    if (!job) return;
    const { view, width, height } = job;
    if (!this.warm) {  // the first draw compiles the shader for real: keep it out of the measurements
      this.network.draw(view, width, height, [0, 0, 1, 1]);
      this.network.finish();
      this.warm = true;
    }
    const start = performance.now();
    if (job.preview) {
      job.preview = false;
      if (this.msPerPixel !== null && this.msPerPixel * width * height > IL.FRAME_BUDGET_MS) {
        const scale = Math.max(1 / 32, Math.sqrt(IL.FRAME_BUDGET_MS / 2 / (this.msPerPixel * width * height)));
        this.timed(() => this.network.preview(view, width, height, scale), 0);
      }
    }
    while ((job.down < height || job.up > 0) && performance.now() - start < IL.FRAME_BUDGET_MS) {
      const band = this.nextBand(job);
      job.drawMs += this.timed(() => this.network.draw(view, width, height, band), band[2] * band[3]);
    }
    if (job.down < height || job.up > 0) {
      this.schedule();
    } else {
      this.job = null;
      this.onDone({ drawMs: job.drawMs, wallMs: performance.now() - job.started, width, height });
    }
  }

  // Full frames drawn back to back, each in 256-pixel tiles (one long draw call could trip the
  // browser's GPU watchdog): the figure docs/viewer.md reports.
  benchmark(view, width, height, frames) {
    const start = performance.now();
    for (let f = 0; f < frames; f++) {
      for (let y = 0; y < height; y += 256) {
        for (let x = 0; x < width; x += 256) {
          this.network.draw(view, width, height, [x, y, Math.min(256, width - x), Math.min(256, height - y)]);
          this.network.finish();
        }
      }
    }
    const ms = (performance.now() - start) / frames;
    return { msPerFrame: ms, fps: 1000 / ms, width, height, frames };
  }
};
