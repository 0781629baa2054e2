    // layer $index, the latent pyramid: $levels levels of $channels grid(s), read by Keys' cubic
    // convolution (codec/model/latents.py's upsampling); level k's channel c goes to slot k * $channels + c
    vec4 v$out[$out4];
    for (int k = 0; k < $out4; ++k) {
        v$out[k] = vec4(0.0);
    }
    vec2 unit$index = ($x + 1.0) * 0.5;  // [-1, 1] -> [0, 1] of the picture
$level_blocks
