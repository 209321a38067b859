"""Which generators V2 runs for a question, in which order, and when it stops: its ensemble.

After the first draft, V2 goes on only where the verifier's early model is not sure of it. Then it runs the next
generator of :attr:`Ensemble.order` that applies to the question (:mod:`.generators`), until :attr:`Ensemble.budget`
drafts are written or the chosen reading is sure: its full-model probability reaches :attr:`Ensemble.stop` (None:
until no further draft could change the majority result, adaptive consistency, as for samples of one prompt).

An ensemble is fitted on training answers and shipped beside the verifier as ``ensemble.json``, naming the pools of
solved pairs its ``pairs`` generator reads (:attr:`Ensemble.pools`, files in the package). Without that file, V2
runs :data:`DEFAULT_ORDER`: the draft, a follow-up's stand-alone rewrite, then samples.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["DEFAULT_ORDER", "FIRST", "FOLLOW_UP", "MODEL_GENERATORS", "Ensemble", "load_ensemble"]

# The generators' names (:mod:`.generators`); besides them, readings the program makes itself (redraft, regroup...).
MODEL_GENERATORS = ("draft", "sample", "standalone", "pairs", "columns", "linked")
DEFAULT_ORDER = ("draft", "standalone", "sample", "sample")
FIRST, FOLLOW_UP = "first", "follow-up"  # the kinds of question a pool of solved pairs serves
PACKAGE = "text2sql_dspy.programs.agents"


@dataclass(frozen=True)
class Ensemble:
    """The generators in the order V2 runs them (a name twice: called twice, with another seed), the drafts it
    writes at most, the full-model probability at which the chosen reading is sure enough to stop (None: when the
    majority result is settled), the pools of solved pairs by kind of question (files in the package, or paths),
    and what it was fitted on."""

    order: tuple[str, ...] = DEFAULT_ORDER
    budget: int = 3
    stop: float | None = None
    pools: Mapping[str, str] = field(default_factory=dict)
    fitted_on: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": 1, "order": list(self.order), "budget": self.budget, "stop": self.stop,
                "pools": dict(sorted(self.pools.items())), "fitted_on": dict(self.fitted_on)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Ensemble:
        stop = data.get("stop")
        return cls(tuple(data["order"]), int(data["budget"]), None if stop is None else float(stop),
                   dict(data.get("pools", {})), dict(data.get("fitted_on", {})))


@cache
def load_ensemble() -> Ensemble:
    """The ensemble shipped in the package (``ensemble.json`` beside this module); the default one without it."""
    try:
        text = resources.files(PACKAGE).joinpath("ensemble.json").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return Ensemble()
    return Ensemble.from_json(json.loads(text))
