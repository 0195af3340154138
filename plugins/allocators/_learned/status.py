"""The one-line status of a training row that ``dcbench train`` shows: a
warm start's teacher episode or epoch, or a training iteration's
acceptance (blocking, for jobs) and losses."""

from __future__ import annotations

from typing import Any, Callable

Progress = Callable[[dict[str, Any]], None]


def with_status(progress: Progress | None) -> Progress | None:
    """``progress`` handed each row with its ``status`` line added (the row
    itself, which the training curve keeps, is left as it is)."""
    if progress is None:
        return None
    report = progress
    return lambda row: report({**row, "status": status_line(row)})


def status_line(row: dict[str, float]) -> str:
    """``row`` as one status text."""
    def number(key: str) -> float:
        value = row.get(key, float("nan"))
        return value if isinstance(value, (int, float)) else float("nan")

    if "teacher_trial_episode" in row:
        return (f"teacher trial {number('teacher_trial_episode'):.0f}/{number('teacher_trial_episodes'):.0f}  "
                f"acceptance {number('acceptance'):.3f}")
    if "warm_start_episode" in row:
        of = f"/{number('warm_start_episodes'):.0f}" if "warm_start_episodes" in row else ""
        return f"warm start: teacher episode {number('warm_start_episode'):.0f}{of}  acceptance " \
               f"{number('acceptance'):.3f}"
    if "imitation_epoch" in row:
        return (f"warm start: epoch {number('imitation_epoch'):.0f}  loss {number('policy_loss'):.4f}  "
                f"agreement {number('agreement'):.3f}")
    first = (f"blocking {number('blocking'):.3f}  ε {number('epsilon'):.3f}" if "blocking" in row  # jobs
             else f"acceptance {number('acceptance'):.3f}")
    status = (f"{first}  policy {number('policy_loss'):+.4f}  value {number('value_loss'):.3f}  "
              f"entropy {number('entropy'):.3f}")
    validation = number("validation_acceptance")
    if validation == validation:  # not NaN: this iteration was validated
        status += f"  validation {validation:.3f}"
    return status
