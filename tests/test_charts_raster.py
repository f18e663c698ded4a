"""core.charts.raster.svg_to_png: the tie story's PNG download (the sidebar's PNG choice applies
to it like to every Plotly chart): the size, the marks where the SVG puts them, the refusals."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from core.charts import THEME_COLORS
from core.charts.metrics import COMPACT, TIE_AWARE_COLOR, tie_range_svg
from core.charts.raster import svg_to_png
from tests.test_reports_tie_story import _table


def _image(data: bytes) -> Image.Image:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return Image.open(io.BytesIO(data)).convert("RGBA")


@pytest.mark.parametrize("layout", [None, COMPACT])
def test_the_png_has_the_viewbox_size_times_the_scale(layout):
    svg = tie_range_svg(_table(), "mrr@10", flagged=["A"], **({"layout": layout} if layout else {}))
    width, height = (float(v) for v in svg.split('viewBox="0 0 ')[1].split('"')[0].split())
    image = _image(svg_to_png(svg, scale=2))
    assert image.size == (round(width * 2), round(height * 2))


def test_marks_land_where_the_svg_draws_them_on_the_theme_background():
    svg = tie_range_svg(_table(), "mrr@10", theme_type="dark")
    background = THEME_COLORS["dark"]["background"]
    image = _image(svg_to_png(svg, scale=1, background=background))
    assert image.getpixel((1, image.height - 1))[:3] == tuple(int(background[i : i + 2], 16) for i in (1, 3, 5))
    diamond = svg.split('<polygon points="')[-1].split('"')[0].split()  # the last run's tie-aware diamond
    xs = [float(p.split(",")[0]) for p in diamond]
    ys = [float(p.split(",")[1]) for p in diamond]
    centre = (round(sum(xs) / 4), round(sum(ys) / 4))
    r, g, b, _ = image.getpixel(centre)
    want = tuple(int(TIE_AWARE_COLOR[i : i + 2], 16) for i in (1, 3, 5))
    assert max(abs(r - want[0]), abs(g - want[1]), abs(b - want[2])) <= 8, ((r, g, b), want)


def test_transparent_without_a_background_and_text_is_drawn():
    image = _image(svg_to_png(tie_range_svg(_table(), "mrr@10"), scale=1))
    assert image.getpixel((image.width - 1, 0))[3] == 0
    title = image.crop((0, 0, 300, 28))  # the title's first line
    assert title.getchannel("A").getextrema()[1] > 200


@pytest.mark.parametrize(
    "svg, message",
    [
        ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle r="3"/></svg>', "<circle>"),
        (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><g transform="scale(2)"></g></svg>',
            "translate",
        ),
        ('<html xmlns="http://www.w3.org/1999/xhtml"/>', "not an SVG"),
    ],
)
def test_what_it_cannot_draw_is_refused(svg, message):
    with pytest.raises(ValueError, match=message):
        svg_to_png(svg)
