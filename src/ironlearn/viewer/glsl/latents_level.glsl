    {   // level $level: $columns x $rows cells
        vec2 pos = unit$index * vec2($scale_x, $scale_y) - 0.5;  // in cells, cell j centred at j
        vec2 corner = floor(pos);
        vec4 wx = keys_weights(pos.x - corner.x, $cubic), wy = keys_weights(pos.y - corner.y, $cubic);
        ivec2 c = ivec2(corner);
        vec4 value = vec4(0.0);  // the channels, one a component
        for (int j = 0; j < 4; ++j) {
            // cells past the edge read the edge's
            int row = $table + $columns * clamp(c.y + j - 1, 0, $last_row);
            vec4 across = vec4(0.0);
            for (int i = 0; i < 4; ++i) {
                across += wx[i] * texel(row + clamp(c.x + i - 1, 0, $last_column));
            }
            value += wy[j] * across;
        }
$channel_lines
    }
