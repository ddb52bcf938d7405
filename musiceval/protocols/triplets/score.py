"""``musiceval score triplets``: triplet accuracy of a text encoder on AudioSet music triplets
(docs/protocols/text-encoders.md). It reads no answer file: FILE (or ``--triplets``) names the
triplets, and the encoder is probed. The modes (``--prompts``) and the rules are those of
:mod:`musiceval.protocols.triplets.engine`.
"""
from __future__ import annotations

from musiceval.data.errors import InputError
from musiceval.encoders import EmbeddingCache, load_text_encoder
from musiceval.keys import Key, cache_dir_key
from musiceval.protocols.scoring import ScoreReport, ScoreRequest
from musiceval.protocols.triplets.engine import MODES
from musiceval.ranges import AT_LEAST_ONE

FLAGS = {
    "encoder": Key(str, "minilm", "minilm (bundled all-MiniLM-L6-v2), st:<dir>, clap:<...>, layer:<dir>@<n>, "
                                  "bertscore:<model>[@<n>]"),
    "triplets": Key(str, None, "genre, instrument, or a CSV with header anchor,positive,negative (default: FILE)"),
    "prompts": Key(str, "paper", "prompt set or text variant", choices=MODES),
    "ontology": Key(str, None, "AudioSet ontology.json (default: the bundled copy)"),
    "max_triplets": Key(int, None, "score a seeded sample of at most N triplets (--seed)", AT_LEAST_ONE),
    "cache_dir": cache_dir_key("embedding cache (DIR/embeddings)"),
}


def score_triplets(request: ScoreRequest) -> ScoreReport:
    from musiceval import progress
    from musiceval.cache_dir import EMBEDDINGS, cache_folder
    from musiceval.protocols.triplets.engine import evaluate_triplets, load_triplets
    from musiceval.protocols.triplets.formats import TripletFileError
    from musiceval.vocab.audioset import SUBTREE_ROOTS, definitions as ontology_definitions, load_ontology

    opts = request.options
    source = opts.get("triplets") or request.file
    if not source:
        raise InputError("score triplets: no triplets given; pass --triplets genre|instrument|FILE.csv")
    mode = opts.get("prompts", "paper")
    needs_ontology = source in SUBTREE_ROOTS or mode in ("definition", "label+definition")
    try:
        ontology = load_ontology(opts.get("ontology")) if needs_ontology else None
        triplets = load_triplets(str(source), mode=mode, ontology=ontology, seed=request.seed,
                                 max_triplets=opts.get("max_triplets"))
    except (TripletFileError, FileNotFoundError, ValueError) as exc:
        raise InputError(str(exc)) from exc
    if not len(triplets):  # refused before any encoder loads
        raise InputError(_no_triplets(str(source), triplets, ontology))
    encoder_spec = opts.get("encoder", "minilm")
    encoder = load_text_encoder(encoder_spec)
    cache = EmbeddingCache(cache_folder(opts.get("cache_dir"), EMBEDDINGS))
    defs = ontology_definitions(ontology) if ontology is not None else None
    result = evaluate_triplets(encoder, triplets, mode, definitions=defs, cache=cache, progress=progress.enabled())
    per_item = [{"item_id": i, "anchor": a, **{c: bool(v[k]) for c, v in result.correct.items()}}
                for k, (i, a) in enumerate(zip(result.ids, result.anchors))]
    failures = [{"item_id": f.item_id, "error": f.reason} for f in result.failures]
    extra = {"encoder": encoder_spec, "triplets": str(source), "prompts": mode, "n_other_kind": result.n_other_kind}
    return ScoreReport(result.n, result.summary(), per_item=per_item, failures=failures, extra=extra, source=str(source),
                       headline={"triplet_accuracy": result.item_scores()} if result.n else {},
                       scales={"triplet_accuracy": result.scale})


def _no_triplets(source: str, triplets, ontology) -> str:
    """The one line for a triplet set that holds no triplet: the ontology class (with its file) or the
    CSV that gave none, and the fix."""
    from musiceval.vocab.audioset import ONTOLOGY_HINT, SUBTREE_ROOTS, load_ontology

    if source in SUBTREE_ROOTS:
        ontology = ontology or load_ontology()
        subtree = ontology.subtree(source)
        name = ontology.nodes[subtree.root].name
        return (f"{ontology.source}: class {subtree.root} ({name}) has {len(subtree.labels)} subclasses, which form no "
                "triplet (an anchor and a positive on one branch, a negative farther from the anchor); pass the full "
                f"AudioSet ontology with --ontology ({ONTOLOGY_HINT})")
    bad = triplets.failures
    first = f" ({len(bad)} unreadable rows; first: {bad[0].item_id}: {bad[0].reason})" if bad else ""
    return f"{source}: no triplet in the file{first}; pass a CSV with header anchor,positive,negative and one triplet per row"
