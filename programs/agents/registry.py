"""Programs by name (``baseline``, ``v1``, ``v2``) or by compiled JSON path — the one place that builds them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.agents.baseline import Baseline
from text2sql_dspy.programs.agents.react import ReActAgent, ReActAgentV2
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.store import ExampleStore

PROGRAMS: dict[str, type[Text2SQLProgram]] = {"baseline": Baseline, "v1": ReActAgent, "v2": ReActAgentV2}


def metadata_path(compiled: Path) -> Path:
    """The sidecar that records what a compiled JSON is (program, optimizer, metric, scores...)."""
    return compiled.with_suffix(".meta.json")


def make_program(spec: str, **options: Any) -> Text2SQLProgram:
    """Build ``spec``: a program name, or a compiled ``.json`` saved by ``text2sql compile``.

    Options are constructor arguments (``db_path``, ``schema_path``, ``docs``...); ``judge_model_id``/
    ``judge_lm``/``max_judge_calls`` are dropped for programs without a judge. A compiled program is shown
    the example store its metadata names (kept beside it), unless ``examples`` is given.
    """
    path = Path(spec)
    kind = spec.lower()
    meta: dict[str, Any] = {}
    if path.suffix == ".json":
        if not path.is_file():
            raise ConfigurationError(f"compiled program not found: {path}. Compile one with `text2sql compile`.")
        meta_file = metadata_path(path)
        try:
            meta = json.loads(meta_file.read_text())
            kind = meta["program"]
        except (OSError, json.JSONDecodeError, KeyError) as exc:
            raise ConfigurationError(
                f"{meta_file} is missing or has no 'program' entry ({exc}); "
                "it is written next to every compiled program."
            ) from exc
    cls = PROGRAMS.get(kind)
    if cls is None:
        raise ConfigurationError(f"unknown program {spec!r}: use one of {', '.join(PROGRAMS)}, "
                                 "or a compiled .json path.")
    if not issubclass(cls, ReActAgent):  # only the agents take a judge
        for key in ("judge_model_id", "judge_lm", "max_judge_calls"):
            options.pop(key, None)
    if meta.get("ensemble"):  # a compiled ensemble: its order, pools and verifier, beside the file
        from text2sql_dspy.programs.agents.ensemble import Ensemble
        from text2sql_dspy.programs.agents.verifier import Verifier

        options.setdefault("ensemble", Ensemble.read(path.parent / meta["ensemble"]))
        options.setdefault("verifier", Verifier.read(path.parent / meta["verifier"]))
    if meta.get("examples") and options.get("examples") is None:
        options["examples"] = compiled_store(path, meta)
        if meta.get("k_examples") is not None:
            options.setdefault("k_examples", meta["k_examples"])  # as many pairs a question as compile showed
    program = cls(**options)
    if path.suffix == ".json":
        program.load(str(path))
    return program


def compiled_store(compiled: Path, meta: dict[str, Any]) -> Path:
    """The example store a compiled program names: a path relative to the compiled file's folder. Where the
    store is missing but its export (``<name>.examples.json``, written by compile) is there, the store is
    rebuilt from the export."""
    store = compiled.parent / meta["examples"]
    export = compiled.parent / meta["examples_export"] if meta.get("examples_export") else None
    if not store.is_file() and export is not None and export.is_file():
        ExampleStore(store).restore(export)
    if not store.is_file():
        raise ConfigurationError(
            f"{compiled} learned from the example store {store}, which is missing. Keep the store (or its export "
            f"{meta.get('examples_export', '<name>.examples.json')}) beside the compiled file, or pass "
            "examples=... (--examples) to use another."
        )
    return store
