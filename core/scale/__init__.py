"""Engines past one machine: streamed (bounded memory) and Ray-sharded evaluation, fusion and reranking."""
