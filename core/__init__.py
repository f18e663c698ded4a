"""RankLens core: evaluation, fusion, Bradley-Terry ratings and LLM reranking (no UI code)."""

__version__ = "0.1.0"
