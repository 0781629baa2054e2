    // layer $index, mix: $what
    vec4 v$out[$out4];
    for (int j = 0; j < $out4; ++j) {
        vec4 acc = vec4(0.0);
$terms
        v$out[j] = acc;
    }
