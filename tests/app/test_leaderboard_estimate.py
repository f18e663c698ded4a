"""The Leaderboard page says how long a fit takes (issue 26: no runaway defaults): the bootstrap
button's help names the rounds chosen with their estimate against the sandwich fit's."""

from __future__ import annotations

from tests.app.conftest import open_page


def test_the_bootstrap_button_says_how_long_it_takes(app):
    open_page(app, "leaderboard")
    (button,) = [b for b in app.button if b.proto.label == "Run bootstrap"]
    help_text = button.proto.help
    assert "1,000 rounds of resampled votes: about" in help_text, help_text
    assert "as measured on 2 cores" in help_text and "the sandwich intervals shown take about" in help_text
