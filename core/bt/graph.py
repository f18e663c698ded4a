"""Structure of the comparison graph: connected components, whether the MLE exists, and which
ratings the data identify when it does not.

Two graphs on the models: the *comparison graph* (i -- j when they met) and the *points
digraph* (i -> j when i won or tied against j, i.e. took points from j). The maximum
likelihood ratings are finite iff within each connected component of the first the second is
strongly connected (Ford, 1957). Otherwise the likelihood's supremum is approached by pulling
the strongly connected groups apart (every vote between two groups went one way), so only the
differences *within* a strongly connected group are estimable; between groups only the order
is known (`identify`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components

from core.bt.counts import Aggregated

#: `Identification.side` codes: rated in the reference group, unbounded above / below, not comparable
REFERENCE, ABOVE, BELOW, APART = 0, 1, -1, 2


def _first_order_labels(labels: np.ndarray) -> np.ndarray:
    """Relabel ``labels`` 0, 1, ... in order of each label's first model (deterministic)."""
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    remap = np.empty_like(order)
    remap[order] = np.arange(len(order))
    return remap[labels]


def components(agg: Aggregated) -> np.ndarray:
    """Connected-component label per model of the comparison graph (0-based, numbered in
    order of each component's first model, so the labelling is deterministic)."""
    m = agg.n_models
    if m == 0:
        return np.zeros(0, np.int64)
    g = sp.coo_matrix((np.ones(len(agg.pairs)), (agg.pairs[:, 0], agg.pairs[:, 1])), shape=(m, m))
    _, labels = connected_components(g, directed=False)
    return _first_order_labels(labels)


def points_digraph(agg: Aggregated) -> sp.csr_matrix:
    """The points digraph as a CSR adjacency matrix: i -> j when i won or tied against j."""
    m = agg.n_models
    i, j, c = agg.pairs[:, 0], agg.pairs[:, 1], agg.counts
    fwd = (c[:, 0] + c[:, 1]) > 0
    bwd = (c[:, 2] + c[:, 1]) > 0
    rows = np.concatenate([i[fwd], j[bwd]])
    cols = np.concatenate([j[fwd], i[bwd]])
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, m))


def strong_components(agg: Aggregated) -> np.ndarray:
    """Strongly connected group label per model of the points digraph (numbered in order of
    each group's first model). Ties join both models to one group."""
    m = agg.n_models
    if m == 0:
        return np.zeros(0, np.int64)
    _, labels = connected_components(points_digraph(agg), directed=True, connection="strong")
    return _first_order_labels(labels)


def mle_exists(agg: Aggregated, comp: np.ndarray) -> bool:
    """Ford's condition: within each component the points digraph is strongly connected."""
    if agg.n_models == 0:
        return True
    return bool(strong_components(agg).max() + 1 == len(np.unique(comp)))


@dataclass(frozen=True)
class Identification:
    """What the votes identify when no finite MLE exists.

    ``group`` (M,): strongly connected group per model. In each connected component one group
    is the *reference*: the one with most models, then most votes, then the first to appear.
    ``side`` (M,): `REFERENCE` for its models (their rating differences are estimable),
    `ABOVE` for models that took points, directly or through others, from the reference
    group but never lost any back (their rating is +inf relative to it), `BELOW` for the
    converse (-inf), `APART` for models ordered neither way (not estimable, NaN).
    """

    group: np.ndarray
    side: np.ndarray

    @property
    def estimable(self) -> np.ndarray:
        """(M,) mask of the models rated in their component's reference group."""
        return self.side == REFERENCE

    def names(self, models: list[str], side: int) -> list[str]:
        """The models on ``side`` (`ABOVE`, `BELOW`, `APART` or `REFERENCE`), in model order."""
        return [models[k] for k in np.flatnonzero(self.side == side)]


def _reference_groups(group: np.ndarray, comp_of: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """Per component, the label of its reference group: most models, then most votes (the sum
    over its models), then the lowest label (the first to appear). ``comp_of``: component
    per group."""
    n_groups = len(comp_of)
    size = np.bincount(group, minlength=n_groups)
    weight = np.bincount(group, votes.astype(np.float64), minlength=n_groups)
    # lexsort: the last key is the primary one -> component, then -size, then -votes, then label
    order = np.lexsort((np.arange(n_groups), -weight, -size, comp_of))
    first = np.ones(n_groups, bool)
    first[1:] = comp_of[order][1:] != comp_of[order][:-1]
    ref = np.empty(int(comp_of.max()) + 1, np.int64)
    ref[comp_of[order][first]] = order[first]
    return ref


def identify(agg: Aggregated, comp: np.ndarray, votes: np.ndarray) -> Identification:
    """The `Identification` of ``agg`` with components ``comp`` and ``votes`` per model (the
    reference group's tie-break). Reachability in the points digraph from one model of each
    reference group gives the models below it; in the reversed digraph, those above."""
    group = strong_components(agg)
    side = np.zeros(agg.n_models, np.int8)
    if agg.n_models == 0:
        return Identification(group, side)
    comp_of = np.zeros(int(group.max()) + 1, np.int64)
    comp_of[group] = comp
    ref = _reference_groups(group, comp_of, votes)
    side[:] = APART
    side[group == ref[comp]] = REFERENCE
    loose = np.flatnonzero(np.bincount(comp_of) > 1)  # components not strongly connected
    if len(loose):
        g = points_digraph(agg)
        gt = g.T.tocsr()
        for c in loose:
            start = int(np.flatnonzero(group == ref[c])[0])
            below = breadth_first_order(g, start, directed=True, return_predecessors=False)
            above = breadth_first_order(gt, start, directed=True, return_predecessors=False)
            side[below[side[below] != REFERENCE]] = BELOW
            side[above[side[above] != REFERENCE]] = ABOVE
    return Identification(group, side)
