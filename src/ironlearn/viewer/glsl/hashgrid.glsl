    // layer $index, HashGrid: $levels levels, $features features in all
    vec4 v$out[$out4];
    for (int k = 0; k < $out4; ++k) {
        v$out[k] = vec4(0.0);  // the gap after the last feature meets zero weights: keep it finite
    }
    vec2 unit$index = ($x + 1.0) * 0.5;  // [-1, 1] -> [0, 1]
$level_blocks
