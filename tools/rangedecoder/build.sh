#!/bin/sh
# Build the viewer's range decoder: constriction 0.5.0's RangeDecoder, compiled to WebAssembly,
# written to src/ironlearn/viewer/static/rangedecoder.wasm (committed, so nobody else needs Rust).
#
#   tools/rangedecoder/build.sh SOURCES
#
# Needs cargo and rustc 1.85 or newer with the wasm32-unknown-unknown standard library (on Debian
# 13: apt-get install cargo libstd-rust-dev-wasm32 lld librust-num-traits-dev librust-smallvec-dev
# librust-hashbrown-dev), and no network: SOURCES is a folder of the crates that Debian does not
# package, each as released (the commits say which):
#
#   constriction   github.com/bamler-lab/constriction          tag v0.5.0
#   probability    github.com/stainless-steel/probability      0.20.3 (522cfcd)
#   special        github.com/stainless-steel/special          0.10.3 (dcd76bf)
#   random         github.com/stainless-steel/random           0.13.2 (bb1d7dd)
#   libm           github.com/rust-lang/compiler-builtins      0.2.16 (dfd2203a, its libm/)
#
# These are what constriction 0.5.0's Cargo.lock names, so the arithmetic of the quantised
# Laplace (libm's exp and log) is the Python package's.  The rest (num-traits, smallvec,
# hashbrown) comes from Debian's crate registry; constriction's requirements on smallvec and
# hashbrown are relaxed to Debian's versions, which only its other models use.
set -eu
sources=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
out="$here/../../src/ironlearn/viewer/static/rangedecoder.wasm"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp -r "$here/Cargo.toml" "$here/src" "$work/"
cp -r "$sources/constriction" "$work/constriction"
sed -i -e 's/^hashbrown = .*/hashbrown = "0.14"/' -e 's/^smallvec = .*/smallvec = "1.13"/' \
    -e '/^numpy = /d' -e '/^pyo3 = /d' -e '/^pybindings = /d' -e '/^\[dev-dependencies\]/,$d' \
    "$work/constriction/Cargo.toml"
cat >> "$work/Cargo.toml" <<PATCH

[patch.crates-io]
constriction = { path = "constriction" }
probability = { path = "$sources/probability" }
special = { path = "$sources/special" }
random = { path = "$sources/random" }
libm = { path = "$sources/libm" }
PATCH
mkdir -p "$work/.cargo"
cat > "$work/.cargo/config.toml" <<CONFIG
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[net]
offline = true
[target.wasm32-unknown-unknown]
linker = "wasm-ld"
CONFIG
# The same bytes from any folder: no path of this machine goes into the module.
export RUSTFLAGS="--remap-path-prefix=$work=/rangedecoder --remap-path-prefix=$sources=/sources"
(cd "$work" && cargo build --release --target wasm32-unknown-unknown &&
    cargo tree --target wasm32-unknown-unknown -e normal --prefix none | sort -u)  # what went in
cp "$work/target/wasm32-unknown-unknown/release/rangedecoder.wasm" "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(wc -c < "$out") bytes)"
