        {   // v$vector times its weight, stored as a linear layer's (no bias)
            int row = $weight + j * $row_stride;
            for (int k = 0; k < $in4; ++k) {
                vec4 x = v$vector[k];
                acc += vec4(dot(x, texel(row + k)), dot(x, texel(row + $in4 + k)),
                            dot(x, texel(row + 2 * $in4 + k)), dot(x, texel(row + 3 * $in4 + k)));
            }
        }
