// ilcfile.js: a compressed picture's file (.ilc) read as far as its header, every byte checked and
// nothing entropy-decoded. It mirrors, function by function and check by check in the same order:
//   codec/container.py  the signature, the format version, the header and the sections, each with
//                       its CRC32 (Reader, _check_signature, _check_version, unpack_with_version)
//   codec/header.py     the header's fields, their bounds and the checks across them (LAYOUT,
//                       _walk, read_fields, Header)
//   codec/bitstream.py  read_header: no section shorter than the values its header declares take
//                       (least_bits, _check_room), no latents coded more thinly than a picture's
//                       (most_latents, _check_density)
// Anything it cannot read is refused with an IL.FileRefused whose message is the one Python's
// CodecError gives for the same bytes (without the "PATH: " that read_path puts before it).
// Varints are read as BigInts: a 10-byte one holds up to 70 bits, and messages quote it whole.
"use strict";

IL.FileRefused = class extends Error {};

// -- codec/container.py ---------------------------------------------------------------------------
IL.ILC = Object.freeze({
  MAGIC: [0x89, 0x49, 0x4c, 0x43],  // b"\x89ILC"
  VERSION: 6,
  READABLE: [3, 4, 5, 6],
  MAX_HEADER_BYTES: 2 ** 16,
  MAX_SECTIONS: 256,
  MAX_FILE_BYTES: 2 ** 28,
  MAX_VARINT_BYTES: 10,
  CRC_BYTES: 4,
  TRUNCATED_HINT: "copy the whole file again",
  CORRUPTED_HINT: "copy the file again, or compress the picture again",
  FOREIGN_HINT: "give a file that `ironlearn compress` wrote",
});

// zlib's CRC32 (the reflected polynomial 0xEDB88320), one table of 256 entries.
IL.CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

// The CRC32 of the parts, one after another, as an unsigned 32-bit number.
IL.crc32 = function (...parts) {
  let crc = 0xffffffff;
  for (const bytes of parts) {
    for (let i = 0; i < bytes.length; i++) crc = IL.CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
};

// A 4-byte little-endian stored checksum as an unsigned 32-bit number (Python compares the bytes).
IL.storedCrc = (bytes) => new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);

// A Python int formatted as f"{n:,}".
IL.withCommas = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

// Python's repr of a float (shortest digits that read back, in its fixed or exponent form).
IL.pythonRepr = function (x) {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, power] = x.toExponential().split("e");
  const exponent = Number(power), sign = x < 0 ? "-" : "";
  const digits = mantissa.replace("-", "").replace(".", "");
  if (exponent < -4 || exponent >= 16) {
    const shown = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${shown}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  if (digits.length <= exponent + 1) return `${sign}${digits}${"0".repeat(exponent + 1 - digits.length)}.0`;
  return `${sign}${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
};

// container.Reader: reads a flat record, refusing anything unexpected with IL.FileRefused. Every
// read checks the bytes left before it takes any, and every number the bounds the caller gives.
IL.Reader = class {
  constructor(bytes, what = "header") {
    this.bytes = bytes;
    this.position = 0;
    this.what = what;  // the part being read, as messages name it
  }

  truncated(name, detail = "") {
    return new IL.FileRefused(`truncated: the ${this.what} ends inside ${name}${detail}; ${IL.ILC.TRUNCATED_HINT}`);
  }

  corrupted(problem) {
    return new IL.FileRefused(`corrupted: in the ${this.what}, ${problem}; ${IL.ILC.CORRUPTED_HINT}`);
  }

  take(size, name) {
    const left = this.bytes.length - this.position;
    if (size > left) throw this.truncated(name, size > 1 ? ` (${size} bytes needed, ${left} left)` : "");
    const start = this.position;
    this.position += size;
    return this.bytes.subarray(start, this.position);
  }

  // An unsigned LEB128 number (a BigInt) of at most MAX_VARINT_BYTES bytes, in its shortest form.
  varint(name) {
    let value = 0n;
    for (let index = 0; index < IL.ILC.MAX_VARINT_BYTES; index++) {
      const byte = this.take(1, name)[0];
      value |= BigInt(byte & 0x7f) << BigInt(7 * index);
      if (byte < 0x80) {
        // A final zero byte adds nothing: the Writer never makes one, so it is damage.
        if (byte === 0 && index > 0) throw this.corrupted(`${name} has a needless zero byte`);
        return value;
      }
    }
    throw this.corrupted(`${name} runs over ${IL.ILC.MAX_VARINT_BYTES} bytes`);
  }

  // `value` (a BigInt) within [low, high], as a Number (every bound is far below 2**53).
  inBounds(value, low, high, name) {
    if (!(BigInt(low) <= value && value <= BigInt(high))) throw this.corrupted(`${name} is ${value}, outside ${low}..${high}`);
    return Number(value);
  }

  // An unsigned varint in [low, high].
  uint(low = 0, high = 2 ** 32 - 1, name = "a field") {
    return this.inBounds(this.varint(name), low, high, name);
  }

  // A zigzag varint in [low, high]: 0, 1, 2, 3 -> 0, -1, 1, -2.
  sint(low, high, name = "a field") {
    const zigzag = this.varint(name);
    const value = zigzag % 2n === 0n ? zigzag / 2n : -(zigzag + 1n) / 2n;
    return this.inBounds(value, low, high, name);
  }

  // A little-endian float32 (as the exact double); NaN and infinities refused unless `finite` is false.
  float32(name = "a field", finite = true) {
    const bytes = this.take(4, name);
    const value = new DataView(bytes.buffer, bytes.byteOffset, 4).getFloat32(0, true);
    if (finite && !Number.isFinite(value)) throw this.corrupted(`${name} is ${IL.pythonRepr(value)}, not a finite number`);
    return value;
  }

  // The next `size` bytes (the caller's own, already bounded, number), as a view.
  raw(size, name = "a field") {
    if (size < 0) throw new RangeError(`raw takes a size >= 0, not ${size}`);
    return this.take(size, name);
  }

  // Refuse bytes left over after the last field.
  done() {
    const left = this.bytes.length - this.position;
    if (left) throw this.corrupted(`${left} extra byte(s) at the end`);
  }
};

// The file starts with MAGIC; a first byte with its top bit cleared is a text-mode transfer.
IL.checkSignature = function (bytes) {
  const magic = IL.ILC.MAGIC;
  const matches = (from) => bytes.length >= magic.length && magic.every((byte, i) => i < from || bytes[i] === byte);
  if (matches(0)) return;
  if (matches(1)) {
    throw new IL.FileRefused("not an ironlearn compressed file as it stands: its first byte was changed, as a "
                             + "text-mode transfer does; copy it again in binary mode");
  }
  if (bytes.length < magic.length) {
    throw new IL.FileRefused(`not an ironlearn compressed file: it has only ${bytes.length} bytes; ${IL.ILC.FOREIGN_HINT}`);
  }
  throw new IL.FileRefused("not an ironlearn compressed file (it does not start with the ironlearn signature); "
                           + IL.ILC.FOREIGN_HINT);
};

// A format this reads, or why not: newer, earlier, or no format at all.
IL.checkVersion = function (version) {
  const { READABLE, VERSION } = IL.ILC;
  if (READABLE.includes(version)) return;
  if (version > VERSION) throw new IL.FileRefused(`made by a newer ironlearn (format ${version}); upgrade ironlearn to read it`);
  if (version >= 1 && version < VERSION) {
    throw new IL.FileRefused(`made by an earlier ironlearn (format ${version}; this one reads formats ${READABLE[0]} `
                             + `to ${VERSION}); compress the picture again`);
  }
  if (version < 1) {
    throw new IL.FileRefused(`unknown format version ${version} (formats start at 1): the file is damaged; `
                             + IL.ILC.CORRUPTED_HINT);
  }
};

// [version, header, sections] of a whole file (a Uint8Array), every byte checked: the signature,
// the version, the lengths (before any slicing), the checksums, and nothing after the last
// section. The header and sections are views of `bytes`, not copies.
IL.unpackWithVersion = function (bytes) {
  if (!(bytes instanceof Uint8Array)) throw new TypeError(`data must be a Uint8Array, not ${Object.prototype.toString.call(bytes)}`);
  const { MAGIC, MAX_HEADER_BYTES, MAX_SECTIONS, MAX_FILE_BYTES, CRC_BYTES, CORRUPTED_HINT } = IL.ILC;
  IL.checkSignature(bytes);
  const reader = new IL.Reader(bytes, "file");
  reader.raw(MAGIC.length, "the signature");
  const version = reader.raw(1, "the format version");
  IL.checkVersion(version[0]);
  const headerSize = reader.uint(0, MAX_HEADER_BYTES, "the header length");
  const header = reader.raw(headerSize, "the header");
  if (IL.storedCrc(reader.raw(CRC_BYTES, "the header checksum")) !== IL.crc32(version, header)) {
    throw new IL.FileRefused(`corrupted: the header fails its checksum; ${CORRUPTED_HINT}`);
  }
  const count = reader.uint(0, MAX_SECTIONS, "the section count");
  const table = [];
  for (let index = 0; index < count; index++) {
    const size = reader.uint(0, MAX_FILE_BYTES, `section ${index}'s length`);
    table.push([size, reader.raw(CRC_BYTES, `section ${index}'s checksum`)]);
  }
  // raw() checks the sum against the bytes left before slicing; done() refuses extra bytes.
  const payloads = reader.raw(table.reduce((sum, [size]) => sum + size, 0), "the sections");
  reader.done();
  const sections = [];
  let start = 0;
  table.forEach(([size, crc], index) => {
    const section = payloads.subarray(start, start + size);
    if (IL.crc32(section) !== IL.storedCrc(crc)) {
      throw new IL.FileRefused(`section ${index} is corrupted (it fails its checksum); ${CORRUPTED_HINT}`);
    }
    sections.push(section);
    start += size;
  });
  return [version[0], header, sections];
};

// -- codec/pyramid.py, entropy.py: the numbers the header's bounds come from ----------------------
IL.MAX_SYMBOL = 2 ** 15;
IL.MAX_LEVELS = 7;
IL.FILTER_LEVELS = 4;
// The filter's taps: the cell itself, then one offset of each pair (d, -d) within 3 steps.
IL.FILTER_OFFSETS = (() => {
  const offsets = [[0, 0]];
  for (let dy = 0; dy <= 3; dy++) {
    for (let dx = -3; dx <= 3; dx++) {
      if (Math.abs(dy) + Math.abs(dx) <= 3 && (dy > 0 || (dy === 0 && dx > 0))) offsets.push([dy, dx]);
    }
  }
  return offsets;
})();
IL.LOG_SCALE_RANGE = [-12.0, 12.0];
IL.SLOPES = 13;

// The grid of level `level` for a height x width picture: one value per 2**level pixels a side, rounded up.
IL.levelShape = (height, width, level) => [Math.ceil(height / 2 ** level), Math.ceil(width / 2 ** level)];

// -- codec/header.py ------------------------------------------------------------------------------
IL.MAX_SIDE = 2 ** 15;
IL.MAX_PIXELS = 2 ** 26;
IL.STEP_EXPONENTS = [-14, 0];  // range(-14, 1): its first and last
IL.MODES = { 1: "gray", 3: "rgb" };
IL.STEP_RANGE = [2 ** -12, 4.0];
IL.MAX_MLP_MACS = 2048;
IL.MAX_HIDDEN = 256;
IL.MAX_DEPTH = 8;

IL.refuseHeader = (what) => new IL.FileRefused(`${what}; ${IL.ILC.FOREIGN_HINT}`);

// The [fan_in, fan_out] of each layer of the synthesis MLP: `depth` hidden layers of `hidden`.
IL.mlpLayers = function (inputs, outputs, hidden, depth) {
  if (!depth) return [];
  const sizes = [inputs, ...Array(depth).fill(hidden), outputs];
  return sizes.slice(0, -1).map((size, i) => [size, sizes[i + 1]]);
};

IL.headerLayers = (fields) => IL.mlpLayers(fields.levels * fields.channels, fields.channels, fields.hidden, fields.depth);

// No more pixels than a decoder accepts.
IL.checkPixels = function (fields) {
  if (fields.height * fields.width > IL.MAX_PIXELS) {
    throw IL.refuseHeader(`the header claims ${fields.width}x${fields.height} pixels, more than ${IL.MAX_PIXELS}`);
  }
};

// Gray or RGB.
IL.checkMode = function (fields) {
  if (!(fields.channels in IL.MODES)) throw IL.refuseHeader(`the header claims ${fields.channels} channels (1 or 3)`);
};

// An MLP has both a width and layers, or neither, and no more multiply-adds than a decoder accepts.
IL.checkMlp = function (fields) {
  const { hidden, depth } = fields;
  if ((hidden === 0) !== (depth === 0)) throw IL.refuseHeader("the header's MLP has a width but no layers, or layers but no width");
  const macs = IL.headerLayers(fields).reduce((sum, [fanIn, fanOut]) => sum + fanIn * fanOut, 0);
  if (macs > IL.MAX_MLP_MACS) {
    throw IL.refuseHeader(`the header's MLP (${depth} layers of ${hidden}) takes ${IL.withCommas(macs)} multiply-adds a pixel, `
                          + `over the ${IL.withCommas(IL.MAX_MLP_MACS)} a decoder accepts`);
  }
};

// header.Field: one number of the header, its bounds (inclusive), its name in messages, and a
// check of the fields read so far, run once it is read.
IL.headerField = (name, kind, bounds, what, check = null) => ({ name, kind, bounds, what, check });

// Field.read: an integer checked by the reader, or a float32 out of its bounds refused here.
IL.readField = function (field, reader) {
  if (field.kind === "float32") {
    const value = reader.float32(field.what);
    if (!(field.bounds[0] <= value && value <= field.bounds[1])) throw IL.refuseHeader(`${field.what} in the header is out of range`);
    return value;
  }
  return reader[field.kind](field.bounds[0], field.bounds[1], field.what);
};

// header._coded: a weight tensor's or a filter's record: its step's exponent, its Laplace's
// log-scale, and its largest magnitude (0: all zeros, nothing coded).
IL.codedFields = (kind) => [
  IL.headerField("exponent", "sint", IL.STEP_EXPONENTS, `a ${kind} step`),
  IL.headerField("log_scale", "float32", IL.LOG_SCALE_RANGE, `a ${kind} scale`),
  IL.headerField("magnitude", "uint", [0, IL.MAX_SYMBOL], `a ${kind}'s largest value`),
];

// header.LAYOUT: the header in the order a file holds it; a repeated record has `fields`, held
// count(fields read so far) times from format `since` on.
IL.HEADER_LAYOUT = [
  IL.headerField("height", "uint", [1, IL.MAX_SIDE], "the height"),
  IL.headerField("width", "uint", [1, IL.MAX_SIDE], "the width", IL.checkPixels),
  IL.headerField("channels", "uint", [1, 3], "the channels", IL.checkMode),
  IL.headerField("levels", "uint", [1, IL.MAX_LEVELS], "the levels"),
  IL.headerField("hidden", "uint", [0, IL.MAX_HIDDEN], "the MLP's width"),
  IL.headerField("depth", "uint", [0, IL.MAX_DEPTH], "the MLP's depth", IL.checkMlp),
  { name: "grids", since: 3, count: (fields) => fields.levels * fields.channels, fields: [
    IL.headerField("step", "float32", [IL.STEP_RANGE[0] / 2 ** IL.MAX_LEVELS, IL.STEP_RANGE[1]], "a grid's step"),
    IL.headerField("a", "float32", IL.LOG_SCALE_RANGE, "a grid's scale"),
    IL.headerField("slope", "uint", [0, IL.SLOPES - 1], "a grid's slope"),
    IL.headerField("magnitude", "uint", [0, IL.MAX_SYMBOL], "a grid's largest value"),
  ] },
  { name: "weights", since: 3, count: (fields) => 2 * IL.headerLayers(fields).length, fields: IL.codedFields("weight") },
  { name: "filters", since: 4, count: (fields) => Math.min(fields.levels, IL.FILTER_LEVELS), fields: IL.codedFields("filter") },
];

// header._walk, reading: every field in HEADER_LAYOUT's order, each checked as it goes; records
// as arrays of their fields' values.
IL.walkHeader = function (version, reader) {
  const fields = {};
  for (const item of IL.HEADER_LAYOUT) {
    if (item.kind !== undefined) {
      fields[item.name] = IL.readField(item, reader);
      if (item.check) item.check(fields);
      continue;
    }
    const count = version >= item.since ? item.count(fields) : 0;
    fields[item.name] = Array.from({ length: count }, () => item.fields.map((field) => IL.readField(field, reader)));
  }
  return fields;
};

// header.Header: the fields as read, and what follows from them (its properties, computed once).
IL.headerOf = function (version, fields, sections) {
  const { height, width, channels, levels, hidden, depth, filters } = fields;
  const gridShapes = Array.from({ length: levels }, (_, k) => IL.levelShape(height, width, k));  // finest first
  const filteredLevels = filters.flatMap(([, , magnitude], k) => (magnitude ? [k] : []));
  // The MLP's tensors' sizes, in the order of `weights`: each layer's weight, then its bias.
  const tensorSizes = IL.mlpLayers(levels * channels, channels, hidden, depth).flatMap(([fanIn, fanOut]) => [fanIn * fanOut, fanOut]);
  const latents = channels * gridShapes.reduce((sum, [h, w]) => sum + h * w, 0);
  const taps = filteredLevels.length * channels * IL.FILTER_OFFSETS.length;
  return {
    version, height, width, channels, levels, hidden, depth,
    grids: fields.grids, weights: fields.weights, filters, sections,
    mode: IL.MODES[channels], gridShapes, filteredLevels, tensorSizes,
    numParameters: latents + taps + tensorSizes.reduce((sum, size) => sum + size, 0),
  };
};

// header.read_fields: a file's header, its fields read and checked (its sections' lengths not yet).
IL.readFields = function (bytes) {
  const [version, headerBytes, sections] = IL.unpackWithVersion(bytes);
  const reader = new IL.Reader(headerBytes);
  const fields = IL.walkHeader(version, reader);
  reader.done();
  if (sections.length !== 2) throw IL.refuseHeader(`the file has ${sections.length} sections, not 2`);
  return IL.headerOf(version, fields, sections);
};

// -- codec/bitstream.py ---------------------------------------------------------------------------
// constriction's range coder: every symbol keeps a probability of at least 2**-CODER_PRECISION,
// and a decoder holds CODER_STATE_BITS bits beyond the words it read.
IL.CODER_PRECISION = 24;
IL.CODER_STATE_BITS = 64;
// The latents a file may code for each bit of its latents section, beyond the first FREE_LATENTS.
IL.LATENTS_PER_BIT = 256;
IL.FREE_LATENTS = 2 ** 20;

// The fewest bits in which the range coder can code any `count` symbols of a model on
// -magnitude..magnitude (0 for magnitude 0: such a group is not coded).
IL.leastBits = function (count, magnitude) {
  if (!magnitude) return 0.0;
  return count * -Math.log2(1 - 2 * magnitude / 2 ** IL.CODER_PRECISION);
};

// Refuse a section too short for [[count, magnitude]] before decoding anything. The sum runs left
// to right, as Python's sum() of floats does before 3.12.
IL.checkRoom = function (section, groups, what) {
  let needed = 0;
  for (const [count, magnitude] of groups) needed += IL.leastBits(count, magnitude);
  if (needed > 8 * section.length + IL.CODER_STATE_BITS) {
    throw new IL.FileRefused(`the ${what} section has ${IL.withCommas(section.length)} bytes, fewer than the `
                             + `${IL.withCommas(Math.ceil(needed / 8))} that the values its header declares take at least; `
                             + "compress the picture again");
  }
};

// The most latents a latents section of `sectionBytes` may code.
IL.mostLatents = (sectionBytes) => IL.FREE_LATENTS + IL.LATENTS_PER_BIT * 8 * sectionBytes;

// Refuse a latents section that codes `count` latents, more than IL.mostLatents: a model that makes
// them almost free is no picture's, and decoding them would cost out of all proportion to the file.
IL.checkDensity = function (section, count) {
  if (count > IL.mostLatents(section.length)) {
    throw IL.refuseHeader(`the latents section has ${IL.withCommas(section.length)} bytes for ${IL.withCommas(count)} `
                          + `latents, more than the ${IL.withCommas(IL.mostLatents(section.length))} a section of `
                          + "that size may code");
  }
};

// How many latents the grids of `shapes` (level-major, as `grids`) code: those of magnitude above 0.
IL.codedLatents = (shapes, grids) => shapes.reduce((sum, [h, w], i) => sum + (grids[i][3] ? h * w : 0), 0);

// bitstream.read_header: a compressed file's header (a plain object: version, height, width,
// channels, levels, hidden, depth, grids [[step, a, slope, magnitude]] level-major, weights and
// filters [[exponent, logScale, magnitude]], sections [latents, weights] as Uint8Array views,
// mode, gridShapes [[rows, columns]] finest first, filteredLevels, tensorSizes, numParameters),
// every field and bound checked and nothing decoded; IL.FileRefused for anything else.
IL.readHeader = function (bytes) {
  const found = IL.readFields(bytes);
  const shapes = found.gridShapes.flatMap((shape) => Array(found.channels).fill(shape));  // level-major, as grids
  IL.checkRoom(found.sections[0], shapes.map(([h, w], i) => [h * w, found.grids[i][3]]), "latents");
  IL.checkDensity(found.sections[0], IL.codedLatents(shapes, found.grids));
  const filterTaps = found.channels * IL.FILTER_OFFSETS.length;
  IL.checkRoom(found.sections[1], found.tensorSizes.map((size, i) => [size, found.weights[i][2]])
    .concat(found.filters.map(([, , magnitude]) => [filterTaps, magnitude])), "weights");
  return found;
};
