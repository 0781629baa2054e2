// unpack.js: the packed float32 buffer (viewer/packing.py) back from the page's payload, with the
// browser's own DecompressionStream. A compressed picture's latent grids come as sparse integers and
// are computed here as Pyramid.values does (codec/pyramid.py): integer x step, through the level's
// filter, x gain, in float64, rounded to float32 once. Anything that does not add up is refused with
// an IL.Damaged, whose message the page shows instead of a picture.
"use strict";

IL.Damaged = class extends Error {};

IL.damaged = (why) => new IL.Damaged(`the page's numbers are damaged (${why}); write it again with ironlearn view`);

IL.base64Bytes = function (text) {
  let binary;
  try {
    binary = atob(text);
  } catch (error) {
    throw IL.damaged("the embedded data is not base64");
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
};

// The zlib stream inflated into exactly `length` bytes: more, fewer, or a bad checksum is damage.
IL.inflate = async function (deflated, length) {
  const reader = new Blob([deflated]).stream().pipeThrough(new DecompressionStream("deflate")).getReader();
  const bytes = new Uint8Array(length);
  let filled = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (filled + value.length > length) {
        reader.cancel();
        throw IL.damaged(`it inflates past its ${length} bytes`);
      }
      bytes.set(value, filled);
      filled += value.length;
    }
  } catch (error) {
    throw error instanceof IL.Damaged ? error : IL.damaged(`it does not inflate: ${error.message}`);
  }
  if (filled !== length) throw IL.damaged(`it inflates to ${filled} bytes, not ${length}`);
  return bytes;
};

// Unsigned LEB128 varints, read in turn from `bytes`; reading past the end is damage.
IL.Varints = class {
  constructor(bytes) {
    this.bytes = bytes;
    this.at = 0;
  }

  next() {
    let value = 0, scale = 1;
    for (;;) {
      if (this.at >= this.bytes.length) throw IL.damaged("a grid's numbers run past its bytes");
      const byte = this.bytes[this.at++];
      value += (byte & 127) * scale;
      if (byte < 128) return value;
      scale *= 128;
      if (scale > 2 ** 49) throw IL.damaged("a grid's number is too long");
    }
  }
};

IL.PARTS = {
  floats(weights, bytes, part) {
    if (bytes.length !== 4 * part.count) throw IL.damaged("a part of floats has the wrong length");
    weights.set(new Float32Array(bytes.slice().buffer), part.at);  // little-endian, as every browser's
  },

  // Zero runs of every channel, then the nonzero values (zig-zagged) of every channel.
  grid(weights, bytes, part) {
    const [columns, rows] = part.cells, cells = columns * rows, channels = part.channels;
    if (part.nonzero.length !== channels || part.steps.length !== channels) throw IL.damaged("a grid's channels disagree");
    const scaled = new Float64Array(channels * cells);
    const numbers = new IL.Varints(bytes);
    const where = part.nonzero.map((count) => {
      const found = new Int32Array(count);
      for (let i = 0, at = -1; i < count; i++) {
        at += numbers.next() + 1;
        if (at >= cells) throw IL.damaged("a grid's value falls outside it");
        found[i] = at;
      }
      return found;
    });
    where.forEach((found, c) => {
      for (const at of found) {
        const z = numbers.next();
        scaled[c * cells + at] = (z % 2 ? -(z + 1) / 2 : z / 2) * part.steps[c];
      }
    });
    if (numbers.at !== bytes.length) throw IL.damaged("a grid has bytes left over");
    IL.fillGrid(weights, part, scaled);
  },
};

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
        if (taps) {  // filtered() in codec/pyramid.py, term by term in its order
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

// The payload of viewer/packing.py as the Float32Array of the plan's buffer.
IL.unpack = async function (packed) {
  const bytes = await IL.inflate(IL.base64Bytes(packed.deflate), packed.bytes);
  const weights = new Float32Array(packed.floats);
  for (const part of packed.parts) {
    const end = part.type === "grid" ? (part.at + part.cells[0] * part.cells[1]) * 4 : part.at + part.count;
    if (!(part.type in IL.PARTS) || part.from + part.bytes > bytes.length || end > weights.length) {
      throw IL.damaged(`a ${part.type} part does not fit`);
    }
    IL.PARTS[part.type](weights, bytes.subarray(part.from, part.from + part.bytes), part);
  }
  return weights;
};
