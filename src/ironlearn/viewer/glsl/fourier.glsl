    // layer $index, FourierFeatures ($frequencies frequencies): z = x B with 2 pi folded into B,
    // then [sin z, cos z]; texel (g, i) holds input i's row of B for frequencies 4g..4g+3.
    vec4 v$out[$out4];
    for (int g = 0; g < $groups; ++g) {
        vec4 z = $projection;
        v$out[g] = sin(z);
        v$out[g + $groups] = cos(z);
    }
