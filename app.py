"""RankLens dashboard: page config, navigation and the shared sidebar (`make run`)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from core.runtime import tune_process
from pages.common import cache, links, ui

tune_process(server=True)  # allocator tuning for a server (idempotent: pages.common.serve calls it first)
#: the favicon is a local file: a Material icon here makes the browser fetch it from a web font host
ICON = str(Path(__file__).with_name("pages") / "common" / "icon.png")  # package data: installed with pages
# "auto": the sidebar opens on a desktop and starts closed on a phone, where it would cover the page
st.set_page_config(page_title="RankLens", page_icon=ICON, layout="wide", initial_sidebar_state="auto")

# url_path values differ from the file stems on purpose (see STREAMLIT.md: deep links on a
# fresh server would otherwise run a page without this frame).
PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", url_path="overview", default=True),
    st.Page("pages/data.py", title="Data", icon=":material/database:", url_path="datasets"),
    st.Page("pages/metrics.py", title="Metrics", icon=":material/analytics:", url_path="evaluate"),
    st.Page("pages/fusion.py", title="Fusion", icon=":material/merge:", url_path="fuse"),
    st.Page("pages/leaderboard.py", title="Leaderboard", icon=":material/social_leaderboard:", url_path="arena"),
    st.Page("pages/rag.py", title="RAG", icon=":material/quiz:", url_path="rag-eval"),
    st.Page("pages/rerank.py", title="Rerank", icon=":material/swap_vert:", url_path="llm-rerank"),
]

navigation = st.navigation(PAGES, position="sidebar", expanded=True)
links.start(navigation, PAGES)  # a session's first run opens ?workspace= / serve --workspace; the view is remembered
counts = ui.sidebar()
try:
    navigation.run()
finally:  # also after st.stop(): the counts reflect what this very run loaded or removed
    ui.sidebar_counts(counts)
    cache.warm_up()  # once per process, after the first page is out: the other pages' imports and demos
