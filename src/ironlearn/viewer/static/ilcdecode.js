// ilcdecode.js: an .ilc file's two range-coded sections decoded in the page, as codec/bitstream/sections.py's
// walk decodes them, by constriction's own range decoder compiled to WebAssembly (rangedecoder.wasm,
// built by tools/rangedecoder/build.sh). The header comes from ilcfile.js (IL.readHeader); what comes
// out is the file's latent integers, its MLP's weights and its filters, which picture.js draws.
// The weights section is decoded first: it holds the MLP's tensors, the filters and, from format 7
// on, the learned context model's tensors, under which the latents may be coded.
//
// The latents' scales follow codec/bitstream/entropy.py: an integer activity a latent from the two rows above
// and the coarser level's 3 x 3 cells, its class (a quarter of an octave), and each class's scale
// exp(clip(a + slope / SLOPE_STEPS * log(EPS + x), LOG_SCALE_RANGE)), by codec/bitstream/portable.py's exp and
// log from format 6 on (the same float64 as Python's, step for step), before by the C library's
// (Math.exp here, and the logs the page was given, computed in Python). A grid the header gives to
// the context model (codec/bitstream/context.py) is decoded by wavefronts instead, each latent's
// Laplace mean and scale from the model's small network of its decoded neighbours, its parent
// cells and that class's log-scale: exact dyadic arithmetic, so that plain loops in float64 give
// Python's numbers to the bit. Their numbers are the codec's own, as data (IL.FORMAT, format.js).
// Each section is checked, as the Python decoder checks it, to hold exactly the coding of what it
// decodes to; anything else is an IL.FileRefused.
"use strict";

// constriction's range decoder over one section's words (codec/bitstream/sections.py's RangeCoder, decoding).
IL.Section = class {
  constructor(wasm, bytes, what) {
    this.wasm = wasm;
    this.what = what;
    if (bytes.length % 4) {
      throw new IL.FileRefused(`the ${what} section is damaged (its length is not whole words); compress the picture again`);
    }
    this.guard(() => {
      const words = wasm.il_alloc(bytes.length);
      new Uint8Array(wasm.memory.buffer, words, bytes.length).set(bytes);
      this.handle = wasm.section_new(words, bytes.length / 4);
      wasm.il_free(words, bytes.length);
    });
    this.scratch = { size: 0 };
  }

  // A trap in the module (constriction panicking on damage) or a failed call, as one refusal.
  guard(call) {
    let done;
    try {
      done = call();
    } catch (error) {
      if (!(error instanceof WebAssembly.RuntimeError)) throw error;
      done = 0;
    }
    if (done === 0) {
      throw new IL.FileRefused(`the ${this.what} section cannot be decoded; compress the picture again`);
    }
    return done;
  }

  // Room in the module for `count` symbols' means, scales and values, kept for the next call.
  room(count) {
    const wasm = this.wasm, scratch = this.scratch;
    if (scratch.size < count) {
      if (scratch.size) wasm.il_free(scratch.at, 20 * scratch.size);
      scratch.at = wasm.il_alloc(20 * count);
      scratch.size = count;
    }
    return { means: scratch.at, scales: scratch.at + 8 * count, out: scratch.at + 16 * count };
  }

  // `scales.length` symbols, symbol i under the Laplace of mean means[i] (0 without `means`) and
  // scale scales[i] on min..max.
  decode(min, max, scales, means = null) {
    const count = scales.length, at = this.room(count), wasm = this.wasm;
    const meansThere = new Float64Array(wasm.memory.buffer, at.means, count);
    if (means) meansThere.set(means);
    else meansThere.fill(0);
    new Float64Array(wasm.memory.buffer, at.scales, count).set(scales);
    this.guard(() => wasm.section_decode(this.handle, min, max, at.means, at.scales, at.out, count));
    return new Int32Array(wasm.memory.buffer, at.out, count).slice();
  }

  // `count` symbols, all under one Laplace of mean 0 and `scale` on min..max.
  decodeAll(min, max, scale, count) {
    const at = this.room(count), wasm = this.wasm;
    this.guard(() => wasm.section_decode_iid(this.handle, min, max, 0, scale, at.out, count));
    return new Int32Array(wasm.memory.buffer, at.out, count).slice();
  }

  // The section must be exactly the coding of what was decoded: no word missing or left over.
  finish() {
    const same = this.wasm.section_finish(this.handle);
    this.handle = null;
    if (!same) {
      throw new IL.FileRefused(`the ${this.what} section does not hold what its header declares (words are missing, `
        + "left over or out of place); compress the picture again");
    }
  }
};

// entropy.classes: 0 for no activity, else 1 + CLASSES_PER_OCTAVE * (octave) + quarter, exact for
// integers below 2**53.
IL.activityClass = function (activity) {
  if (activity === 0) return 0;
  const { CLASSES_PER_OCTAVE } = IL.FORMAT.entropy;
  let exponent = Math.floor(Math.log2(activity)) + 1;  // activity = mantissa * 2**exponent, mantissa in [0.5, 1)
  if (2 ** (exponent - 1) > activity) exponent -= 1;
  else if (2 ** exponent <= activity) exponent += 1;
  const mantissa = activity / 2 ** exponent;
  return 1 + CLASSES_PER_OCTAVE * (exponent - 1) + Math.floor((mantissa - 0.5) * (2 * CLASSES_PER_OCTAVE));
};

// codec/bitstream/portable.py: exp and log from IEEE 754's exactly rounded + - * / in Python's order, and exact
// scaling by powers of two, so that they give Python's float64 to the bit (its coefficients and
// constants are its own: IL.FORMAT.portable).
// 2**k exactly, for a normal float64's exponent (the bits written, as math.ldexp scales).
IL.powerOfTwo = function (k) {
  const bits = new DataView(new ArrayBuffer(8));
  bits.setUint32(0, (k + 1023) << 20);
  return bits.getFloat64(0);
};

// math.frexp for a normal positive float64: [m, e] with x = m * 2**e, m in [0.5, 1), both exact.
IL.frexp = function (x) {
  const bits = new DataView(new ArrayBuffer(8));
  bits.setFloat64(0, x);
  const e = ((bits.getUint32(0) >>> 20) & 0x7ff) - 1022;
  return [x / IL.powerOfTwo(e), e];
};

IL.portableExp = function (x) {
  const P = IL.FORMAT.portable, k = Math.floor(x * P.INV_LN2 + 0.5);
  const r = (x - k * P.LN2_HI) - k * P.LN2_LO;
  let total = P.EXP_TERMS[P.EXP_TERMS.length - 1];
  for (let n = P.EXP_TERMS.length - 2; n >= 0; n--) total = total * r + P.EXP_TERMS[n];
  // ldexp in two exact halves, as 2**k alone leaves the normal range for |k| past 1022
  const half = Math.trunc(k / 2);
  return total * IL.powerOfTwo(half) * IL.powerOfTwo(k - half);
};

IL.portableLog = function (x) {
  const P = IL.FORMAT.portable;
  let [m, e] = IL.frexp(x);
  if (m < P.SQRT_HALF) [m, e] = [2 * m, e - 1];
  const s = (m - 1) / (m + 1), s2 = s * s;
  let total = P.LOG_TERMS[P.LOG_TERMS.length - 1];
  for (let n = P.LOG_TERMS.length - 2; n >= 0; n--) total = total * s2 + P.LOG_TERMS[n];
  return e * P.LN2_HI + (e * P.LN2_LO + 2 * s * total);
};

// entropy.class_log_activity: log(EPS + x) of each class's middle activity x.
IL.classLogActivity = function (log) {
  const { CLASSES, CLASSES_PER_OCTAVE, EPS } = IL.FORMAT.entropy;
  const middles = [0];
  for (let c = 1; c < CLASSES; c++) {
    const [octave, quarter] = [Math.floor((c - 1) / CLASSES_PER_OCTAVE), (c - 1) % CLASSES_PER_OCTAVE];
    middles.push(2 ** octave * (1 + (quarter + 0.5) / CLASSES_PER_OCTAVE) / 18);
  }
  return middles.map((x) => log(EPS + x));
};

// portable.for_version: the file's exp and its classes' logs.
IL.arithmetic = function (version) {
  if (version >= IL.FORMAT.portable.SINCE_VERSION) {
    IL.portableLogs = IL.portableLogs || IL.classLogActivity(IL.portableLog);
    return { exp: IL.portableExp, logs: IL.portableLogs };
  }
  return { exp: Math.exp, logs: IL.FORMAT.libm.CLASS_LOG_ACTIVITY };  // the C library's, as Python gave them
};

// entropy.Model.log_scales: each class's log-scale for a grid's a and slope.
IL.logScaleTable = function (arithmetic, a, slope) {
  const { LOG_SCALE_RANGE: [low, high], SLOPE_STEPS } = IL.FORMAT.entropy;
  return arithmetic.logs.map((x) => Math.min(Math.max(a + (slope / SLOPE_STEPS) * x, low), high));
};

// entropy.Model.scale_table: each class's Laplace scale for a grid's a and slope.
IL.scaleTable = (arithmetic, a, slope) => IL.logScaleTable(arithmetic, a, slope).map((x) => arithmetic.exp(x));

// entropy.parent_box: each cell of the coarser grid, its 3 x 3 neighbourhood's |values| summed.
IL.parentBox = function (parent, rows, columns) {
  const box = new Float64Array(rows * columns);
  for (let y = 0; y < rows; y++) {
    for (let x = 0; x < columns; x++) {
      let sum = 0;
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const yy = y + dy, xx = x + dx;
          if (yy >= 0 && yy < rows && xx >= 0 && xx < columns) sum += Math.abs(parent[yy * columns + xx]);
        }
      }
      box[y * columns + x] = sum;
    }
  }
  return box;
};

// entropy.code, decoding: one grid of rows x columns, row by row, each latent's scale from its class.
IL.decodeGrid = function (section, arithmetic, [rows, columns], parent, model, magnitude) {
  const grid = new Int32Array(rows * columns);
  const box = parent && IL.parentBox(parent.values, parent.rows, parent.columns);
  const table = IL.scaleTable(arithmetic, model.a, model.slope);
  const scales = new Float64Array(columns);
  let above = new Float64Array(columns), twoAbove = new Float64Array(columns);  // |values| of the rows coded
  for (let y = 0; y < rows; y++) {
    for (let x = 0; x < columns; x++) {
      const left = x > 0 ? above[x - 1] : 0, right = x + 1 < columns ? above[x + 1] : 0;
      const fromParent = box ? box[(y >> 1) * parent.columns + (x >> 1)] : 0;
      scales[x] = table[IL.activityClass(fromParent + 9 * (2 * above[x] + left + right + twoAbove[x]))];
    }
    const row = section.decode(-magnitude, magnitude, scales);
    grid.set(row, y * columns);
    [twoAbove, above] = [above, twoAbove];
    for (let x = 0; x < columns; x++) above[x] = Math.abs(row[x]);
  }
  return grid;
};

// -- codec/bitstream/context.py: the learned context model ----------------------------------------
// sections.context_model: the file's context model from its header and its tensors' integers
// `values` (flat, as coded), or null without one: each input's factor 2**-shift, each layer's
// weight (fan_in x fan_out, row-major) and bias as float64, exactly the integers times their power
// of two (and room for its outputs), for each grid (level-major) whether it is coded under the
// model, and the powers of two and the scale table its cells need (context.scale_table: portable
// exp(k / LOG_SCALE_STEPS) for each k over LOG_SCALE_RANGE, from the lowest, `lowest`).
IL.contextModel = function (header, values) {
  if (!header.context) return null;
  const { TODAY_BITS, ACTIVATION_BITS, LOG_SCALE_STEPS } = IL.FORMAT.context;
  const exact = (i) => {
    const scale = IL.powerOfTwo(header.contextWeights[i][0]);
    return Float64Array.from(values[i], (q) => q * scale);
  };
  const layers = IL.contextLayers(header.context).map(([fanIn, fanOut], l) => (
    { fanIn, fanOut, weight: exact(2 * l), bias: exact(2 * l + 1), output: new Float64Array(fanOut) }));
  const [lowest, highest] = IL.FORMAT.entropy.LOG_SCALE_RANGE.map((bound) => Math.trunc(bound * LOG_SCALE_STEPS));
  IL.contextScaleTable = IL.contextScaleTable
    || Array.from({ length: highest - lowest + 1 }, (_, n) => IL.portableExp((lowest + n) / LOG_SCALE_STEPS));
  return { factors: header.contextShifts.map((shift) => IL.powerOfTwo(-shift)), layers,
           learned: header.contextGrids.map((flag) => flag === 1), todayUnit: IL.powerOfTwo(TODAY_BITS),
           up: IL.powerOfTwo(ACTIVATION_BITS), down: IL.powerOfTwo(-ACTIVATION_BITS),
           scales: IL.contextScaleTable, lowest, highest };
};

// The value of cell (y, z) of a height x width grid of `values`, 0 outside it.
IL.cellOf = (values, height, width, y, z) => (y >= 0 && y < height && z >= 0 && z < width ? values[y * width + z] : 0);

// context.Surroundings.raw and context.scaled for cell (i, j): its inputs into around.x (each
// neighbour's value, then their magnitudes, each parent cell's value, then their magnitudes, then
// the two-number log-scale in units of 2**-TODAY_BITS), each times its factor within INPUT_CLIP;
// returns that log-scale, "today". The activity is entropy.activity's, from the first four
// neighbours' magnitudes (up, up-left, up-right, two up) and the parent's 3 x 3 box.
IL.contextInputs = function (around, i, j) {
  const { NEIGHBOURS, PARENT, INPUT_CLIP } = IL.FORMAT.context;
  const { grid, rows, columns, parent, box, logScales, context, x } = around;
  const near = NEIGHBOURS.length, cells = PARENT.length;
  for (let n = 0; n < near; n++) {
    x[n] = IL.cellOf(grid, rows, columns, i + NEIGHBOURS[n][0], j + NEIGHBOURS[n][1]);
    x[near + n] = Math.abs(x[n]);
  }
  let activity = 9 * (2 * x[near] + x[near + 1] + x[near + 2] + x[near + 3]);
  for (let n = 0; n < cells; n++) {
    const value = parent ? IL.cellOf(parent.values, parent.rows, parent.columns, (i >> 1) + PARENT[n][0],
                                     (j >> 1) + PARENT[n][1]) : 0;
    x[2 * near + n] = value;
    x[2 * near + cells + n] = Math.abs(value);
  }
  if (parent) activity += box[(i >> 1) * parent.columns + (j >> 1)];
  const today = logScales[IL.activityClass(activity)];
  x[2 * (near + cells)] = Math.floor(today * context.todayUnit + 0.5);
  for (let n = 0; n < x.length; n++) x[n] = Math.min(Math.max(x[n] * context.factors[n], -INPUT_CLIP), INPUT_CLIP);
  return today;
};

// context.forward: the network's two outputs (mean, log-scale correction) for inputs `x`, in plain
// loops: every product and partial sum is a float64 held exactly (context.py's note), so any order
// of summation gives Python's numbers. Each hidden layer's output is floored to a grid of
// 2**-ACTIVATION_BITS within [0, ACTIVATION_CLIP].
IL.contextForward = function (x, context) {
  const { ACTIVATION_CLIP } = IL.FORMAT.context, { layers, up, down } = context;
  let input = x;
  for (let l = 0; l < layers.length; l++) {
    const { fanIn, fanOut, weight, bias, output } = layers[l];
    for (let o = 0; o < fanOut; o++) {
      let sum = 0;
      for (let n = 0; n < fanIn; n++) sum += input[n] * weight[n * fanOut + o];
      output[o] = sum + bias[o];
      if (l + 1 < layers.length) output[o] = Math.min(Math.floor(Math.max(output[o], 0) * up) * down, ACTIVATION_CLIP);
    }
    input = output;
  }
  return input;
};

// context.laplaces for cell n of a step: its mean within the grid's range into means[n], and its
// scale into scales[n], of the log-scale today + correction rounded to 1/LOG_SCALE_STEPS within
// LOG_SCALE_RANGE.
IL.contextLaplace = function (out, today, magnitude, context, means, scales, n) {
  const { LOG_SCALE_STEPS } = IL.FORMAT.context, { lowest, highest } = context;
  const step = Math.min(Math.max(Math.floor((today + out[1]) * LOG_SCALE_STEPS + 0.5), lowest), highest);
  means[n] = Math.min(Math.max(out[0], -magnitude), magnitude);
  scales[n] = context.scales[step - lowest];
};

// context.code, decoding: one grid of rows x columns under the context model, by wavefronts: cell
// (i, j) in step WAVE * i + j (every neighbour it reads in an earlier step), a step's cells (rows
// ascending) in one call of the range coder, under the means and scales the network gives them.
// `model` is the grid's two numbers, whose class log-scales are one of the network's inputs.
IL.decodeContextGrid = function (section, arithmetic, [rows, columns], parent, model, magnitude, context) {
  const { WAVE, INPUTS } = IL.FORMAT.context;
  const grid = new Int32Array(rows * columns);
  const around = { grid, rows, columns, parent, box: parent && IL.parentBox(parent.values, parent.rows, parent.columns),
                   logScales: IL.logScaleTable(arithmetic, model.a, model.slope), context, x: new Float64Array(INPUTS) };
  for (let t = 0; t < WAVE * (rows - 1) + columns; t++) {
    const first = Math.max(0, Math.ceil((t - columns + 1) / WAVE));  // the step's cells: rows first..last
    const count = Math.min(rows - 1, Math.floor(t / WAVE)) - first + 1;
    if (count <= 0) continue;  // a grid narrower than WAVE has steps without cells
    const means = new Float64Array(count), scales = new Float64Array(count);
    for (let n = 0; n < count; n++) {
      const i = first + n, today = IL.contextInputs(around, i, t - WAVE * i);
      IL.contextLaplace(IL.contextForward(around.x, context), today, magnitude, context, means, scales, n);
    }
    const values = section.decode(-magnitude, magnitude, scales, means);
    for (let n = 0; n < count; n++) grid[(first + n) * columns + t - WAVE * (first + n)] = values[n];
  }
  return grid;
};

// sections.code_latents, decoding: every grid, coarsest level first, under its two numbers or
// (where `context`, the file's context model or null, says so) under the context model; a level
// whose grids all have magnitude 0 is left empty (null), and an empty level says nothing to the
// one below it.
IL.decodeLatents = function (wasm, header, context = null) {
  const { levels, channels } = header;
  const latents = new Array(levels).fill(null);
  const arithmetic = IL.arithmetic(header.version);
  const section = new IL.Section(wasm, header.sections[0], "latents");
  for (let k = levels - 1; k >= 0; k--) {
    const grids = header.grids.slice(k * channels, (k + 1) * channels);
    if (!grids.some((grid) => grid[3])) continue;
    const [rows, columns] = header.gridShapes[k];
    const above = k + 1 < levels && latents[k + 1] !== null;
    latents[k] = grids.map(([, a, slope, magnitude], c) => {
      if (!magnitude) return new Int32Array(rows * columns);
      const parent = above ? { values: latents[k + 1][c], rows: header.gridShapes[k + 1][0],
                               columns: header.gridShapes[k + 1][1] } : null;
      if (context && context.learned[k * channels + c]) {
        return IL.decodeContextGrid(section, arithmetic, [rows, columns], parent, { a, slope }, magnitude, context);
      }
      return IL.decodeGrid(section, arithmetic, [rows, columns], parent, { a, slope }, magnitude);
    });
  }
  section.finish();
  return latents;
};

// sections.code_symbols, decoding: each MLP tensor, then each filter, then each of the context
// model's tensors, under one Laplace a tensor.
IL.decodeWeights = function (wasm, header) {
  const taps = header.channels * IL.FORMAT.shapes.FILTER_OFFSETS.length;
  const sizes = [...header.tensorSizes, ...header.filters.map(() => taps), ...header.contextSizes];
  const { exp } = IL.arithmetic(header.version);
  const section = new IL.Section(wasm, header.sections[1], "weights");
  const values = [...header.weights, ...header.filters, ...header.contextWeights].map(([, logScale, magnitude], i) => (
    magnitude ? section.decodeAll(-magnitude, magnitude, exp(logScale), sizes[i]) : new Int32Array(sizes[i])));
  section.finish();
  return values;
};

// The picture an .ilc file holds (sections.read): its header, latents (level by level, a grid a
// channel, null for an empty level), steps, MLP tensors (float32, as named_parameters orders them)
// and filters (null, or a level's integers and exponent). As sections.walk, the weights section
// comes first: the latents may be coded under the context model it holds.
IL.readIlc = async function (bytes, codec) {
  const header = IL.readHeader(bytes);
  const { instance } = await WebAssembly.instantiate(IL.base64Bytes(codec.rangeDecoder));
  const wasm = instance.exports;
  const values = IL.decodeWeights(wasm, header);
  const context = IL.contextModel(header, values.slice(values.length - header.contextWeights.length));
  const latents = IL.decodeLatents(wasm, header, context);
  const mlp = header.weights.length;
  const tensors = values.slice(0, mlp).map((q, i) => {
    const scale = 2 ** header.weights[i][0];
    return Float32Array.from(q, (v) => v * scale);
  });
  const filters = header.filters.map(([exponent, , magnitude], k) => (magnitude ? { q: values[mlp + k], exponent } : null));
  return { header, latents, tensors, filters, bytes: bytes.length };
};
