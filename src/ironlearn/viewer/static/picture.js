// picture.js: a decoded .ilc file (ilcdecode.js) as what the page draws: its operations, numbers and
// fragment shader. It follows the tests' reference (tests/viewer/picture_oracle.py: build_picture_plan
// and picture_shader) for the operations a compressed picture uses (latents, linear, relu, mix), with
// the GLSL templates the page carries (`codec`) and the codec's constants (IL.FORMAT, format.js), so
// that a file's page and a file dropped on the page for any file draw what Python's plan draws: the
// same operations, buffer and shader (tests/viewer/test_compressed.py, tests/viewer/test_app.py).
"use strict";

IL.TEXEL = 4;  // floats a texel (plan.TEXEL)
IL.ceil4 = (n) => Math.ceil(n / IL.TEXEL);

// plan._Packer: arrays appended to one float32 buffer, each from a texel boundary.
IL.Packer = class {
  constructor() {
    this.parts = [];
    this.floats = 0;
  }

  add(values) {
    const padded = new Float32Array(IL.ceil4(values.length) * IL.TEXEL);
    padded.set(values);
    const offset = this.floats / IL.TEXEL;
    this.parts.push(padded);
    this.floats += padded.length;
    return offset;
  }

  buffer() {
    const buffer = new Float32Array(Math.max(this.floats, IL.TEXEL));
    let at = 0;
    for (const part of this.parts) {
      buffer.set(part, at);
      at += part.length;
    }
    return buffer;
  }
};

// plan._rows: weight (nIn x nOut, row-major) as a linear op reads it, input i in slot slots[i].
IL.packRows = function (packer, weight, nIn, nOut, slots, width4) {
  const out4 = IL.ceil4(nOut), stride = width4 * IL.TEXEL;
  const rows = new Float32Array(out4 * IL.TEXEL * stride);
  for (let i = 0; i < nIn; i++) {
    for (let o = 0; o < nOut; o++) rows[o * stride + slots[i]] = weight[i * nOut + o];
  }
  return { offset: packer.add(rows), out4 };
};

IL.range = (n) => Array.from({ length: n }, (_, i) => i);

// A grid's table from its values (`scaled`: each channel's integers times its step, float64), as
// Pyramid.values computes it: through the level's filter, if any, times the gain, rounded to float32
// once. part: at (texel), cells [columns, rows], channels, corrections (null, or a channel's taps
// each), offsets, gain.
IL.fillGrid = function (weights, part, scaled) {
  const [columns, rows] = part.cells, cells = columns * rows, channels = part.channels;
  const clampRow = (y) => Math.min(Math.max(y, 0), rows - 1);
  const clampColumn = (x) => Math.min(Math.max(x, 0), columns - 1);
  for (let c = 0; c < channels; c++) {
    const plane = scaled.subarray(c * cells, (c + 1) * cells);
    const taps = part.corrections && part.corrections[c];
    for (let y = 0; y < rows; y++) {
      for (let x = 0; x < columns; x++) {
        let value = plane[y * columns + x];
        if (taps) {  // filtered() in codec/model/filters.py, term by term in its order
          value *= 1 + taps[0];
          for (let j = 1; j < taps.length; j++) {
            const [dy, dx] = part.offsets[j];
            value += taps[j] * (plane[clampRow(y + dy) * columns + clampColumn(x + dx)]
                                + plane[clampRow(y - dy) * columns + clampColumn(x - dx)]);
          }
        }
        weights[(part.at + y * columns + x) * 4 + c] = value * part.gain;
      }
    }
  }
};

// build_picture_plan (tests/viewer/picture_oracle.py): the grids read at the point, the MLP on them, then the mix.
IL.picturePlan = function (picture) {
  const { header, latents, tensors, filters } = picture;
  const { channels, levels, height, width } = header;
  const { FEATURE_GAIN: gain } = IL.FORMAT.network, { FILTER_OFFSETS } = IL.FORMAT.shapes,
    { COLOURS, CUBIC, CUBIC_BEFORE_5 } = IL.FORMAT.latents;
  const packer = new IL.Packer(), planLevels = [], grids = [];
  for (let k = 0; k < levels; k++) {
    const scale = [width / 2 ** k, height / 2 ** k];
    if (latents[k] === null) {  // one zero cell: reads clamp to it
      planLevels.push({ cells: [1, 1], scale, table: packer.add(new Float32Array(IL.TEXEL)) });
      continue;
    }
    const [rows, columns] = header.gridShapes[k];
    const table = packer.add(new Float32Array(rows * columns * IL.TEXEL));  // filled below (IL.fillGrid)
    planLevels.push({ cells: [columns, rows], scale, table });
    const steps = header.grids.slice(k * channels, (k + 1) * channels).map((grid) => grid[0]);
    const corrections = filters[k] && IL.range(channels).map((c) => IL.range(FILTER_OFFSETS.length).map(
      (j) => Math.fround(filters[k].q[c * FILTER_OFFSETS.length + j] * 2 ** filters[k].exponent)));
    const scaled = new Float64Array(channels * rows * columns);  // integers times steps, as Pyramid.values
    latents[k].forEach((q, c) => q.forEach((v, i) => { scaled[c * rows * columns + i] = v * steps[c]; }));
    grids.push([{ at: table, cells: [columns, rows], channels, gain, corrections, offsets: FILTER_OFFSETS }, scaled]);
  }
  const features = levels * channels;
  const ops = [{ type: "latents", src: [0, 1], channels, levels: planLevels, out4: IL.ceil4(features),
                 cubic: header.version >= 5 ? CUBIC : CUBIC_BEFORE_5 }];
  const colours = COLOURS[channels];  // channels x channels, row-major
  const summed = new Float32Array(features * channels);  // each level's channels through the colours, / gain
  for (let k = 0; k < levels; k++) {
    for (let c = 0; c < channels; c++) {
      for (let j = 0; j < channels; j++) summed[(k * channels + c) * channels + j] = colours[c][j] / gain;
    }
  }
  const term = (vector, weight, slots, width4) => (
    { vector, in4: width4, weight: IL.packRows(packer, weight, slots.length, channels, slots, width4).offset });
  const terms = [term(1, summed, IL.range(features), ops[0].out4)];
  if (tensors.length) {
    let slots = IL.range(features), width4 = ops[0].out4;
    const sizes = [features, ...Array(header.depth).fill(header.hidden), channels];
    for (let layer = 0; layer + 1 < sizes.length; layer++) {
      const [nIn, nOut] = [sizes[layer], sizes[layer + 1]];
      const rows = IL.packRows(packer, tensors[2 * layer], nIn, nOut, slots, width4);
      ops.push({ type: "linear", n_in: nIn, n_out: nOut, in4: width4, out4: rows.out4, weight: rows.offset,
                 bias: packer.add(tensors[2 * layer + 1]) });
      [slots, width4] = [IL.range(nOut), rows.out4];
      if (layer + 2 < sizes.length) ops.push({ type: "relu", out4: width4 });
    }
    const vectors = 1 + ops.filter((op) => op.type !== "relu").length;
    terms.push(term(vectors - 1, colours.flat(), slots, width4));
  }
  ops.push({ type: "mix", terms, n_out: channels, out4: IL.ceil4(channels) });
  const weights = packer.buffer();
  for (const [part, scaled] of grids) IL.fillGrid(weights, part, scaled);
  return { ops, weights, output: IL.range(channels) };
};

// shader._float: a GLSL literal that reads back as the same float32.
IL.glslFloat = function (value) {
  const text = IL.pythonRepr(Math.fround(value));
  return /[.en]/.test(text) ? text : `${text}.0`;
};

// string.Template.substitute: $name, ${name} and $$.
IL.fill = function (template, values) {
  return template.replace(/\$(?:(\$)|([_a-z][_a-z0-9]*)|\{([_a-z][_a-z0-9]*)\})/gi, (_, dollar, name, braced) => {
    if (dollar) return "$";
    const key = name || braced;
    if (!(key in values)) throw new Error(`the shader template needs ${key}`);
    return String(values[key]);
  });
};

IL.slot = (vector, slot) => `v${vector}[${Math.floor(slot / IL.TEXEL)}].${"xyzw"[slot % IL.TEXEL]}`;

// shader.fragment_shader, for the operations of a compressed picture.
IL.pictureShader = function (plan, codec) {
  const templates = codec.templates, body = [];
  let current = 0;
  plan.ops.forEach((op, index) => {
    if (op.type === "latents") {
      const x = `vec2(${IL.slot(current, op.src[0])}, ${IL.slot(current, op.src[1])})`;
      const blocks = op.levels.map((spec, level) => {
        const [columns, rows] = spec.cells;
        const lines = IL.range(op.channels).map(
          (c) => `        ${IL.slot(current + 1, level * op.channels + c)} = value.${"xyzw"[c]};`);
        return IL.fill(templates.latents_level, {
          level, columns, rows, index, scale_x: IL.glslFloat(spec.scale[0]), scale_y: IL.glslFloat(spec.scale[1]),
          table: spec.table, cubic: IL.glslFloat(op.cubic), last_row: rows - 1, last_column: columns - 1,
          channel_lines: lines.join("\n") });
      });
      body.push(IL.fill(templates.latents, { index, levels: op.levels.length, channels: op.channels, out4: op.out4,
                                             x, out: current + 1, level_blocks: blocks.join("\n") }));
      current += 1;
    } else if (op.type === "linear") {
      body.push(IL.fill(templates.linear, { index, n_in: op.n_in, n_out: op.n_out, out4: op.out4, in4: op.in4,
                                            weight: op.weight, bias: op.bias, row_stride: IL.TEXEL * op.in4,
                                            in: current, out: current + 1 }));
      current += 1;
    } else if (op.type === "relu") {
      body.push(IL.fill(templates.activation, { index, name: "relu", out4: op.out4,
                                                expression: `max(v${current}[k], 0.0)`, in: current }));
    } else if (op.type === "mix") {
      const terms = op.terms.map((term) => IL.fill(templates.mix_term, {
        vector: term.vector, weight: term.weight, in4: term.in4, row_stride: IL.TEXEL * term.in4 }));
      const what = `${op.terms.map((term) => `v${term.vector} @ weight`).join(" + ")} -> ${op.n_out} channels`;
      body.push(IL.fill(templates.mix, { index, what, out4: op.out4, out: current + 1, terms: terms.join("\n") }));
      current += 1;
    } else {
      throw new Error(`no shader for operation ${op.type}`);
    }
  });
  const values = plan.output.map((s) => IL.slot(current, s));
  const rgb = values.length === 1 ? `vec3(${values[0]})` : `vec3(${values.join(", ")})`;
  const prelude = IL.fill(templates.prelude, { row_texels: codec.rowTexels, row_bits: Math.log2(codec.rowTexels) });
  return `${prelude}\n${IL.fill(templates.main, { body: body.join("\n\n"), rgb })}\n`;
};

// The MLP as Python's repr of its Sequential (nn/model.py) writes it.
IL.mlpRepr = function (header, tensors) {
  const sizes = [header.levels * header.channels, ...Array(header.depth).fill(header.hidden), header.channels];
  const lines = [];
  for (let layer = 0; layer + 1 < sizes.length; layer++) {
    const last = layer + 2 === sizes.length;
    lines.push(`  (${lines.length}): Linear(in_features=${sizes[layer]}, out_features=${sizes[layer + 1]}, `
      + `init='${last ? "xavier" : "he"}')`);
    if (!last) lines.push(`  (${lines.length}): ReLU()`);
  }
  const count = IL.withCommas(tensors.reduce((n, t) => n + t.length, 0));
  return `Sequential(\n${lines.join("\n")}\n)  # ${count} parameters`;
};

// What the page reads about a decoded file (as a model's page reads its payload), its numbers
// already unpacked.
IL.pictureData = function (picture, codec, name) {
  const { header, tensors } = picture;
  // page.file_payload's check, before the texture is built: a cell a texel for a level that codes
  // anything, one for an empty one (a taller texture froze the page, then failed).
  const texels = header.gridShapes.reduce((n, [r, c], k) => n + (picture.latents[k] === null ? 1 : r * c), 0);
  const textureRows = Math.ceil(texels / codec.rowTexels);
  if (codec.maxTextureRows && textureRows > codec.maxTextureRows) {
    throw new IL.FileRefused(`its latents would need a ${codec.rowTexels}x${textureRows} texture on the page, more than the `
      + `${codec.maxTextureRows} rows most GPUs hold; draw it to a PNG with \`ironlearn render\` instead`);
  }
  const plan = IL.picturePlan(picture);
  const shapes = header.gridShapes.map(([rows, columns]) => `${columns}x${rows}`).join(", ");
  const filtered = header.filteredLevels;
  const mlp = tensors.length ? `\nplus the MLP's correction: ${IL.mlpRepr(header, tensors)}` : "";
  return {
    title: `${name}: ironlearn viewer`,
    model: `latent pyramid: ${header.levels} levels of ${header.channels} grid(s) (${shapes}), `
      + (filtered.length ? `levels ${filtered.join(", ")} filtered, ` : "") + "read by Keys' cubic convolution and summed" + mlp,
    preset: "compressed picture",
    picture: { width: header.width, height: header.height, mode: header.mode },
    ops: plan.ops,
    output: plan.output,
    texture: [codec.rowTexels, Math.max(1, Math.ceil(plan.weights.length / IL.TEXEL / codec.rowTexels))],
    shader: IL.pictureShader(plan, codec),
    unpacked: plan.weights,
    metrics: { params: header.numParameters, bytes: picture.bytes, bpp: (8 * picture.bytes) / (header.width * header.height) },
    original: null, timelapse: null, lossPlot: null, history: null, notes: [], version: codec.version,
  };
};
