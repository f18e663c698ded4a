"""Documents to send: what RankLens hands to people without a server (issue 25).

`core.publish.html`: one self-contained HTML report (inline SVG figures and CSS, no script,
no request off the file) of runs against qrels and of a leaderboard, built by
``python -m core report`` and the pages' "Download report" button from the same functions.
This layer sits above `core.workspace` (the datasets' content digests) and under the CLI.
"""
