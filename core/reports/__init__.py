"""Report shaping for the dashboard: pure, typed functions from core results to the tables a
page shows (no Streamlit, no I/O). One module per page / capability:

============  ==========================================================================
`metrics`     Metrics and Home: summary with tie ranges and significance markers, detail
              table, tie statistics, the per-query drill-down of one query
`data`        Data: a run's score range, qrels grade counts, answers with their scores
`fusion`      Fusion: the evaluation table of the inputs and the fused run, relevant docids
`leaderboard` Leaderboard: the displayed table (interval text, models not estimable), captions
`rerank`      Rerank: estimate, usage, metrics before/after and before/after ranked lists
============  ==========================================================================

A page reads its widgets, calls core (through `pages.common.cache`), passes the results
here and renders what comes back; anything a page shows that is computed is tested here.
"""
