"""Tetris's later picks of a request reuse what stays the same from pick to pick (#34): the pick must be the
one the straightforward rule takes (every server scored, × penalty outside the previous pick's rack, the
arg-max over the allowed servers, lowest index on ties), on random builder states full of ties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcbench import Request, State
from dcbench.plugins.allocators.tetris import TetrisAllocator
from tests.conftest import tiered

NETWORK = tiered("tiered:8,1x4")


def reference_choose(tetris: TetrisAllocator, builder, allowed: np.ndarray) -> int:
    """The rule as written: score every server, penalise outside the rack of the request's previous pick."""
    network = tetris.network
    scores = np.dot(builder.free_resources, builder.request.demand / tetris.scale**2)
    links = network.server_link
    scores += np.where(links >= 0, builder.free_links.take(np.where(links >= 0, links, 0)), 0.0)
    if builder.chosen:
        outside = network.racks != network.racks[builder.chosen[-1]]
        scores[outside] *= tetris.penalty
    return int(np.where(allowed, scores, -np.inf).argmax())


values = st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0])


@pytest.mark.parametrize("keep", [True, False], ids=["scores-kept", "scored-per-pick"])
@settings(max_examples=150, deadline=None)
@given(penalty=st.sampled_from([0.0, 0.5, 0.9, 1.0]), scale=st.sampled_from([1.0, 10.0]),
       requests=st.lists(st.tuples(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 4.0, 16.0, 40.0]),
                                   st.sampled_from([0.0, 4.0, 16.0, 40.0]), st.sampled_from(["needed", "free"])),
                         min_size=1, max_size=3),
       full_links_free=st.booleans())
def test_tetris_picks_what_the_straightforward_rule_picks(keep, penalty, scale, requests, full_links_free):
    tetris = TetrisAllocator(penalty=penalty, scale=scale)
    tetris.reset(NETWORK, np.random.default_rng(0))
    assert tetris._scores_stay
    tetris._keep = keep  # keeping the scores from pick to pick (KEEP_SCORES_FROM servers on), or not
    builder = tetris.builder
    n = NETWORK.n_servers
    for i, (seed, cpu, mem, rule) in enumerate(requests):
        if cpu == mem == 0:
            cpu = 4.0
        rng = np.random.default_rng(seed)
        state = State(NETWORK)
        # Few distinct values, so that equal scores (ties inside, outside and across the rack) are common.
        state.free_resources[:] = rng.choice([0.0, 1.0, 2.0, 4.0, 8.0, 16.0], size=(n, 2))
        state.free_links[:] = rng.choice([2.0, 4.0, 8.0], size=len(state.free_links))
        if full_links_free:
            # Servers with nothing free have the most free channels, so the top scores are often servers
            # that may not be added: the arg-max must then look past them.
            nothing = state.free_resources.sum(axis=1) == 0
            state.free_links[NETWORK.server_link[nothing]] = 64.0
        request = Request(i, 0.0, 1.0, np.array([cpu, mem]), "pool", "all", allowed_servers=rule)
        builder.start(request, state)
        while builder.is_open:
            allowed = builder.allowed()
            if not allowed.any():
                break
            expected = reference_choose(tetris, builder, allowed)
            assert tetris.choose(builder, allowed) == expected
            builder.add(expected)


def test_a_tie_across_the_rack_goes_to_the_lower_index():
    # Server 0 (rack 0) and a server of the previous pick's rack score the same once penalised: the lower wins.
    tetris = TetrisAllocator(penalty=0.5)
    tetris.reset(NETWORK, np.random.default_rng(0))
    builder = tetris.builder
    racks = NETWORK.racks
    far = int(np.flatnonzero(racks != racks[0])[0])
    mate = int(np.flatnonzero(racks == racks[far])[1])
    state = State(NETWORK)
    state.free_resources[:] = 0.0
    state.free_links[:] = 0.0
    state.free_resources[far] = [16.0, 16.0]
    state.free_resources[0] = [8.0, 8.0]  # × 0.5 outside: 4 + 4
    state.free_resources[mate] = [4.0, 4.0]
    builder.start(Request(0, 0.0, 1.0, np.array([40.0, 40.0]), "pool", "all"), state)
    assert tetris.choose(builder, builder.allowed()) == far
    builder.add(far)
    allowed = builder.allowed()
    assert reference_choose(tetris, builder, allowed) == tetris.choose(builder, allowed) == min(0, mate)
