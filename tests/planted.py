"""What every planted-mistake test of tests/labs/ asserts about a lab's checks: the learner's view."""
from __future__ import annotations


def outcome(checks) -> dict[str, str]:
    """{check description: PASS | FAIL | SKIP}, as the learner reads them."""
    return {r.description: r.status for r in checks.results}


def assert_fails_with_a_hint(checks) -> dict[str, str]:
    """At least one FAIL, and every FAIL with a hint line (never a bare FAIL, never all PASS)."""
    statuses = outcome(checks)
    assert "FAIL" in statuses.values(), statuses
    for r in checks.results:
        if r.status == "FAIL":
            assert any(line.strip().startswith("hint:") for line in r.lines), r.lines
    return statuses


def assert_all_pass(checks) -> None:
    statuses = outcome(checks)
    assert set(statuses.values()) == {"PASS"}, statuses
