//! constriction's range decoder for a page that reads `.ilc` files (`viewer/static/ilcfile.js`).
//!
//! A *section* is one range-coded section of a file (`codec/bitstream.py`'s `RangeCoder`,
//! decoding): its words, a decoder over them, and an encoder that appends again every symbol
//! decoded, so that [`section_finish`] can tell whether the section held exactly the coding of
//! what came out of it, as the Python decoder does.  Symbols come from quantised Laplace models
//! on `min..=max` (`QuantizedLaplace` in Python: the same quantiser, the same distribution).
//!
//! The interface is plain `extern "C"`: pointers into the module's memory, which the page fills
//! through [`il_alloc`].  A call that fails returns 0; damage that makes constriction panic traps,
//! and the page reports either as a damaged file.
use std::slice;

use constriction::stream::{
    model::DefaultLeakyQuantizer,
    queue::{DefaultRangeDecoder, DefaultRangeEncoder},
    Decode, Encode,
};
use probability::distribution::Laplace;

pub struct Section {
    words: Vec<u32>,
    decoder: DefaultRangeDecoder,
    encoder: DefaultRangeEncoder,
}

/// `bytes` bytes of the module's memory, aligned for `f64` (null for none).
#[no_mangle]
pub extern "C" fn il_alloc(bytes: usize) -> *mut u8 {
    let mut buffer: Vec<f64> = Vec::with_capacity(bytes.div_ceil(8));
    let pointer = buffer.as_mut_ptr() as *mut u8;
    std::mem::forget(buffer);
    pointer
}

/// Give back what [`il_alloc`] gave for the same `bytes`.
#[no_mangle]
pub unsafe extern "C" fn il_free(pointer: *mut u8, bytes: usize) {
    drop(Vec::from_raw_parts(pointer as *mut f64, 0, bytes.div_ceil(8)));
}

/// A section over a copy of `count` words at `words`.
#[no_mangle]
pub unsafe extern "C" fn section_new(words: *const u32, count: usize) -> *mut Section {
    let words = if count == 0 { Vec::new() } else { slice::from_raw_parts(words, count).to_vec() };
    let decoder = match DefaultRangeDecoder::from_compressed(words.clone()) {
        Ok(decoder) => decoder,
        Err(_) => return std::ptr::null_mut(),
    };
    Box::into_raw(Box::new(Section { words, decoder, encoder: DefaultRangeEncoder::new() }))
}

/// Parameters constriction takes without panicking (a damaged file must not trap a page).
fn valid(mean: f64, scale: f64) -> bool {
    scale > 0.0 && scale.is_finite() && mean.is_finite()
}

/// Decode `count` symbols into `out`, symbol `i` under the Laplace of `means[i]` and `scales[i]`
/// quantised on `min..=max`; 1 for done, 0 for damage.
#[no_mangle]
pub unsafe extern "C" fn section_decode(section: *mut Section, min: i32, max: i32, means: *const f64,
                                        scales: *const f64, out: *mut i32, count: usize) -> i32 {
    if count == 0 {
        return 1;
    }
    let section = &mut *section;
    let (means, scales) = (slice::from_raw_parts(means, count), slice::from_raw_parts(scales, count));
    let out = slice::from_raw_parts_mut(out, count);
    if min >= max {
        return 0;
    }
    let quantizer = DefaultLeakyQuantizer::new(min..=max);
    for i in 0..count {
        if !valid(means[i], scales[i]) {
            return 0;
        }
        let model = quantizer.quantize(Laplace::new(means[i], scales[i]));
        match section.decoder.decode_symbol(&model) {
            Ok(symbol) => out[i] = symbol,
            Err(_) => return 0,
        }
        if section.encoder.encode_symbol(out[i], &model).is_err() {
            return 0;
        }
    }
    1
}

/// Decode `count` symbols into `out`, all under one Laplace of `mean` and `scale` on `min..=max`;
/// 1 for done, 0 for damage.
#[no_mangle]
pub unsafe extern "C" fn section_decode_iid(section: *mut Section, min: i32, max: i32, mean: f64, scale: f64,
                                            out: *mut i32, count: usize) -> i32 {
    if count == 0 {
        return 1;
    }
    let section = &mut *section;
    let out = slice::from_raw_parts_mut(out, count);
    if min >= max {
        return 0;
    }
    let quantizer = DefaultLeakyQuantizer::new(min..=max);
    if !valid(mean, scale) {
        return 0;
    }
    let model = quantizer.quantize(Laplace::new(mean, scale));
    for value in out.iter_mut() {
        match section.decoder.decode_symbol(&model) {
            Ok(symbol) => *value = symbol,
            Err(_) => return 0,
        }
        if section.encoder.encode_symbol(*value, &model).is_err() {
            return 0;
        }
    }
    1
}

/// Free the section: 1 if its words are exactly the coding of what was decoded from them, else 0.
#[no_mangle]
pub unsafe extern "C" fn section_finish(section: *mut Section) -> i32 {
    let mut section = Box::from_raw(section);
    let words = section.words.clone();
    let same = *section.encoder.get_compressed() == *words;
    same as i32
}

