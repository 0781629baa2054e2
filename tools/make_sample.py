"""Draws the bundled sample: a line drawing made with Pillow (no third-party artwork).

Run from the repository root: python tools/make_sample.py
"""

import math

from PIL import Image, ImageDraw

SIZE = 200


def draw() -> Image.Image:
    image = Image.new("L", (SIZE, SIZE), 255)
    pen = ImageDraw.Draw(image)
    # A house with a door and a window.
    pen.rectangle((30, 100, 100, 170), outline=0, width=3)
    pen.line((25, 103, 65, 60, 105, 103), fill=0, width=3)
    pen.rectangle((55, 130, 75, 170), outline=0, width=2)
    pen.rectangle((38, 112, 52, 126), outline=0, width=2)
    # A sun with rays.
    pen.ellipse((135, 25, 175, 65), outline=0, width=3)
    for k in range(12):
        a = 2 * math.pi * k / 12
        pen.line((155 + 26 * math.cos(a), 45 + 26 * math.sin(a), 155 + 36 * math.cos(a), 45 + 36 * math.sin(a)),
                 fill=0, width=2)
    # A spiral: fine detail that a weak network blurs.
    points = [(150 + 3.2 * t * math.cos(t), 135 + 3.2 * t * math.sin(t)) for t in [i * 0.1 for i in range(130)]]
    pen.line(points, fill=0, width=2)
    # Ground and a few blades of grass.
    pen.line((10, 172, 190, 172), fill=0, width=2)
    for x in range(112, 190, 9):
        pen.line((x, 172, x + 3, 162), fill=0, width=1)
    return image


if __name__ == "__main__":
    draw().save("src/ironlearn/data/sample.png", optimize=True)
