"""Engines past one machine: streamed (bounded memory) and Ray-sharded evaluation, fusion and reranking.

``stream`` reads run files in chunks, partitions their rows by query into temporary Parquet
shards (`core.scale.shards`) and runs the ordinary vectorised code shard by shard
(`core.scale.tasks`); ``ray`` runs the same shard tasks on a Ray cluster
(`core.scale.engines.RayExecutor`). `core.scale.jobs` holds the two entry points,
`evaluate_files` and `fuse_files`; results equal the in-memory ones to the last bit.
"""
