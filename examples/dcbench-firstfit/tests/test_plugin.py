"""The package's own tests: dcbench's conformance checks on each plugin it
registers, as any third party writes them (`dcbench.testing`)."""

import pytest

from dcbench.testing import ContractError, check_allocator, check_metric, check_suite, check_workload


def test_firstfit_keeps_the_allocator_contract():
    check_allocator("firstfit")
    check_allocator("firstfit:stay_in_rack=no")


def test_cpuheavy_keeps_the_workload_contract():
    check_workload("cpuheavy")
    check_workload("cpuheavy:max_cpu=32,max_mem=4", topology="tiered:16,1x8")


def test_locality_keeps_the_metric_contract():
    check_metric("locality")


def test_the_suite_resolves():
    check_suite("firstfit-small")


def test_the_checks_would_catch_a_broken_allocator(monkeypatch):
    """Our tests are worth something only if they can fail: a first fit that
    ignores what the builder allows must be caught."""
    from dcbench_firstfit.allocator import FirstFit

    monkeypatch.setattr(FirstFit, "choose", lambda self, builder, allowed: 0)
    with pytest.raises(ContractError):
        check_allocator("firstfit")
