    {   // level $level: $res cells a side, $kind
        vec2 pos = clamp(unit$index * $res_f - $shift, 0.0, $last_f);
        vec2 corner = min(floor(pos), $below_f);  // the last vertex row belongs to the last cell
        vec2 f = pos - corner;
        ivec2 c = ivec2(corner);
        ivec2 n = min(c + 1, ivec2($last));  // a level of one vertex reads it four times
        int r00 = $table + $features * ($offset + $row00);
        int r10 = $table + $features * ($offset + $row10);
        int r01 = $table + $features * ($offset + $row01);
        int r11 = $table + $features * ($offset + $row11);
        vec4 w = vec4((1.0 - f.x) * (1.0 - f.y), f.x * (1.0 - f.y), (1.0 - f.x) * f.y, f.x * f.y);
$feature_lines
    }
