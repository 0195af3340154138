"""The pool builder reused across requests (#34): its `start` brings it up to
date from what changed, and must leave it exactly as a fresh builder's."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcbench import PoolBuilder, Request, State
from dcbench.model.allocation import StateJournal
from dcbench.model.network import share_divisor
from dcbench.model.requests import Departing
from tests.conftest import tiered

NETWORK = tiered("tiered:8,1x4")


def bits(array):
    return np.asarray(array, dtype=np.float64).view(np.uint64)


def random_request(rng):
    demand = rng.choice([0.0, 4.0, 16.0, 40.0, 100.0], size=len(NETWORK.resources))
    if not demand.any():
        demand[0] = 8.0
    departing = None
    if rng.random() < 0.3:  # something departs inside the request: freed after its first server
        servers = rng.integers(0, NETWORK.n_servers, size=3)
        links = rng.integers(0, NETWORK.n_links, size=4)
        departing = Departing(servers, rng.choice([0.0, 2.0, 8.0], size=(3, len(NETWORK.resources))),
                              links, np.full(4, 2.0))
    return Request(0, 0.0, 1.0, demand, "pool", str(rng.choice(["all", "cpu"])),
                   allowed_servers=str(rng.choice(["needed", "free"])), departing=departing)


def change_state(rng, state):
    # With a journal, each write is recorded as the engine records its own: one server or link at a time here.
    journal = state.journal or StateJournal()
    for server in rng.integers(0, NETWORK.n_servers, size=rng.integers(0, 6)):
        state.free_resources[server] = rng.choice([0.0, -0.0, 1.0, 8.0, 32.0], size=len(NETWORK.resources))
        journal.record(np.array([server]), np.zeros(0, dtype=np.int64))
    for link in rng.integers(0, NETWORK.n_links, size=rng.integers(0, 10)):
        state.free_links[link] = rng.choice([0.0, -0.0, 2.0, 4.0, 16.0])
        journal.record(np.zeros(0, dtype=np.int64), np.array([link]))
    if rng.random() < 0.05:  # an OCS-like change of many links at once
        state.free_links[:] = rng.choice([0.0, 2.0, 8.0], size=NETWORK.n_links)
        journal.record(np.zeros(0, dtype=np.int64), np.arange(NETWORK.n_links))


def assert_same(reused, fresh):
    assert (bits(reused.free_resources) == bits(fresh.free_resources)).all()
    assert (bits(reused.free_links) == bits(fresh.free_links)).all()
    assert (bits(reused._free_links) == bits(fresh._free_links)).all()
    assert (reused.allowed() == fresh.allowed()).all()
    assert reused.remaining.tolist() == fresh.remaining.tolist()
    # NALB/NULB's link weights, kept up to date link by link, are what the router computed from the free links
    capacity = share_divisor(NETWORK.link_capacity).tolist()
    expected = [2.0 - free / divisor for free, divisor in zip(fresh._free_links, capacity)]
    assert (bits(reused.link_weights()) == bits(expected)).all()


@pytest.mark.parametrize("copy_whole, journal", [(False, False), (False, True), (True, False)],
                         ids=["what-changed", "journal", "whole-copy"])
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 25))
def test_a_reused_builder_starts_as_a_fresh_one(copy_whole, journal, seed, n_requests):
    # Small networks copy the whole state at `start` (COPY_WHOLE_BELOW), large ones what changed, found by
    # comparing or read from the state's journal: every way. The journal keeps 3 writes here, so a builder
    # often falls behind it and compares instead.
    rng = np.random.default_rng(seed)
    state = State(NETWORK)
    if journal:
        state.journal = StateJournal()
        state.journal.KEEP = 3
    reused = PoolBuilder(NETWORK)
    reused._copy_whole = copy_whole
    reused.link_weights()  # kept from now on
    for _ in range(n_requests):
        change_state(rng, state)
        request = random_request(rng)
        fresh = PoolBuilder(NETWORK)
        fresh._copy_whole = copy_whole
        reused.start(request, state)
        fresh.start(request, state)
        assert_same(reused, fresh)
        # Build it on both, the same servers: the same steps, the same result.
        for _ in range(int(rng.integers(0, 6))):
            allowed = np.flatnonzero(reused.allowed())
            if not reused.is_open or not len(allowed):
                break
            server = int(rng.choice(allowed))
            assert reused.add(server) == fresh.add(server)
            assert reused.status == fresh.status
            assert_same(reused, fresh)
        assert repr(reused.result()) == repr(fresh.result())
        assert reused.routes == fresh.routes
