"""``musiceval score triplets``: triplet accuracy of a text encoder on AudioSet music triplets.

The modes (``--prompts``) and the rules are those of :mod:`musiceval.protocols.triplets.engine`.
"""
from __future__ import annotations

import argparse

from musiceval.commands import InputError, Scorer, ScoreOutput, register_scorer
from musiceval.vocab.audioset import SUBTREE_ROOTS, definitions as ontology_definitions, load_ontology
from musiceval.protocols.triplets.formats import TripletFileError
from musiceval.encoders import EmbeddingCache, load_text_encoder
from musiceval.ranges import AT_LEAST_ONE, arg
from musiceval.protocols.triplets.engine import MODES, evaluate_triplets, load_triplets


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--encoder", default="minilm", help="minilm (bundled all-MiniLM-L6-v2), st:<dir>, clap:<...>, layer:<dir>@<n>, bertscore:<model>[@<n>]")
    parser.add_argument("--triplets", default=None, help="genre, instrument, or a CSV with header anchor,positive,negative (default: FILE)")
    parser.add_argument("--prompts", default="paper", choices=MODES, help="prompt set or text variant")
    parser.add_argument("--ontology", default=None, help="AudioSet ontology.json (default: the bundled copy)")
    parser.add_argument("--max-triplets", type=arg(AT_LEAST_ONE), default=None, help="score a seeded sample of at most N triplets (--seed)")
    from musiceval.cache_dir import add_cache_dir_argument

    add_cache_dir_argument(parser, "embedding cache (DIR/embeddings)")


def _score(args: argparse.Namespace) -> ScoreOutput:
    source = args.triplets or getattr(args, "file", None)
    if not source:
        raise InputError("score triplets: no triplets given; pass --triplets genre|instrument|FILE.csv")
    needs_ontology = source in SUBTREE_ROOTS or args.prompts in ("definition", "label+definition")
    try:
        ontology = load_ontology(args.ontology) if needs_ontology else None
        triplets = load_triplets(str(source), mode=args.prompts, ontology=ontology,
                                 seed=args.seed or 0, max_triplets=args.max_triplets)
    except (TripletFileError, FileNotFoundError, ValueError) as exc:
        raise InputError(str(exc)) from exc
    if not len(triplets):  # refused before any encoder loads
        raise InputError(_no_triplets(str(source), triplets, ontology))
    encoder = load_text_encoder(args.encoder)
    from musiceval import progress
    from musiceval.cache_dir import EMBEDDINGS, cache_path

    cache = EmbeddingCache(cache_path(args, EMBEDDINGS))
    defs = ontology_definitions(ontology) if ontology is not None else None
    result = evaluate_triplets(encoder, triplets, args.prompts, definitions=defs, cache=cache, progress=progress.enabled())
    per_item = [
        {"item_id": i, "anchor": a, **{c: bool(v[k]) for c, v in result.correct.items()}}
        for k, (i, a) in enumerate(zip(result.ids, result.anchors))
    ]
    failures = [{"item_id": f.item_id, "error": f.reason} for f in result.failures]
    extra = {"encoder": args.encoder, "triplets": str(source), "prompts": args.prompts, "n_other_kind": result.n_other_kind}
    return ScoreOutput("triplets", result.n, result.summary(), per_item, failures, extra,
                       headline={"triplet_accuracy": result.item_scores()} if result.n else {})


def _no_triplets(source: str, triplets, ontology) -> str:
    """The one line for a triplet set that holds no triplet: the ontology class (with its file) or the
    CSV that gave none, and the fix."""
    if source in SUBTREE_ROOTS:
        from musiceval.vocab.audioset import ONTOLOGY_HINT, load_ontology

        ontology = ontology or load_ontology()
        subtree = ontology.subtree(source)
        name = ontology.nodes[subtree.root].name
        return (f"{ontology.source}: class {subtree.root} ({name}) has {len(subtree.labels)} subclasses, which form no "
                "triplet (an anchor and a positive on one branch, a negative farther from the anchor); pass the full "
                f"AudioSet ontology with --ontology ({ONTOLOGY_HINT})")
    bad = triplets.failures
    first = f" ({len(bad)} unreadable rows; first: {bad[0].item_id}: {bad[0].reason})" if bad else ""
    return f"{source}: no triplet in the file{first}; pass a CSV with header anchor,positive,negative and one triplet per row"


register_scorer(Scorer("triplets", _configure, _score, help="triplet accuracy of a text encoder on AudioSet music triplets",
                       formats=(), reads_answers=False))  # it reads --triplets, no answer file
