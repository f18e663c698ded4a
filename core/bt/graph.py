"""Structure of the comparison graph: connected components and whether the MLE exists."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from core.bt.counts import Aggregated


def components(agg: Aggregated) -> np.ndarray:
    """Connected-component label per model of the comparison graph (0-based, numbered in
    order of each component's first model, so the labelling is deterministic)."""
    m = agg.n_models
    if m == 0:
        return np.zeros(0, np.int64)
    g = sp.coo_matrix((np.ones(len(agg.pairs)), (agg.pairs[:, 0], agg.pairs[:, 1])), shape=(m, m))
    _, labels = connected_components(g, directed=False)
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    remap = np.empty_like(order)
    remap[order] = np.arange(len(order))
    return remap[labels]


def mle_exists(agg: Aggregated, comp: np.ndarray) -> bool:
    """Ford's condition: within each component the 'took points from' digraph
    (i -> j when i won or tied against j) is strongly connected."""
    m = agg.n_models
    if m == 0:
        return True
    i, j, c = agg.pairs[:, 0], agg.pairs[:, 1], agg.counts
    fwd = (c[:, 0] + c[:, 1]) > 0
    bwd = (c[:, 2] + c[:, 1]) > 0
    rows = np.concatenate([i[fwd], j[bwd]])
    cols = np.concatenate([j[fwd], i[bwd]])
    g = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, m))
    n_strong, _ = connected_components(g, directed=True, connection="strong")
    return bool(n_strong == len(np.unique(comp)))
