// network.js: the model, evaluated per pixel. Two renderers with one interface:
//   draw(view, width, height, rect)  the network over `view` = [x0, y0, x1, y1] (a region of the
//                                    [-1, 1] square, y downward) spread over a width x height canvas,
//                                    drawing only `rect` = [x, y, w, h] (canvas pixels, top-left origin)
//   preview(view, width, height, s)  the same at s times the resolution, stretched over the canvas
//   finish()                         wait until what was drawn is done (for honest timings)
//   setWeights(weights)              new numbers for the same architecture (a live fit's): only the
//                                    weight texture is uploaded again; the shader stays
// GLNetwork runs the generated fragment shader (ironlearn/viewer/shader.py) on WebGL2; CPUNetwork
// follows the same operations in JavaScript. Both read one packed float32 buffer (viewer/plan.py;
// unpack.js unpacks it from the page).
"use strict";

const IL = {};

// Why the GPU path is not used: shown in one line, and the CPU takes over.
IL.Unavailable = class extends Error {};

// Pixel (col, row) of a W x H canvas sits at x0 + (x1 - x0) (col + 1/2) / W: image/coords.py.
IL.pixelX = (view, width, col) => view[0] + (view[2] - view[0]) * (col + 0.5) / width;
IL.pixelY = (view, height, row) => view[1] + (view[3] - view[1]) * (row + 0.5) / height;

IL.VERTEX = `#version 300 es
void main() {  // one triangle that covers the viewport
  vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}`;

IL.COPY = `#version 300 es
precision highp float;
uniform sampler2D u_image;
uniform vec2 u_canvas;
out vec4 fragColor;
void main() { fragColor = texture(u_image, gl_FragCoord.xy / u_canvas); }`;

IL.GLNetwork = class {
  constructor(canvas, data, weights) {
    const gl = canvas.getContext("webgl2", {
      alpha: false, antialias: false, depth: false, stencil: false, preserveDrawingBuffer: true,
    });
    if (!gl) throw new IL.Unavailable("WebGL2 is not available here");
    this.gl = gl;
    this.canvas = canvas;
    const [width, height] = this.size = data.texture;
    if (height > gl.getParameter(gl.MAX_TEXTURE_SIZE)) {
      throw new IL.Unavailable(`the weights need a ${width}x${height} texture, above this GPU's limit`);
    }
    this.texels = new Float32Array(width * height * 4);
    this.texels.set(weights);
    this.weights = this.texture(gl.RGBA32F, width, height, gl.RGBA, gl.FLOAT, this.texels, gl.NEAREST);
    this.program = this.link(data.shader);
    this.copy = this.link(IL.COPY);
    this.uniforms = {};
    for (const name of ["u_weights", "u_view", "u_canvas", "u_outside"]) {
      this.uniforms[name] = gl.getUniformLocation(this.program, name);
    }
    this.vao = gl.createVertexArray();
    this.outside = [0, 0, 0, 0];
    this.pixel = new Uint8Array(4);
    this.small = null;  // the preview's framebuffer and texture
  }

  setWeights(weights) {
    if (weights.length > this.texels.length) throw new Error("new weights that do not fit the texture");
    const gl = this.gl, [width, height] = this.size;
    this.texels.set(weights);
    gl.bindTexture(gl.TEXTURE_2D, this.weights);
    gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, width, height, gl.RGBA, gl.FLOAT, this.texels);
  }

  texture(internal, width, height, format, type, pixels, filter) {
    const gl = this.gl;
    const texture = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, texture);
    gl.texImage2D(gl.TEXTURE_2D, 0, internal, width, height, 0, format, type, pixels);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, filter);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, filter);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
    return texture;
  }

  link(fragmentSource) {
    const gl = this.gl;
    const program = gl.createProgram();
    for (const [type, source] of [[gl.VERTEX_SHADER, IL.VERTEX], [gl.FRAGMENT_SHADER, fragmentSource]]) {
      const shader = gl.createShader(type);
      gl.shaderSource(shader, source);
      gl.compileShader(shader);
      if (!gl.getShaderParameter(shader, gl.COMPILE_STATUS)) {
        throw new IL.Unavailable(`the shader did not compile: ${gl.getShaderInfoLog(shader).split("\n")[0]}`);
      }
      gl.attachShader(program, shader);
    }
    gl.linkProgram(program);
    if (!gl.getProgramParameter(program, gl.LINK_STATUS)) {
      throw new IL.Unavailable(`the shader did not link: ${gl.getProgramInfoLog(program)}`);
    }
    return program;
  }

  // Runs the network shader over `rect` of a width x height target (the canvas or the preview).
  run(view, width, height, rect) {
    const gl = this.gl;
    gl.useProgram(this.program);
    gl.bindVertexArray(this.vao);
    gl.activeTexture(gl.TEXTURE0);
    gl.bindTexture(gl.TEXTURE_2D, this.weights);
    gl.uniform1i(this.uniforms.u_weights, 0);
    gl.uniform4f(this.uniforms.u_view, view[0], view[1], view[2], view[3]);
    gl.uniform2f(this.uniforms.u_canvas, width, height);
    gl.uniform4fv(this.uniforms.u_outside, this.outside);
    gl.viewport(0, 0, width, height);
    gl.enable(gl.SCISSOR_TEST);
    gl.scissor(rect[0], height - rect[1] - rect[3], rect[2], rect[3]);  // GL counts rows from the bottom
    gl.drawArrays(gl.TRIANGLES, 0, 3);
    gl.disable(gl.SCISSOR_TEST);
  }

  draw(view, width, height, rect) {
    this.gl.bindFramebuffer(this.gl.FRAMEBUFFER, null);
    this.run(view, width, height, rect);
  }

  preview(view, width, height, scale) {
    const gl = this.gl;
    const w = Math.max(1, Math.round(width * scale)), h = Math.max(1, Math.round(height * scale));
    if (!this.small || this.small.width !== w || this.small.height !== h) {
      if (this.small) {
        gl.deleteFramebuffer(this.small.framebuffer);
        gl.deleteTexture(this.small.texture);
      }
      const texture = this.texture(gl.RGBA8, w, h, gl.RGBA, gl.UNSIGNED_BYTE, null, gl.LINEAR);
      const framebuffer = gl.createFramebuffer();
      gl.bindFramebuffer(gl.FRAMEBUFFER, framebuffer);
      gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, texture, 0);
      this.small = { width: w, height: h, texture, framebuffer };
    }
    gl.bindFramebuffer(gl.FRAMEBUFFER, this.small.framebuffer);
    this.run(view, w, h, [0, 0, w, h]);
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    gl.useProgram(this.copy);
    gl.bindTexture(gl.TEXTURE_2D, this.small.texture);
    gl.uniform1i(gl.getUniformLocation(this.copy, "u_image"), 0);
    gl.uniform2f(gl.getUniformLocation(this.copy, "u_canvas"), width, height);
    gl.viewport(0, 0, width, height);
    gl.drawArrays(gl.TRIANGLES, 0, 3);
  }

  finish() {
    // readPixels waits for every queued draw; gl.finish() may return before the GPU is done.
    const gl = this.gl;
    gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, this.pixel);
  }
};

// The ops that write a new activation vector (VECTOR_OPS in viewer/plan.py); a mix names them by index.
IL.VECTOR_OPS = ["linear", "fourier", "hashgrid", "latents", "mix"];

// The operations of viewer/plan.py in JavaScript, per point, in float64 (the model's float32
// numbers, more precise arithmetic): evaluate(x, y) -> the output channels.
IL.compileCPU = function (ops, output, weights) {
  const w = weights;
  const vectors = [new Float64Array(4)];
  for (const op of ops) {
    if (IL.VECTOR_OPS.includes(op.type)) vectors.push(new Float64Array(op.out4 * 4));
  }
  const out = new Float64Array(output.length);
  return function evaluate(x, y) {
    let n = 0;
    let v = vectors[0];
    v[0] = x; v[1] = y; v[2] = 0; v[3] = 0;
    for (const op of ops) {
      switch (op.type) {
        case "linear": v = IL.cpuLinear(op, v, vectors[++n], w); break;
        case "relu": for (let k = 0; k < v.length; k++) v[k] = v[k] > 0 ? v[k] : 0; break;
        case "tanh": for (let k = 0; k < v.length; k++) v[k] = Math.tanh(v[k]); break;
        case "sigmoid": for (let k = 0; k < v.length; k++) v[k] = 0.5 * (Math.tanh(0.5 * v[k]) + 1); break;
        case "sine": for (let k = 0; k < v.length; k++) v[k] = Math.sin(v[k] * op.w0); break;
        case "fourier": v = IL.cpuFourier(op, v, vectors[++n], w); break;
        case "hashgrid": v = IL.cpuHashgrid(op, v, vectors[++n], w); break;
        case "latents": v = IL.cpuLatents(op, v, vectors[++n], w); break;
        case "mix": v = IL.cpuMix(op, vectors, vectors[++n], w); break;
        default: throw new Error(`no CPU path for operation ${op.type}`);
      }
    }
    for (let c = 0; c < output.length; c++) out[c] = v[output[c]];
    return out;
  };
};

// compileCPU's vector operations, one point each: from the activations `v` (a mix: from earlier
// `vectors`, by index) and the weights `w`, each writes the next activations into `o` and returns it.
IL.cpuLinear = function (op, v, o, w) {
  const width = op.in4 * 4;
  for (let j = 0; j < op.out4 * 4; j++) {
    let acc = w[op.bias * 4 + j];
    const row = (op.weight + j * op.in4) * 4;
    for (let k = 0; k < width; k++) acc += v[k] * w[row + k];
    o[j] = acc;
  }
  return o;
};

IL.cpuFourier = function (op, v, o, w) {
  const inputs = op.src.length, cos = op.groups * 4;
  for (let g = 0; g < op.groups; g++) {
    for (let c = 0; c < 4; c++) {
      let z = 0;
      for (let i = 0; i < inputs; i++) z += v[op.src[i]] * w[(op.projection + g * inputs + i) * 4 + c];
      o[g * 4 + c] = Math.sin(z);
      o[cos + g * 4 + c] = Math.cos(z);
    }
  }
  return o;
};

IL.cpuHashgrid = function (op, v, o, w) {
  o.fill(0);
  const ux = (v[op.src[0]] + 1) * 0.5, uy = (v[op.src[1]] + 1) * 0.5;
  let slot = 0;  // each level's features follow the previous level's
  for (const level of op.levels) {
    const f = level.features, [weights, first] = IL.GRID_READS[level.interpolation];
    // Cells and vertices across (x) and down (y) the level.
    const [resX, resY] = level.res, lastX = level.side[0] - 1, lastY = level.side[1] - 1;
    const px = Math.min(Math.max(ux * resX - level.shift, 0), lastX);
    const py = Math.min(Math.max(uy * resY - level.shift, 0), lastY);
    const cx = Math.min(Math.floor(px), Math.max(lastX - 1, 0));
    const cy = Math.min(Math.floor(py), Math.max(lastY - 1, 0));
    const wx = weights(px - cx), wy = weights(py - cy);
    const row = level.hashed
      // Math.imul keeps the low 32 bits of the product, as the shader's uint arithmetic does.
      ? (ix, iy) => (ix ^ Math.imul(iy, 2654435761)) & (level.size - 1)
      : (ix, iy) => iy * level.side[0] + ix;
    const clamp = (i, last) => Math.min(Math.max(i, 0), last);
    for (let j = 0; j < wy.length; j++) {
      for (let i = 0; i < wx.length; i++) {
        // Vertices past the edge read the edge's (a level of one vertex reads it every time).
        const vertex = row(clamp(cx + i + first, lastX), clamp(cy + j + first, lastY));
        const r = level.table + f * (level.offset + vertex);
        const weight = wx[i] * wy[j];
        for (let k = 0; k < f; k++) o[slot + k] += weight * w[r + k];
      }
    }
    slot += f;
  }
  return o;
};

IL.cpuLatents = function (op, v, o, w) {
  const channels = op.channels, keys = IL.keysWeights(op.cubic);
  o.fill(0);
  const ux = (v[op.src[0]] + 1) * 0.5, uy = (v[op.src[1]] + 1) * 0.5;
  op.levels.forEach((level, k) => {
    const [columns, rows] = level.cells;
    // In cells, cell j centred at j; the 4 x 4 cells from the one before, clamped to the grid.
    const px = ux * level.scale[0] - 0.5, py = uy * level.scale[1] - 0.5;
    const cx = Math.floor(px), cy = Math.floor(py);
    const wx = keys(px - cx), wy = keys(py - cy);
    for (let j = 0; j < 4; j++) {
      const row = level.table + columns * Math.min(Math.max(cy + j - 1, 0), rows - 1);
      for (let i = 0; i < 4; i++) {
        const t = 4 * (row + Math.min(Math.max(cx + i - 1, 0), columns - 1)), weight = wx[i] * wy[j];
        for (let c = 0; c < channels; c++) o[k * channels + c] += weight * w[t + c];
      }
    }
  });
  return o;
};

IL.cpuMix = function (op, vectors, o, w) {
  for (let j = 0; j < op.out4 * 4; j++) {
    let acc = 0;
    for (const term of op.terms) {
      const x = vectors[term.vector], width = term.in4 * 4, row = (term.weight + j * term.in4) * 4;
      for (let k = 0; k < width; k++) acc += x[k] * w[row + k];
    }
    o[j] = acc;
  }
  return o;
};

// HashGrid's reads along one axis (INTERPOLATIONS in nn/encodings.py): the weights of the vertices
// from the first one's offset on (linear: the cell's first, bspline: the one before it).
IL.GRID_READS = {
  linear: [(t) => [1 - t, t], 0],
  bspline: [(t) => {
    const s = 1 - t, t2 = t * t, t3 = t2 * t;
    return [s * s * s / 6, (3 * t3 - 6 * t2 + 4) / 6, (-3 * t3 + 3 * t2 + 3 * t + 1) / 6, t3 / 6];
  }, -1],
};

// Keys' cubic convolution with parameter a, that a compressed picture's grids are read with
// (codec/model/latents.py): the weights of the 4 cells from the one before the point's.
IL.keysWeights = (a) => (t) => {
  const t2 = t * t, t3 = t2 * t;
  return [a * (t3 - 2 * t2 + t), (a + 2) * t3 - (a + 3) * t2 + 1, -(a + 2) * t3 + (2 * a + 3) * t2 - a * t,
          a * (t2 - t3)];
};

IL.CPUNetwork = class {
  constructor(canvas, data, weights) {
    this.canvas = canvas;
    this.context = canvas.getContext("2d");
    this.data = data;
    this.evaluate = IL.compileCPU(data.ops, data.output, weights);
    this.outside = [0, 0, 0, 0];
    this.scratch = document.createElement("canvas");
  }

  setWeights(weights) {
    this.evaluate = IL.compileCPU(this.data.ops, this.data.output, weights);
  }

  paint(context, view, width, height, rect) {
    const [x, y, w, h] = rect;
    const image = context.createImageData(w, h);
    const pixels = image.data;
    const [r0, g0, b0, mask] = this.outside;
    let i = 0;
    for (let row = y; row < y + h; row++) {
      const py = IL.pixelY(view, height, row);
      for (let col = x; col < x + w; col++, i += 4) {
        const px = IL.pixelX(view, width, col);
        let r, g, b;
        if (mask > 0 && (Math.abs(px) > 1 || Math.abs(py) > 1)) {
          [r, g, b] = [r0, g0, b0];
        } else {
          const value = this.evaluate(px, py);
          r = value[0];
          g = value.length === 3 ? value[1] : r;
          b = value.length === 3 ? value[2] : r;
        }
        // Clipped to [0, 1] and rounded to bytes, as render does.
        pixels[i] = Math.round(Math.min(Math.max(r, 0), 1) * 255);
        pixels[i + 1] = Math.round(Math.min(Math.max(g, 0), 1) * 255);
        pixels[i + 2] = Math.round(Math.min(Math.max(b, 0), 1) * 255);
        pixels[i + 3] = 255;
      }
    }
    context.putImageData(image, x, y);
  }

  draw(view, width, height, rect) {
    this.paint(this.context, view, width, height, rect);
  }

  preview(view, width, height, scale) {
    const w = Math.max(1, Math.round(width * scale)), h = Math.max(1, Math.round(height * scale));
    this.scratch.width = w;
    this.scratch.height = h;
    this.paint(this.scratch.getContext("2d"), view, w, h, [0, 0, w, h]);
    this.context.imageSmoothingEnabled = true;
    this.context.drawImage(this.scratch, 0, 0, width, height);
  }

  finish() {}
};
