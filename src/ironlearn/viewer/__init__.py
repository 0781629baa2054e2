"""``ironlearn view``: a self-contained web page that redraws a fitted model (or a compressed
picture) at any zoom.

The page evaluates the network per screen pixel in a WebGL2 fragment shader
generated from the model's layers (:mod:`.shader`), from one packed float32
texture (:mod:`.plan`); without WebGL2 it follows the same plan in JavaScript.
Beside the network it shows what the run folder holds (:mod:`.run`).  A compressed picture's
page carries its file and decodes it in the browser, with the format's numbers generated from the
codec (:mod:`.format_data`).
"""

from .page import app_payload, file_payload, payload, render_page, write_app, write_viewer
from .plan import DRAWN_LAYERS, DrawingPlan, ViewerError, build_plan
from .serve import make_server, serve
from .shader import fragment_shader

__all__ = ["DRAWN_LAYERS", "DrawingPlan", "ViewerError", "app_payload", "build_plan",
           "file_payload", "fragment_shader", "make_server", "payload", "render_page", "serve", "write_app",
           "write_viewer"]
