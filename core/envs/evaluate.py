"""Any policy on a suite, as the heuristics run it (`evaluate`), and the store that names a policy by its content:
the allocator ``policy:sha256=ID`` runs the policy of that ID (docs/policies.md)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import io
import json
import marshal
import os
import pickle
import re
import shutil
import sys
import tempfile
import types
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from dcbench.envs.suites import check_measured, find_scenario
from dcbench.errors import AllocatorError, DcbenchError, NotInstalledError, PluginError, SpecError, describe
from dcbench.model.suite import Scenario, Suite
from dcbench.registry import Registry
from dcbench.running.runner import Runner, check_seed, measuring, run_plan
from dcbench.storage.paths import _FOLDER_MODE
from dcbench.storage.records import read_json

POLICY_ALLOCATOR = "policy"  # the built-in allocator that runs a policy (plugins/allocators/policy.py)
STORE_VARIABLE = "DCBENCH_POLICIES"  # the policy store's folder, where it is not the default
ID_LENGTH = 16  # hex digits of a policy's SHA-256 in its allocator spec
POLICY_ID = re.compile(rf"[0-9a-f]{{{ID_LENGTH}}}")
RECORD = "policy.json"  # a stored policy's record, in its folder
PYTHON_ATTRIBUTE = "policy"  # what a Python file added without ":NAME" defines
PICKLE_PROTOCOL = 4  # fixed, so that a digest does not change with Python's default protocol
# The policies `evaluate` runs in this process, by ID: (full digest, policy).
_SESSION: dict[str, tuple[str, Any]] = {}
# The stored policies loaded in this process, by (store, ID): (full digest, policy).
_LOADED: dict[tuple[str, str], tuple[str, Any]] = {}


def action_index(answer: Any) -> int:
    """A policy's answer as an int action: an integer, or an integer array of one element; never rounded."""
    if isinstance(answer, (Integral, np.integer)) and not isinstance(answer, (bool, np.bool_)):
        return int(answer)
    if isinstance(answer, np.ndarray) and answer.size == 1 and np.issubdtype(answer.dtype, np.integer):
        return int(answer.reshape(()))
    shown = f"a {answer.dtype} array of shape {answer.shape}" if isinstance(answer, np.ndarray) else repr(answer)
    raise AllocatorError(f"the policy returned {shown[:80]}, not an action: an integer, the index of a server "
                         "(pools) or a rack (jobs)")


def policy_function(policy: Any) -> Callable[[Mapping[str, np.ndarray]], int]:
    """The observation-to-action function `evaluate` and the policy allocator call: ``policy.predict(observation,
    ...)`` where it has one (with ``action_masks`` and ``deterministic=True`` where it names them), else ``policy``.

    Args:
        policy: A callable, or an object with ``predict``.

    Returns:
        ``decide(observation) -> int``.

    Raises:
        SpecError: ``policy`` is neither callable nor has a ``predict``.
    """
    predict = getattr(policy, "predict", None)
    if callable(predict):
        try:
            named = inspect.signature(predict).parameters
        except (TypeError, ValueError):  # a builtin without a signature: pass the observation alone
            named = {}
        masks, deterministic = "action_masks" in named, "deterministic" in named

        def decide(observation: Mapping[str, np.ndarray]) -> int:
            options: dict[str, Any] = {"deterministic": True} if deterministic else {}
            if masks:
                options["action_masks"] = np.asarray(observation["action_mask"]) != 0
            answer = predict(observation, **options)
            return action_index(answer[0] if isinstance(answer, tuple) else answer)

        return decide
    if callable(policy):
        return lambda observation: action_index(policy(observation))
    raise SpecError(f"a policy is a callable from an observation to an action, or has a predict(observation) "
                    f"method; got {type(policy).__name__}")


def _tensor(dtype: str, shape: tuple[int, ...], data: bytes) -> None:
    """What a tensor stands for in a digest (never called: a digest is never unpickled)."""


class _Digester(pickle.Pickler):
    """pickle, with every torch tensor written as dtype, shape and bytes: torch's own pickling writes a new
    serialization id each time, so the same weights would never give the same digest twice."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj).__module__.startswith("torch") and hasattr(obj, "detach") and hasattr(obj, "numpy"):
            try:
                array = np.ascontiguousarray(obj.detach().cpu().numpy())
            except Exception:  # a tensor numpy cannot hold (bfloat16, a meta tensor): torch's own pickling
                return NotImplemented
            return _tensor, (str(obj.dtype), tuple(array.shape), array.tobytes())
        return NotImplemented


def _dumps(value: Any) -> bytes:
    buffer = io.BytesIO()
    _Digester(buffer, protocol=PICKLE_PROTOCOL).dump(value)
    return buffer.getvalue()


def _pickled(value: Any, what: str) -> bytes:
    try:
        return _dumps(value)
    except Exception as exc:  # PicklingError, a TypeError of an object that refuses, ...
        raise SpecError(f"{what} cannot be identified by its content: pickling it failed ({describe(exc)}); give "
                        "the policy a `fingerprint` attribute, a string that changes whenever its decisions may "
                        "(the SHA-256 of its weights file, say), or save it to a file and `dcbench policy add` "
                        "it") from None


def _object_content(policy: Any) -> bytes:
    # an object pickled; failing that, its attributes one by one, those that do not pickle named but left out
    what = f"the policy (a {type(policy).__name__})"
    try:
        return _dumps(policy)
    except Exception:
        state = getattr(policy, "__dict__", None)
        if not isinstance(state, dict):
            return _pickled(policy, what)  # (its error)
    kept, left_out = [], []
    for key in sorted(state, key=str):
        try:
            kept.append(_dumps((key, state[key])))
        except Exception:
            left_out.append(str(key))
    if not kept:
        return _pickled(policy, what)
    return b"attributes\n" + b"".join(kept) + b"\nleft out\n" + "\n".join(left_out).encode()


def _bare_code(code: types.CodeType) -> types.CodeType:
    # without the file it was read from (nested ones too)
    consts = tuple(_bare_code(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename="", co_consts=consts)


def _source(obj: Any) -> bytes | None:
    try:
        return inspect.getsource(obj).encode()
    except (OSError, TypeError):  # defined at a prompt, or built in
        return None


def _function_content(function: types.FunctionType) -> bytes:
    # its source (else its bytecode), then its defaults and its closure's values
    source = _source(function)
    code = source if source is not None else marshal.dumps(_bare_code(function.__code__))
    cells = tuple(cell.cell_contents for cell in function.__closure__ or ())
    held = _pickled((function.__defaults__, function.__kwdefaults__, cells), f"function {function.__qualname__!r}")
    return b"function\n" + code + b"\n" + held


def policy_digest(policy: Any) -> str:
    """The SHA-256 of a policy's content, never its path; its first `ID_LENGTH` hex digits name it.

    A string ``fingerprint`` attribute where it has one; a function's source (else bytecode), defaults and closure
    (not the module globals it reads); a bound method's function and object; any other object pickled, with its
    class's source.

    Args:
        policy: The policy.

    Returns:
        64 hex digits.

    Raises:
        SpecError: Not a policy, an empty ``fingerprint``, or it cannot be pickled.
    """
    policy_function(policy)  # (refuses what is no policy)
    declared = getattr(policy, "fingerprint", None)
    if isinstance(declared, str):
        if not declared.strip():
            raise SpecError("the policy's fingerprint is an empty string; give a string that changes whenever its "
                            "decisions may")
        content = b"fingerprint\n" + declared.encode()
    elif isinstance(policy, types.FunctionType):
        content = _function_content(policy)
    elif isinstance(policy, types.MethodType) and isinstance(policy.__func__, types.FunctionType):
        content = (b"method\n" + _function_content(policy.__func__) + b"\n"
                   + _pickled(policy.__self__, f"the object of method {policy.__func__.__qualname__!r}"))
    else:
        content = b"object\n" + _object_content(policy) + b"\n" + (_source(type(policy)) or b"")
    return hashlib.sha256(content).hexdigest()


def policy_store() -> Path:
    """The policy store's folder: ``$DCBENCH_POLICIES``, else ``$XDG_CACHE_HOME/dcbench/policies``.

    Returns:
        The folder (it may not exist yet).
    """
    given = os.environ.get(STORE_VARIABLE)
    if given:
        return Path(given).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(cache).expanduser() / "dcbench" / "policies"


# What policy.json holds: a StoredPolicy's fields but its folder.
RECORD_FIELDS = ("id", "sha256", "kind", "name", "source", "file", "attribute", "loader")


@dataclass(frozen=True)
class StoredPolicy:
    """A policy in the store, as recorded in ``<store>/<id>/policy.json``.

    Attributes:
        id: `ID_LENGTH` hex digits of ``sha256``, as in ``policy:sha256=ID``.
        sha256: The SHA-256 of its content.
        kind: ``"python"`` (a Python file), ``"file"`` (read by a loader) or ``"module"`` (``module:attr``).
        name: A name for people (``--name``), or "".
        source: What was added, as given.
        file: The stored copy's name in its folder (None for a module).
        attribute: What a Python file defines, or a module's ``attr``.
        loader: The ``module:function`` that loads a ``"file"``, or None.
        folder: Its folder in the store.
    """

    id: str
    sha256: str
    kind: str
    name: str
    source: str
    file: str | None
    attribute: str | None
    loader: str | None
    folder: Path

    @property
    def spec(self) -> str:
        """The allocator spec that runs it: ``policy:sha256=ID``."""
        return f"{POLICY_ALLOCATOR}:sha256={self.id}"

    def record(self) -> dict[str, Any]:
        """What ``policy.json`` holds.

        Returns:
            Its fields but the folder, by name.
        """
        return {key: getattr(self, key) for key in RECORD_FIELDS}


def _file_digest(kind: str, how: str, data: bytes) -> str:
    return hashlib.sha256(f"{kind}\n{how}\n".encode() + data).hexdigest()


def _attribute(module: Any, path: str, where: str) -> Any:
    value = module
    for part in path.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise SpecError(f"{where} has no attribute {path!r}") from None
    return value


def _imported(reference: str) -> Any:
    # what ``module:attr`` (``attr`` may be dotted: ``pkg.mod:Class.load``) names
    module_name, _, path = reference.partition(":")
    if not module_name or not path:
        raise SpecError(f"{reference!r} is not MODULE:ATTRIBUTE (mypackage.policies:greedy, say)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(f"cannot import {module_name!r} for {reference!r}: {describe(exc)}") from None
    return _attribute(module, path, f"module {module_name!r}")


def _run_python_file(path: Path, attribute: str, module_name: str) -> Any:
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # (a dataclass in it looks itself up there)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise PluginError(f"policy file {path.name}: {describe(exc)}") from exc
    return _attribute(module, attribute, f"policy file {path.name}")


def _load_record(stored: StoredPolicy) -> Any:
    if stored.kind == "module":
        policy = _imported(f"{stored.source.partition(':')[0]}:{stored.attribute}")
        now = policy_digest(policy)
        if now != stored.sha256:
            raise SpecError(f"policy {stored.id} ({stored.source}) has changed since it was added: its content's "
                            f"id is now {now[:ID_LENGTH]}; add it again, and run that id")
        return policy
    path = stored.folder / (stored.file or "")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"policy {stored.id}: its stored file cannot be read ({describe(exc)}); add it again") from None
    how = stored.attribute if stored.kind == "python" else stored.loader
    if _file_digest(stored.kind, how or "", data) != stored.sha256:
        raise SpecError(f"policy {stored.id}: its stored file '{path}' is not the one added (its digest differs); "
                        "remove that folder and add the policy again")
    if stored.kind == "python":
        return _run_python_file(path, stored.attribute or PYTHON_ATTRIBUTE, f"dcbench_policy_{stored.id}")
    loader = _imported(stored.loader or "")
    try:
        return loader(str(path))
    except DcbenchError:
        raise
    except Exception as exc:
        raise PluginError(f"policy {stored.id}: its loader {stored.loader} failed on its file: {describe(exc)}"
                          ) from exc


def _read_record(folder: Path) -> StoredPolicy:
    try:
        record = read_json(folder / RECORD)
        stored = StoredPolicy(**{key: record[key] for key in RECORD_FIELDS}, folder=folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpecError(f"the policy store's '{folder / RECORD}' does not read ({describe(exc)}); remove that "
                        "folder and add the policy again") from None
    if stored.id != folder.name or not stored.sha256.startswith(stored.id) or stored.kind not in (
            "python", "file", "module"):
        raise SpecError(f"the policy store's '{folder / RECORD}' is not the record of policy {folder.name}; remove "
                        "that folder and add the policy again")
    return stored


def stored_policies(store: Path | None = None) -> list[StoredPolicy]:
    """The policies in the store, by ID.

    Args:
        store: The store's folder (None: `policy_store`).

    Returns:
        Their records, a damaged one left out.
    """
    store = store or policy_store()
    if not store.is_dir():
        return []
    found = []
    for folder in sorted(store.iterdir()):
        if POLICY_ID.fullmatch(folder.name) and (folder / RECORD).is_file():
            with contextlib.suppress(SpecError):
                found.append(_read_record(folder))
    return found


def _stored(policy_id: str, store: Path) -> StoredPolicy | None:
    folder = store / policy_id
    return _read_record(folder) if (folder / RECORD).is_file() else None


def add_policy(source: str | Path, *, loader: str | None = None, name: str | None = None,
               store: Path | None = None) -> StoredPolicy:
    """Put a policy in the store, named by its content; adding the same content again keeps the first record.

    ``FILE.py[:NAME]`` is a Python file defining ``policy`` (or NAME), copied; any other FILE needs ``loader``, called
    on the stored copy's path; ``module:attr`` is stored by reference, its digest checked at every load.

    Args:
        source: A path, or ``module:attr``.
        loader: The ``module:function`` that loads a file that is not Python.
        name: A name for people, shown by ``dcbench policy list``.
        store: The store's folder (None: `policy_store`).

    Returns:
        The stored policy; its ``spec`` is the allocator spec that runs it.

    Raises:
        SpecError: Nothing at ``source``, a non-Python file without a loader, a loader for a module, or no policy.
        PluginError: The policy's own code, or its loader, raised.
    """
    store = store or policy_store()
    text = str(source)
    before, _, after = text.rpartition(":")
    if Path(text).is_file():
        file, attribute = Path(text), None
    elif before.endswith(".py") and Path(before).is_file() and after:
        file, attribute = Path(before), after  # FILE.py:NAME
    else:
        file, attribute = None, None
    data = None
    if file is not None:
        data = file.read_bytes()
        if file.suffix == ".py" and loader is None:
            kind, copied, attribute = "python", "policy.py", attribute or PYTHON_ATTRIBUTE
            how = attribute
        elif loader is None:
            raise SpecError(f"'{file}' is not a Python file: give --loader MODULE:FUNCTION, the function that "
                            "loads it from its path (sb3_contrib:MaskablePPO.load, say)")
        elif attribute is not None:
            raise SpecError(f"{text!r}: a file read by a loader has no :NAME")
        else:
            _imported(loader)  # (a typo is said now, not when a run loads it)
            kind, copied, how = "file", "policy" + file.suffix, loader
        digest = _file_digest(kind, how, data)
    elif ":" in text:
        if loader is not None:
            raise SpecError(f"{text!r} is a module's policy; --loader is for a file")
        digest = policy_digest(_imported(text))
        kind, copied, attribute = "module", None, text.partition(":")[2]
    else:
        raise SpecError(f"no file '{text}', and {text!r} is not MODULE:ATTRIBUTE; give a policy's file or an "
                        "importable module:attribute")
    # (loader is None but for a file read by one)
    stored = StoredPolicy(digest[:ID_LENGTH], digest, kind, name or "", text, copied, attribute, loader,
                          store / digest[:ID_LENGTH])
    existing = _stored(stored.id, store)
    if existing is not None:
        return existing
    staging = _staged(stored, data, store)
    try:
        policy = _load_record(StoredPolicy(**{**stored.record(), "folder": staging}))
        policy_function(policy)
        try:
            os.rename(staging, stored.folder)
        except OSError:  # another process added it meanwhile
            if _stored(stored.id, store) is None:
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _read_record(stored.folder)


def _staged(stored: StoredPolicy, data: bytes | None, store: Path) -> Path:
    # a store folder with the copy and record, renamed into place once it loads, so nothing half-written is an
    # entry (a killed add leaves a ``.adding-*`` folder, never read)
    store.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=store, prefix=".adding-"))
    staging.chmod(_FOLDER_MODE)  # (mkdtemp's 0700 would keep a shared store's policies from its other users)
    if data is not None:
        (staging / stored.file).write_bytes(data)
    (staging / RECORD).write_text(json.dumps(stored.record(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return staging


def load_policy(policy_id: str, store: Path | None = None) -> tuple[Any, str]:
    """The policy ``policy:sha256=ID`` runs: `evaluate`'s in this process, else the store's (loaded once, checked).

    Args:
        policy_id: `ID_LENGTH` lowercase hex digits.
        store: The store's folder (None: `policy_store`).

    Returns:
        ``(policy, sha256)``: the policy, and the full digest of its content.

    Raises:
        SpecError: ``policy_id`` is not 16 hex digits, or its record or file is damaged or changed.
        NotInstalledError: No policy of that ID is in the store.
        PluginError: The policy's code, or its loader, raised.
    """
    if not isinstance(policy_id, str) or not POLICY_ID.fullmatch(policy_id):
        raise SpecError(f"sha256={policy_id!r} is not a policy's id: {ID_LENGTH} lowercase hex digits, as "
                        "`dcbench policy add` prints them")
    if policy_id in _SESSION:
        return _SESSION[policy_id][1], _SESSION[policy_id][0]
    store = store or policy_store()
    key = (str(store.resolve()), policy_id)
    if key not in _LOADED:
        stored = _stored(policy_id, store)
        if stored is None:
            raise NotInstalledError(f"policy {policy_id} is not in the policy store here ('{store}', set by "
                            f"${STORE_VARIABLE}); add it with `dcbench policy add FILE` (its id is its content's, "
                            "so the same file gives the same id)")
        _LOADED[key] = (stored.sha256, _load_record(stored))
    digest, policy = _LOADED[key]
    return policy, digest


@contextlib.contextmanager
def _running(policy: Any) -> Iterator[str]:
    # ``policy`` under its ID in this process while the block runs
    digest = policy_digest(policy)
    policy_id = digest[:ID_LENGTH]
    before = _SESSION.get(policy_id)
    _SESSION[policy_id] = (digest, policy)
    try:
        yield policy_id
    finally:
        if before is None:
            _SESSION.pop(policy_id, None)
        else:
            _SESSION[policy_id] = before


def _env_scenario(env_id: str, runner: Runner) -> tuple[Suite, Scenario] | None:
    # the suite scenario a registered env id stands for; None where it is no registered id
    import gymnasium

    if env_id not in gymnasium.registry:
        return None
    kwargs = dict(gymnasium.registry[env_id].kwargs or {})
    if isinstance(kwargs.get("suite"), str) and isinstance(kwargs.get("scenario"), str):
        return find_scenario(runner.registry, kwargs["suite"], kwargs["scenario"])
    if not isinstance(kwargs.get("topology"), str):
        raise SpecError(f"environment {env_id!r} names no suite scenario; give a suite or SUITE/SCENARIO")
    given = (kwargs["topology"], kwargs.get("workload"), kwargs.get("requests"))
    scenarios = [(suite, scenario) for suite in runner.registry.entries("suite").values()
                 for scenario in suite.scenarios]
    for suite, scenario in scenarios:  # as written first: resolving every suite's scenarios compiles their topologies
        if (scenario.topology, scenario.workload, scenario.requests) == given:
            return suite, scenario
    wanted = runner.resolve_scenario(*given)
    for suite, scenario in scenarios:
        try:
            resolved = runner.resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
        except DcbenchError:
            continue
        if (resolved.topology, resolved.workload, resolved.requests) == (
                wanted.topology, wanted.workload, wanted.requests):
            return suite, scenario
    raise SpecError(f"environment {env_id!r} ({wanted.topology}, {wanted.workload}, {wanted.requests} requests) is "
                    "no scenario of a registered suite; give a suite, SUITE/SCENARIO or a dcbench.Scenario")


def _target(target: Any, runner: Runner) -> tuple[list[Scenario], tuple[str, ...]]:
    # the scenarios ``target`` names, and the third-party metrics their runs compute
    if isinstance(target, Suite):
        return list(target.scenarios), tuple(target.metrics)
    if isinstance(target, Scenario):
        return [target], ()
    if not isinstance(target, str):
        raise SpecError(f"the target is a suite's name, SUITE/SCENARIO, an environment id or a dcbench.Scenario; "
                        f"got {type(target).__name__}")
    suites = runner.registry.entries("suite")
    if target in suites:
        suite = suites[target]
        return list(suite.scenarios), tuple(suite.metrics)
    found = _env_scenario(target, runner)
    if found is None and "/" in target:
        found = find_scenario(runner.registry, *target.split("/", 1))
    if found is None:
        raise SpecError(f"no suite {target!r}; give a suite ({', '.join(sorted(suites))}), SUITE/SCENARIO, a "
                        "registered environment id or a dcbench.Scenario")
    return [found[1]], tuple(found[0].metrics)


def _seeds(seeds: Iterable[int] | None, scenario: Scenario) -> list[int]:
    if seeds is None:
        return list(scenario.seeds)
    if isinstance(seeds, (str, bytes, Integral, np.integer)) or not isinstance(seeds, Iterable):
        raise SpecError(f"seeds is a list of seeds (seeds=[0, 1]), got {seeds!r}")
    return list(seeds)


def evaluate(policy: Any, target: str | Suite | Scenario, *, requests: int | None = None,
             seeds: Iterable[int] | None = None, registry: Registry | None = None,
             hints: bool | Sequence[str] = False) -> list[dict[str, Any]]:
    """Run a policy on a suite's scenarios with their seeds, as ``dcbench sweep`` runs the heuristics.

    Args:
        policy: A callable or an object with ``predict`` (`policy_function`), or an allocator spec to compare with.
        target: A suite's name, ``"SUITE/SCENARIO"``, a suite scenario's env id, a `dcbench.Suite` or `Scenario`.
        requests: Measured requests per run, after the workload's warm-up (None: each scenario's).
        seeds: The seeds to run (None: each scenario's test seeds).
        registry: The plugins (None: the process's).
        hints: Hint features in pool observations, as the environment's ``hints=``.

    Returns:
        One row per run, by scenario then seed, as a sweep's ``summary.parquet``, after ``run_id`` and ``scenario``.

    Raises:
        SpecError: A bad argument, or a run's settings refused (`Runner.run`).
        AllocatorError: The policy raised or answered with no integer.
    """
    runner = Runner(registry) if registry is not None else Runner()
    scenarios, metrics = _target(target, runner)
    check_measured(requests)
    if isinstance(hints, (bool, np.bool_)):
        hinted = "all" if hints else ""
    elif isinstance(hints, Sequence) and not isinstance(hints, str) and all(isinstance(h, str) for h in hints):
        hinted = "+".join(hints)
    else:
        raise SpecError(f"hints must be True, False or a sequence of hint names, got {hints!r}")
    if hinted and isinstance(policy, str):
        raise SpecError("hints are the policy allocator's; give them in its spec (policy:sha256=ID,hints=all)")
    with contextlib.ExitStack() as stack:
        spec = policy if isinstance(policy, str) else \
            f"{POLICY_ALLOCATOR}:sha256={stack.enter_context(_running(policy))}{f',hints={hinted}' * bool(hinted)}"
        rows = []
        for scenario in scenarios:
            seed_list = _seeds(seeds, scenario)
            if not seed_list:
                continue
            check_seed(seed_list[0])  # (before the specs, as `Runner.run` checks)
            # the scenario's run as its environment's requests= makes it
            plan = runner.resolve(spec, scenario.topology, scenario.workload, scenario.requests, metrics)
            plan = measuring(plan, requests, f"scenario {scenario.label!r}", "requests=N")[0]
            for seed in seed_list:
                result = run_plan(plan, seed)
                summary = dict(result.summary)
                rows.append({"run_id": summary.pop("run_id"), "scenario": scenario.label, **summary})
    return rows
