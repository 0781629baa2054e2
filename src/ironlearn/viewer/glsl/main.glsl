
void main() {
    // Pixel (col, row) of a W x H canvas sits at x0 + (x1 - x0) (col + 1/2) / W, with row 0 at the
    // top, as in image/coords.py; gl_FragCoord counts rows from the bottom and already adds the 1/2.
    vec2 frag = vec2(gl_FragCoord.x, u_canvas.y - gl_FragCoord.y);
    vec2 p = u_view.xy + (u_view.zw - u_view.xy) * frag / u_canvas;
    if (u_outside.a > 0.0 && (abs(p.x) > 1.0 || abs(p.y) > 1.0)) {
        fragColor = vec4(u_outside.rgb, 1.0);
        return;
    }
    vec4 v0[1];
    v0[0] = vec4(p, 0.0, 0.0);
$body
    fragColor = vec4(clamp($rgb, 0.0, 1.0), 1.0);  // render clips to [0, 1] too
}
