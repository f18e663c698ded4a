"""PNG of the dashboard's own inline SVG figures (the tie story), drawn with Pillow.

The tie story is inline SVG so that Home loads no Plotly; its download must still follow the
sidebar's PNG / SVG choice like every Plotly chart's toolbar. `svg_to_png` rasterises exactly the
subset of SVG that `core.charts.metrics.tie_range_svg` writes: ``<svg viewBox>``, ``<g
transform="translate(x,y)">``, ``<rect>``, ``<line>``, ``<polygon>``, ``<text>`` with
``<tspan fill>`` runs and ``text-anchor`` start / middle / end, ``fill``, ``fill-opacity``,
``stroke``, ``stroke-width``, ``font-size``, ``font-weight``; ``<title>`` tooltips are skipped. Anything else is
refused with `ValueError` (a builder writing something new must extend this first), never
silently drawn wrong. Text uses the system's Liberation Sans (DejaVu Sans for symbols) where it
has them, else Pillow's bundled font (never a download).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from functools import lru_cache

from PIL import Image, ImageColor, ImageDraw, ImageFont

_NS = "{http://www.w3.org/2000/svg}"
_SHAPES = {"rect", "line", "polygon", "text", "g", "title", "svg"}
_TRANSLATE = re.compile(r"translate\(\s*(-?[\d.]+)\s*[, ]\s*(-?[\d.]+)\s*\)")


def svg_to_png(svg: str, scale: float = 2.0, background: str | None = None) -> bytes:
    """The PNG of ``svg`` (the subset in the module docstring) at ``scale`` pixels per viewBox
    unit, on a transparent background unless ``background`` (a CSS colour) is given."""
    root = ET.fromstring(svg)
    if root.tag != f"{_NS}svg":
        raise ValueError("not an SVG document")
    _, _, width, height = (float(v) for v in root.get("viewBox", "").split())
    image = Image.new("RGBA", (round(width * scale), round(height * scale)), background or (0, 0, 0, 0))
    layer = Image.new("RGBA", image.size, (0, 0, 0, 0))
    _draw(root, ImageDraw.Draw(layer), scale, (0.0, 0.0), float(root.get("font-size", "13")), image, layer)
    image.alpha_composite(layer)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _draw(
    node: ET.Element,
    draw: ImageDraw.ImageDraw,
    scale: float,
    offset: tuple[float, float],
    font_size: float,
    image: Image.Image,
    layer: Image.Image,
) -> None:
    for child in node:
        tag = child.tag.removeprefix(_NS)
        if tag not in _SHAPES:
            raise ValueError(f"svg_to_png does not draw <{tag}>")
        if tag == "title":
            continue
        if tag == "g":
            match = _TRANSLATE.fullmatch(child.get("transform", "translate(0,0)"))
            if match is None:
                raise ValueError(f"svg_to_png draws translate() transforms only, not {child.get('transform')!r}")
            dx, dy = float(match.group(1)), float(match.group(2))
            _draw(child, draw, scale, (offset[0] + dx, offset[1] + dy), font_size, image, layer)
            continue
        if _opacity(child) < 1:  # a translucent shape: drawn on its own layer, then blended
            own = Image.new("RGBA", image.size, (0, 0, 0, 0))
            _shape(tag, child, ImageDraw.Draw(own), scale, offset, font_size)
            layer.alpha_composite(own)
        else:
            _shape(tag, child, draw, scale, offset, font_size)


def _shape(
    tag: str, el: ET.Element, draw: ImageDraw.ImageDraw, scale: float, offset: tuple[float, float], font_size: float
) -> None:
    def xy(x: float, y: float) -> tuple[float, float]:
        return ((x + offset[0]) * scale, (y + offset[1]) * scale)

    def num(name: str, default: float = 0.0) -> float:
        return float(el.get(name, default))

    fill, stroke = _color(el, "fill"), _color(el, "stroke")
    width = max(1, round(num("stroke-width", 1) * scale)) if stroke else 0
    if tag == "rect":
        x0, y0 = xy(num("x"), num("y"))
        x1, y1 = xy(num("x") + num("width"), num("y") + num("height"))
        draw.rectangle((x0, y0, x1, y1), fill=fill, outline=stroke, width=width)
    elif tag == "line":
        draw.line((*xy(num("x1"), num("y1")), *xy(num("x2"), num("y2"))), fill=stroke, width=width)
    elif tag == "polygon":
        values = [float(v) for v in re.split(r"[\s,]+", el.get("points", "").strip()) if v]
        points = [xy(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        draw.polygon(points, fill=fill, outline=stroke, width=width)
    elif tag == "text":
        size, bold = round(float(el.get("font-size", font_size)) * scale), int(el.get("font-weight", "400")) >= 600
        runs = [(el.text or "", fill)]
        for span in el:
            if span.tag.removeprefix(_NS) != "tspan":
                raise ValueError(f"svg_to_png draws <tspan> inside <text> only, not <{span.tag.removeprefix(_NS)}>")
            runs += [(span.text or "", _color(span, "fill") or fill), (span.tail or "", fill)]
        fonts = [_font_for(text, size, bold) for text, _ in runs]
        widths = [draw.textlength(text, font=font) for (text, _), font in zip(runs, fonts, strict=True)]
        x, y = xy(num("x"), num("y"))
        anchor = el.get("text-anchor", "start")
        x -= sum(widths) if anchor == "end" else sum(widths) / 2 if anchor == "middle" else 0
        for (text, color), font, advance in zip(runs, fonts, widths, strict=True):
            draw.text((x, y), text, font=font, fill=color, anchor="ls")
            x += advance


def _opacity(el: ET.Element) -> float:
    return float(el.get("fill-opacity", "1"))


def _color(el: ET.Element, attribute: str) -> tuple[int, int, int, int] | None:
    """The element's ``fill`` / ``stroke`` as RGBA (``fill-opacity`` applied to the fill);
    None for ``none`` or no value (an SVG fill defaults to black: only for text and shapes that
    name none, which this subset does not write)."""
    value = el.get(attribute)
    if value is None:
        return (0, 0, 0, 255) if attribute == "fill" and el.tag.removeprefix(_NS) in ("text", "tspan") else None
    if value == "none":
        return None
    r, g, b = ImageColor.getrgb(value)[:3]
    alpha = round(255 * _opacity(el)) if attribute == "fill" else 255
    return (r, g, b, alpha)


#: system fonts tried in order (Debian: fonts-liberation, Arial's metrics like the SVG's sans-serif
#: stack; fonts-dejavu-core, which also has symbols such as the ⇅ of flipped runs), by weight
_FONTS = {
    False: ("LiberationSans-Regular.ttf", "DejaVuSans.ttf"),
    True: ("LiberationSans-Bold.ttf", "DejaVuSans-Bold.ttf"),
}


def _font_for(text: str, size: int, bold: bool) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """The font for ``text``: Liberation Sans for plain text, DejaVu Sans for text with
    symbols (from U+2000 on), Pillow's bundled font when the system has neither."""
    return _font(size, bold, symbols=any(ord(c) >= 0x2000 for c in text))


@lru_cache(maxsize=32)
def _font(size: int, bold: bool, symbols: bool) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    names = _FONTS[bold][1:] if symbols else _FONTS[bold]
    for name in names:
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size=size)
