    {   // level $level: $cells cells, $kind
        vec2 pos = clamp(unit$index * $res_f - $shift, vec2(0.0), $last_f);
        vec2 corner = min(floor(pos), $below_f);  // the last vertex row belongs to the last cell
        vec2 f = pos - corner;
        ivec2 c = ivec2(corner);
        vec4 wx = ${interpolation}_weights(f.x), wy = ${interpolation}_weights(f.y);
        for (int j = 0; j < $taps; ++j) {
            for (int i = 0; i < $taps; ++i) {
                // vertices past the edge read the edge's (a level of one vertex reads it every time)
                ivec2 vertex = clamp(c + ivec2(i + $first, j + $first), ivec2(0), $last);
                int r = $table + $features * ($offset + $row);
                float w = wx[i] * wy[j];
$feature_lines
            }
        }
    }
