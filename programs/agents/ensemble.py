"""Which generators V2 runs for a question, in which order, and when it stops: its ensemble.

After the first draft, V2 goes on only where the verifier's early model is not sure of it (below
:attr:`Ensemble.settle`, else the verifier's ``early_sure``). Then it runs the next
generator of :attr:`Ensemble.order` that applies to the question (:mod:`.generators`), until :attr:`Ensemble.budget`
drafts are written or the chosen reading is sure: its full-model probability reaches :attr:`Ensemble.stop` (None:
until no further draft could change the majority result, adaptive consistency, as for samples of one prompt).

An ensemble is fitted on training answers and shipped beside the verifier as ``ensemble.json``, naming the pools of
solved pairs its ``pairs`` generator reads (:attr:`Ensemble.pools`: files beside it, in the package; a compiled
ensemble's beside the compiled program). Without that file, V2 runs :data:`DEFAULT_ORDER`: the draft, a follow-up's
stand-alone rewrite, then samples.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from text2sql_dspy.programs.examples.carried_pairs import CarriedPairs

__all__ = ["DEFAULT_ORDER", "FIRST", "FOLLOW_UP", "MODEL_GENERATORS", "PROGRAM_MADE", "Ensemble", "load_ensemble"]

# The generators' names (:mod:`.generators`); besides them, another model's drafts under the name it was given, and
# the readings the program makes itself (:data:`PROGRAM_MADE`), which no generator drafted.
MODEL_GENERATORS = ("draft", "sample", "standalone", "pairs", "columns", "linked")
PROGRAM_MADE = ("redraft", "regroup", "repair", "loosen")
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
    settle: float | None = None  # the early model's P at which one draft is enough (None: the verifier's early_sure)

    def to_json(self) -> dict[str, Any]:
        return {"format": 1, "order": list(self.order), "budget": self.budget, "stop": self.stop,
                "settle": self.settle, "pools": dict(sorted(self.pools.items())), "fitted_on": dict(self.fitted_on)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], root: Path | str | None = None) -> Ensemble:
        """The ensemble ``data`` holds; its pools' paths, where relative, taken from ``root`` (the file's folder)."""
        stop, settle = data.get("stop"), data.get("settle")
        pools = {kind: str(Path(root, path)) if root is not None else path
                 for kind, path in dict(data.get("pools", {})).items()}
        return cls(tuple(data["order"]), int(data["budget"]), None if stop is None else float(stop), pools,
                   dict(data.get("fitted_on", {})), None if settle is None else float(settle))

    @classmethod
    def read(cls, path: Path | str) -> Ensemble:
        """An ensemble file (a compile's), its pools found beside it."""
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")), Path(path).parent)

    def pool(self, kind: str) -> CarriedPairs | None:
        """The pool of solved pairs its ``pairs`` generator shows a question of ``kind`` (:data:`FIRST` or
        :data:`FOLLOW_UP`), read once per process; None where it names none."""
        path = self.pools.get(kind)
        return None if path is None else _pool(path)


@cache
def _pool(path: str) -> CarriedPairs:
    from text2sql_dspy.programs.examples.carried_pairs import CarriedPairs

    return CarriedPairs.load(path)


@cache
def load_ensemble() -> Ensemble:
    """The ensemble shipped in the package (``ensemble.json`` beside this module); the default one without it."""
    folder = resources.files(PACKAGE)
    try:
        text = folder.joinpath("ensemble.json").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return Ensemble()
    return Ensemble.from_json(json.loads(text), Path(str(folder)))
