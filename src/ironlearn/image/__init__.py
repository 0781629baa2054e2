"""Pictures in and out: files, coordinates, rendering, time-lapses and quality metrics."""

from .coords import pixel_grid
from .io import InputError, Picture, load_picture, read_pixel_csv, save_image, write_pixel_csv
from .metrics import binary_accuracy, psnr
from .render import render, render_png

__all__ = ["InputError", "Picture", "binary_accuracy", "load_picture", "pixel_grid", "psnr",
           "read_pixel_csv", "render", "render_png", "save_image", "write_pixel_csv"]
