// painter.js: draws a view a band of rows at a time, so the page answers while a large network renders.
// After the view changes, the next animation frame only stretches a low-resolution preview over
// the canvas, sized from the measured cost per pixel to take about `previewMs`, when a full frame
// would take longer; a drag or a wheel turn then gets one preview per frame. The frames after that
// sharpen the picture with full-resolution bands, from the middle outwards, `budgetMs` of drawing
// each. Every frame also costs the browser a copy of the canvas to the screen (tens of
// milliseconds at 1280x800 on a software GPU), which is why the bands get more than one vsync.
"use strict";

IL.Painter = class {
  constructor(network, { onDone = () => {}, preview = true, previewMs = 20, budgetMs = 100 } = {}) {
    this.network = network;
    this.onDone = onDone;
    this.usePreview = preview;
    this.previewMs = previewMs;
    this.budgetMs = budgetMs;
    this.msPerPixel = null;  // measured on the first band; null before
    this.warm = false;
    this.job = null;
    this.scheduled = false;
  }

  // Start drawing `view` over a width x height canvas, abandoning what was under way.
  paint(view, width, height) {
    const middle = IL.Painter.middle(height);
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

  // GPUs shade 2x2 pixel quads (SwiftShader too): a band of one row, or one that splits a quad,
  // pays for two. So bands span an even number of rows and end an even number of rows above the
  // bottom edge (GL counts rows from there), all but the topmost.
  static middle(height) {
    return height % 2 + 2 * Math.floor(height / 4);
  }

  // The next band of rows: below the middle, then above, alternating, until both ends are reached.
  nextBand(job) {
    const { width, height } = job;
    const rows = this.msPerPixel === null ? 2
      : 2 * Math.max(1, Math.floor(this.budgetMs / 4 / (this.msPerPixel * width)));
    const middle = IL.Painter.middle(height);
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
    if (job.preview) {
      job.preview = false;
      const fullMs = this.msPerPixel * width * height;
      if (this.msPerPixel !== null && fullMs > this.budgetMs) {
        const scale = Math.max(1 / 32, Math.sqrt(this.previewMs / fullMs));
        this.timed(() => this.network.preview(view, width, height, scale), 0);
        this.schedule();  // the bands start next frame, unless the view moves on first
        return;
      }
    }
    const start = performance.now();
    while ((job.down < height || job.up > 0) && performance.now() - start < this.budgetMs) {
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

  // Full frames drawn back to back, in 128-pixel tiles (one long draw call on a software GPU could
  // trip the browser's GPU watchdog): the figure docs/viewer.md reports.
  benchmark(view, width, height, frames) {
    const side = 128;
    const start = performance.now();
    for (let f = 0; f < frames; f++) {
      for (let y = 0; y < height; y += side) {
        for (let x = 0; x < width; x += side) {
          this.network.draw(view, width, height, [x, y, Math.min(side, width - x), Math.min(side, height - y)]);
          this.network.finish();
        }
      }
    }
    const ms = (performance.now() - start) / frames;
    return { msPerFrame: ms, fps: 1000 / ms, width, height, frames };
  }
};
