    // layer $index, Linear $n_in -> $n_out: y = x @ weight + bias, the weight stored transposed
    // (row j holds column j, in the input's slot order) so that 4 inputs meet 4 weights in one dot().
    vec4 v$out[$out4];
    for (int j = 0; j < $out4; ++j) {
        vec4 acc = texel($bias + j);
        int row = $weight + j * $row_stride;
        for (int k = 0; k < $in4; ++k) {
            vec4 x = v$in[k];
            acc += vec4(dot(x, texel(row + k)), dot(x, texel(row + $in4 + k)),
                        dot(x, texel(row + 2 * $in4 + k)), dot(x, texel(row + 3 * $in4 + k)));
        }
        v$out[j] = acc;
    }
