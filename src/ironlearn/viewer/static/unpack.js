// unpack.js: a model's packed float32 buffer (viewer/packing.py) back from the page's payload, with
// the browser's own DecompressionStream, and the base64 of the bytes a page carries. Anything that
// does not add up is refused with an IL.Damaged, whose message the page shows instead of a picture.
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

IL.PARTS = {
  floats(weights, bytes, part) {
    if (bytes.length !== 4 * part.count) throw IL.damaged("a part of floats has the wrong length");
    weights.set(new Float32Array(bytes.slice().buffer), part.at);  // little-endian, as every browser's
  },
};

// The payload of viewer/packing.py as the Float32Array of the plan's buffer.
IL.unpack = async function (packed) {
  const bytes = await IL.inflate(IL.base64Bytes(packed.deflate), packed.bytes);
  const weights = new Float32Array(packed.floats);
  for (const part of packed.parts) {
    if (!(part.type in IL.PARTS) || part.from + part.bytes > bytes.length || part.at + part.count > weights.length) {
      throw IL.damaged(`a ${part.type} part does not fit`);
    }
    IL.PARTS[part.type](weights, bytes.subarray(part.from, part.from + part.bytes), part);
  }
  return weights;
};
