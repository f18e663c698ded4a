"""Every chart of the dashboard goes through `show_figure`: themed like the page, downloadable.

- Theme: the figure gets `core.charts.template_for` of the browser's active theme
  (``st.context.theme.type``, light when not known yet) and is drawn with Streamlit's own chart
  theme (``theme="streamlit"``), which the browser re-applies when the user switches between
  light and dark in the settings menu, so text and grids stay readable in both at once.
- Downloads: Plotly's toolbar (the camera button) saves the figure in the browser, offline
  (plotly.js ships with Streamlit; nothing is rendered on the server). A toolbar has one image
  button, so its format is a choice: `image_format_picker` (PNG or SVG, widget key
  `FORMAT_KEY`, drawn once in the shared sidebar) sets it for every chart of every page;
  `show_figure` reads it (`state.FIG_FORMAT`), PNG by default.
  The file is named after the figure (``name``), at twice the screen resolution for PNG.
- Inline SVG (`show_svg`, the tie story of Home and Metrics): drawn without Plotly's 4.7 MB
  browser chunk, through Streamlit's Markdown with HTML allowed, because ``st.html``'s sanitizer
  (DOMPurify with the HTML profile only) removes ``<svg>`` and everything in it; the builder
  escapes every user string (`core.charts.metrics.tie_range_svg`). Its download button follows
  the same PNG / SVG choice (the PNG drawn by `core.charts.raster.svg_to_png`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import streamlit as st

from core.charts import THEME_COLORS, themed
from pages.common import state

if TYPE_CHECKING:  # Home draws no Plotly figure: it imports this module without Plotly
    import plotly.graph_objects as go

#: the widget key of `image_format_picker`
FORMAT_KEY = state.FIG_FORMAT.key
#: image formats the toolbar's download button can write, as the picker shows them
IMAGE_FORMATS: dict[str, str] = {"png": "PNG", "svg": "SVG"}
#: toolbar buttons that do nothing useful on these charts
_REMOVED = ["lasso2d", "select2d", "autoScale2d"]


def file_stem(name: str) -> str:
    """``name`` as a safe file stem: runs of anything but letters, digits, ``-`` ``_`` ``.``
    become ``-`` (at most 80 characters; ``ranklens`` if nothing is left)."""
    stem = re.sub(r"[^\w.-]+", "-", name, flags=re.ASCII).strip("-.")[:80]
    return stem or "ranklens"


def figure_config(name: str = "ranklens", image_format: str = "png") -> dict[str, Any]:
    """Plotly's config for a dashboard chart: the toolbar's download button writes
    ``<name>.<image_format>`` (PNG at scale 2, SVG as vectors), no Plotly logo, no
    selection tools."""
    if image_format not in IMAGE_FORMATS:
        raise ValueError(f"unknown image format {image_format!r}; expected one of {', '.join(IMAGE_FORMATS)}")
    options: dict[str, Any] = {"format": image_format, "filename": file_stem(name)}
    if image_format == "png":
        options["scale"] = 2
    return {"displaylogo": False, "toImageButtonOptions": options, "modeBarButtonsToRemove": _REMOVED}


def image_format_picker(label: str = "Figure downloads") -> str:
    """A small PNG / SVG choice for the toolbars' download buttons of this page's figures."""
    choice = st.segmented_control(
        label,
        list(IMAGE_FORMATS),
        default="png",
        key=FORMAT_KEY,
        format_func=IMAGE_FORMATS.get,
        help="The camera button in a chart's toolbar (top right, on hover) downloads the chart in this format.",
    )
    return choice or "png"


def show_figure(
    fig: go.Figure, *, key: str | None = None, name: str = "ranklens", image_format: str | None = None
) -> None:
    """Draw ``fig`` across the page's width under the active theme (`core.charts.themed`),
    with the toolbar download of `figure_config` ``(name, image_format)``; ``image_format``
    defaults to the sidebar's choice (`image_format_picker`)."""
    image_format = image_format or state.FIG_FORMAT.get() or "png"
    theme_type = st.context.theme.type
    st.plotly_chart(
        themed(fig, theme_type),
        width="stretch",
        theme="streamlit",
        key=key,
        config=figure_config(name, image_format),
    )


#: the phone layout of an inline SVG replaces the desktop one below this viewport width (px):
#: Streamlit stacks columns there too
COMPACT_BELOW = 640
_SVG_CSS = (
    "<style>.ranklens-svg svg.ranklens-compact{display:none}"
    f"@media (max-width:{COMPACT_BELOW}px){{.ranklens-svg svg.ranklens-wide{{display:none}}"
    ".ranklens-svg svg.ranklens-compact{display:block}}</style>"
)


def show_svg(svg: str, *, name: str, key: str, compact: str | None = None) -> None:
    """Draw the inline SVG ``svg`` (a pure builder's, every user string escaped) across the
    page's width in a container keyed ``key`` (CSS class ``st-key-<key>``), with a small
    download button in the sidebar's figure format like every chart's toolbar
    (`image_format_picker`): ``<file_stem(name)>.png`` (`core.charts.raster.svg_to_png` at
    twice the size, on the theme's background, built on click) or ``.svg``. ``compact``: the
    same figure laid out for a phone, shown instead below `COMPACT_BELOW` px (CSS, no rerun):
    its text stays legible where the desktop figure would be scaled down to a third.

    Streamlit's Markdown keeps the SVG as it is (``st.html`` would strip it): the body starts
    with a ``<div>`` and has no blank line, so Markdown takes all of it as one HTML block and
    reads nothing inside it."""
    figures = [_tagged(svg, "ranklens-wide")] + ([_tagged(compact, "ranklens-compact"), _SVG_CSS] if compact else [])
    lines = "\n".join(line for part in figures for line in part.splitlines() if line.strip())
    with st.container(key=key, gap="small"):
        st.markdown(f'<div class="ranklens-svg" style="line-height:0">\n{lines}\n</div>', unsafe_allow_html=True)
        image_format = state.FIG_FORMAT.get() or "png"
        background = THEME_COLORS.get(st.context.theme.type or "light", THEME_COLORS["light"])["background"]
        st.download_button(
            f"Download {IMAGE_FORMATS[image_format]}",
            data=(lambda: _png(svg, background)) if image_format == "png" else svg,
            file_name=f"{file_stem(name)}.{image_format}",
            mime="image/png" if image_format == "png" else "image/svg+xml",
            key=f"{key}_download",
            on_click="ignore",
            type="tertiary",
            icon=":material/download:",
        )


def _png(svg: str, background: str) -> bytes:
    from core.charts.raster import svg_to_png

    return svg_to_png(svg, scale=2, background=background)


def _tagged(svg: str, css_class: str) -> str:
    """``svg`` with ``class="<css_class>"`` on its root element."""
    return svg.replace("<svg ", f'<svg class="{css_class}" ', 1)
