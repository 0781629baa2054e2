    // layer $index, $name: slot by slot, in place
    for (int k = 0; k < $out4; ++k) {
        v$in[k] = $expression;
    }
