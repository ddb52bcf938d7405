"""The AudioSet ontology and its music subtrees: the label vocabulary of the text-encoder triplet protocol.

The ontology (Gemmeke et al. 2017, https://github.com/audioset/ontology) is a JSON list of
classes ``{id, name, description, child_ids, restrictions, ...}``. It is a DAG, not a tree: a class
may have several parents (``Cowbell`` is under both ``Percussion`` and ``Bell``; ``Beatboxing``
under both ``Hip hop music`` and ``Vocal music``), and some classes have parents outside the music
subtrees (``Bell`` is also under ``Sounds of things``).

Conventions
-----------
- A *subtree* is every class reachable from its top class through ``child_ids``: ``"Music genre"``
  (/m/0kpv1t, 65 labels) or ``"Musical instrument"`` (/m/04szw, 91 labels). Parents outside it are
  ignored. The top class itself is not a label (``Music genre`` is an abstract class).
- Tree distance on the DAG (:meth:`Subtree.distance`): the length of the shortest path that goes
  up from ``a`` to a common ancestor ``c`` and down to ``b``, minimised over every common ancestor
  inside the subtree (a node counts as its own ancestor)::

      d(a, b) = min_c [ up(a, c) + up(b, c) ],  up(x, c) = fewest child->parent steps from x to c

  On a tree this is the usual distance through the lowest common ancestor; on the DAG every choice
  of parents is allowed, so ``d(Cowbell, Church bell) = 2`` (via Bell) and
  ``d(Cowbell, Tabla) = 3`` (via Percussion). Paths through a shared *child* (Hip hop music ->
  Beatboxing <- Vocal music) do not count: sharing a descendant is not being related.
- "Lowest common ancestor is the root Music" (docs/protocols/text-encoders.md): both subtrees hang directly under the
  ontology's ``Music`` class, so two labels of one subtree whose only common ancestor (inside the
  subtree) is its top class are related through nothing but ``Music``. :meth:`Subtree.shares_branch`
  is False exactly for those pairs; the triplet generator never uses them as anchor-positive.
- A label's definition is its ontology ``description``.
"""
from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from musiceval.records import ItemFailure

#: Ontology ids of the two subtree tops (both children of ``Music``, /m/04rlf).
SUBTREE_ROOTS = {"genre": "/m/0kpv1t", "instrument": "/m/04szw"}
#: The ontology copied into the repository (CC BY-SA 4.0, audioset/ontology @ d417d32).
FIXTURE_ONTOLOGY = Path(__file__).resolve().parent / "audioset_ontology.json"
ONTOLOGY_HINT = (
    "download it from https://github.com/audioset/ontology/blob/master/ontology.json "
    "or pass the path of a copy"
)
#: Bytes beyond which an ontology file is refused (the real one is 343 kB).
MAX_ONTOLOGY_BYTES = 50_000_000


@dataclass(frozen=True)
class OntologyNode:
    id: str
    name: str
    description: str
    child_ids: tuple[str, ...]
    restrictions: tuple[str, ...] = ()


class MissingClass(KeyError, ValueError):
    """The ontology has no class of that id or name: the message names the ontology file and the fix."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Ontology:
    """Classes by id in file order, plus the entries that could not be read (one failure each)."""

    nodes: Mapping[str, OntologyNode]
    failures: tuple[ItemFailure, ...] = ()
    #: the file read, for messages
    source: str = ""

    def by_name(self, name: str) -> OntologyNode:
        for node in self.nodes.values():
            if node.name == name:
                return node
        raise MissingClass(f"{self.source or 'ontology'}: no ontology class named {name!r}")

    def subtree(self, which: str) -> "Subtree":
        """The ``"genre"`` or ``"instrument"`` subtree (or any class id / class name as root).

        Raises
        ------
        MissingClass
            When the ontology holds no such class (an ontology without "Music genre" asked for
            the genre triplets): naming the file, the class and the fix.
        """
        root = SUBTREE_ROOTS.get(which, which)
        if root in self.nodes:
            return Subtree.build(self, root)
        try:
            return Subtree.build(self, self.by_name(which).id)
        except MissingClass:
            wanted = f"class {root} ({which})" if which in SUBTREE_ROOTS else f"class {which!r}"
            raise MissingClass(f"{self.source or 'ontology'}: no {wanted} to build triplets from; pass the full "
                               f"AudioSet ontology with --ontology ({ONTOLOGY_HINT})") from None


def _parse_node(raw: Any, index: int) -> OntologyNode:
    if not isinstance(raw, dict):
        raise ValueError(f"entry {index} is a {type(raw).__name__}, not an object")
    for key in ("id", "name"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ValueError(f"entry {index}: field {key!r} missing or not a non-empty string")
    children = raw.get("child_ids", [])
    if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
        raise ValueError(f"entry {index} ({raw['id']}): 'child_ids' must be a list of ids")
    description = raw.get("description", "")
    restrictions = raw.get("restrictions", [])
    if not isinstance(description, str):
        raise ValueError(f"entry {index} ({raw['id']}): 'description' must be a string")
    if not isinstance(restrictions, list):
        restrictions = []
    return OntologyNode(
        id=raw["id"],
        name=raw["name"].strip(),
        description=description.strip(),
        child_ids=tuple(dict.fromkeys(children)),
        restrictions=tuple(str(r) for r in restrictions),
    )


def load_ontology(path: str | os.PathLike[str] | None = None) -> Ontology:
    """Read an AudioSet ``ontology.json`` (default: the copy in ``fixtures/text_encoders/``).

    A malformed entry, a duplicate id or a child id that names no class is a counted failure
    (``Ontology.failures``), not a crash; a file that is missing, not JSON or not a list raises
    ``ValueError``/``FileNotFoundError`` naming the file and the fix.
    """
    path = Path(path) if path is not None else FIXTURE_ONTOLOGY
    if not path.is_file():
        raise FileNotFoundError(f"AudioSet ontology {str(path)!r} not found; {ONTOLOGY_HINT}")
    if path.stat().st_size > MAX_ONTOLOGY_BYTES:
        raise ValueError(f"{path}: {path.stat().st_size} bytes is too large for an ontology file")
    try:
        raw = json.loads(path.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: not a UTF-8 JSON file ({exc}); {ONTOLOGY_HINT}") from exc
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a JSON list of classes, got {type(raw).__name__}")
    nodes: dict[str, OntologyNode] = {}
    failures: list[ItemFailure] = []
    for index, entry in enumerate(raw):
        try:
            node = _parse_node(entry, index)
        except ValueError as exc:
            failures.append(ItemFailure(f"entry {index}", str(exc)))
            continue
        if node.id in nodes:
            failures.append(ItemFailure(node.id, f"entry {index}: duplicate id, first entry kept"))
            continue
        nodes[node.id] = node
    for node in list(nodes.values()):
        unknown = [c for c in node.child_ids if c not in nodes]
        if unknown:
            failures.append(ItemFailure(node.id, f"child ids {unknown} name no class; ignored"))
            nodes[node.id] = OntologyNode(
                node.id, node.name, node.description,
                tuple(c for c in node.child_ids if c in nodes), node.restrictions,
            )
    return Ontology(nodes=nodes, failures=tuple(failures), source=str(path))


@dataclass(frozen=True)
class Subtree:
    """One music subtree: its labels, definitions and pairwise tree distances.

    ``labels`` are the class ids below ``root`` in ontology file order (the root excluded).
    ``distances[i, j]`` and ``branch[i, j]`` index ``labels``; see the module docstring.
    """

    root: str
    labels: tuple[str, ...]
    names: tuple[str, ...]
    definitions: tuple[str, ...]
    distances: np.ndarray
    branch: np.ndarray
    parents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, ontology: Ontology, root: str) -> "Subtree":
        nodes = ontology.nodes
        members: set[str] = set()
        queue = deque([root])
        while queue:  # the visited set makes a cyclic (hostile) ontology terminate
            cur = queue.popleft()
            if cur in members:
                continue
            members.add(cur)
            queue.extend(nodes[cur].child_ids)
        parents: dict[str, list[str]] = {m: [] for m in members}
        for m in members:
            for c in nodes[m].child_ids:
                parents[c].append(m)
        labels = tuple(i for i in nodes if i in members and i != root)
        ancestors = {m: _ancestor_steps(m, parents) for m in labels}
        n = len(labels)
        distances = np.zeros((n, n), dtype=np.int64)
        branch = np.zeros((n, n), dtype=bool)
        for i, a in enumerate(labels):
            for j, b in enumerate(labels):
                common = ancestors[a].keys() & ancestors[b].keys()
                distances[i, j] = min(ancestors[a][c] + ancestors[b][c] for c in common)
                branch[i, j] = bool(common - {root})
        return cls(
            root=root,
            labels=labels,
            names=tuple(nodes[i].name for i in labels),
            definitions=tuple(nodes[i].description for i in labels),
            distances=distances,
            branch=branch,
            parents={m: tuple(p) for m, p in parents.items()},
        )

    def index(self, label: str) -> int:
        """Position of a class id or class name in ``labels``."""
        if label in self.labels:
            return self.labels.index(label)
        if label in self.names:
            return self.names.index(label)
        raise KeyError(f"{label!r} is not a label of the subtree under {self.root}")

    def distance(self, a: str, b: str) -> int:
        return int(self.distances[self.index(a), self.index(b)])

    def shares_branch(self, a: str, b: str) -> bool:
        """True when ``a`` and ``b`` have a common ancestor below the subtree's top class."""
        return bool(self.branch[self.index(a), self.index(b)])


def _ancestor_steps(node: str, parents: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Fewest child->parent steps from ``node`` to each of its ancestors (itself at 0), by BFS."""
    steps = {node: 0}
    queue = deque([node])
    while queue:
        cur = queue.popleft()
        for p in parents[cur]:
            if p not in steps:
                steps[p] = steps[cur] + 1
                queue.append(p)
    return steps


def definitions(ontology: Ontology) -> dict[str, str]:
    """Every class name -> description (for looking up labels of a published triplet file)."""
    return {n.name: n.description for n in ontology.nodes.values()}
