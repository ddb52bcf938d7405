"""``musiceval score factual``: factual QA (docs/protocols/factual.md) on recorded answers.

::

    musiceval score factual --format {musiceval,dasheng,cmi-bench} FILE --vocab VOCAB \
        [--labels-field F] [--extractor {rules,llm}] [--conditions correct,random] \
        [--chunks {any,majority}] [--hierarchy FMA_GENRES_CSV] [--answers {open,true-false,binary}] \
        [--manifest MANIFEST] [--agreement] --json

prints ``{"protocol": "factual", "n": .., "n_failed": .., "metrics": {precision, recall, f1, accuracy,
micro_precision, micro_recall, micro_f1, n}, "conditions": {"random": {.., n_unpaired}}, "chance":
{f1, f1_sd, method}, "vocab": .., "extractor": .., "per_label": {..}}`` (``metrics``: the Correct
condition, the model's own answers; docs/cli.md, "One JSON shape").

File formats and the chunk / manifest layout: :mod:`musiceval.data.factual_files`.

- **correct**: each answer's extracted labels against its item's true labels;
- **random**: for recorded answers to one shared prompt, the answer the model gave for *another*
  clip with the same prompt (a seeded derangement, :func:`musiceval.conditions.random_recorded_responses`),
  scored against this item's labels; a musiceval file may carry its own ``random`` rows instead;
- **chance**: the mean macro F1 when the correct-condition predictions are permuted across
  items (label marginals kept, item link broken): :func:`musiceval.metrics.sets.permutation_null_f1`.

P/R/F1 are macro over items (per-item then averaged), ``micro_*`` from summed counts; accuracy is
exact set match (for single-label tasks: the true label and nothing else). Empty cases follow
:mod:`musiceval.metrics.sets`. Items whose true label is outside the vocabulary or whose answer the
LLM extractor could not extract are per-item failures; items with no Random partner are left out
of Random by the rule ``no_random_partner`` (counted in ``random.n_unpaired`` and under
``excluded``), not failures.

Options:

- ``--chunks {any,majority}``: an item answered per audio chunk (``musiceval generate`` on audio
  longer than the model's window) gets the labels of :func:`musiceval.metrics.sets.aggregate_chunks`
  over its chunks' extracted labels; without the flag a chunked item is a per-item failure naming it.
- ``--hierarchy FMA_GENRES_CSV``: FMA genre-tree scoring. Without ``--vocab`` the vocabulary is
  every genre of ``genres.csv``. Adds ``same_node`` (exact genre, the plain scores) and
  ``same_tree`` to ``metrics`` and to each condition's block (``{precision, recall, f1, accuracy}`` after
  mapping predicted and true genres to their top-level genre, :func:`musiceval.metrics.sets.hierarchy_labels`).
- ``--answers {true-false,binary}``: closed-question answer files, layouts and output keys in
  :mod:`musiceval.protocols.factual.variants` (``--conditions``/``--chunks``/``--hierarchy`` do not apply).
- ``--agreement``: also run the LLM extractor (``--llm-model``, ``OPENAI_API_KEY``/``OPENAI_BASE_URL``,
  ``--llm-cache``; every call is recorded in the vcrpy cassette ``--llm-cassette``, which
  ``--llm-replay``, and always CI, replays without a key) and add ``agreement`` = ``{n, exact_set, mean_jaccard, kappa_mean, n_kappa_labels,
  kappa_per_label, n_failed, failures}`` comparing the rule and LLM labels of each item's Correct
  answer (:mod:`musiceval.metrics.agreement`; items either extractor fails on are listed in
  ``failures`` and left out). With ``--extractor llm`` or ``--agreement`` the output also has
  ``llm_calls`` (HTTP calls made; 0 on a cached rerun).

:func:`musiceval.protocols.factual.engine.load_factual` and :func:`musiceval.protocols.factual.engine.score_factual` are the library
entry points the evals use.
"""
from __future__ import annotations

import argparse
import os

from musiceval.commands import InputError, Scorer, ScoreOutput, by_condition, excluded_entry, register_scorer
from musiceval.data.factual_files import FORMATS, read_records
from musiceval.extraction import Vocabulary, load_vocabulary
from musiceval.ranges import PERMUTATIONS, arg
from musiceval.protocols.factual.engine import CHUNK_RULES, Extract, extractor_agreement, llm_extractor, rule_extractor


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vocab", default=None, help="closed vocabulary: nsynth, gtzan, fma-top, musicnet-instruments, "
                        "musicnet-composers, or a JSON/text vocabulary FILE (default with --hierarchy: every FMA genre)")
    parser.add_argument("--labels-field", default=None, help="field holding the true labels (default: labels / label / correct_answer by format)")
    parser.add_argument("--extractor", choices=("rules", "llm"), default="rules", help="label extractor (default: rules, offline)")
    parser.add_argument("--conditions", default="correct,random", help="comma-separated: correct[,random] (default: %(default)s)")
    parser.add_argument("--chunks", choices=CHUNK_RULES, default=None, help="aggregate answers given per audio chunk: a label "
                        "counts when any chunk / a strict majority of chunks names it")
    parser.add_argument("--hierarchy", default=None, metavar="FMA_GENRES_CSV", help="FMA genres.csv: add 'same node' and "
                        "'same tree' scores from the genre tree")
    parser.add_argument("--answers", choices=("open", "true-false", "binary"), default="open",
                        help="open answers (default), true/false rows or binary-choice rows (musiceval format)")
    parser.add_argument("--manifest", default=None, help="generate manifest: fills labels/prompt/asked/options missing from records")
    parser.add_argument("--agreement", action="store_true", help="also report rule vs LLM extractor agreement (needs the LLM settings)")
    parser.add_argument("--llm-model", default="gpt-4.1-mini", help="extractor model for --extractor llm (OPENAI_API_KEY / OPENAI_BASE_URL)")
    parser.add_argument("--llm-cache", default=os.environ.get("MUSICEVAL_LLM_CACHE"), help="directory caching extractor results")
    parser.add_argument("--llm-cassette", default=None, help="vcrpy cassette recording every extractor call (default "
                        ".musiceval/cassettes/factual-<FILE name>-<model>.yaml)")
    parser.add_argument("--llm-replay", action="store_true", help="replay the cassette only, without a key (always on CI)")
    parser.add_argument("--n-permutations", type=arg(PERMUTATIONS), default=1000,
                        help="permutations for the chance level (default: %(default)s; at most 1000000: each one "
                             "rescores every item, and a million already give a p-value near 0.05 to within 0.0002)")


def _vocabulary(args) -> tuple[Vocabulary, dict | None]:
    try:
        if args.hierarchy:
            from musiceval.catalogue.datasets.fma import fma_genre_tree, fma_genre_vocabulary, load_fma_genres

            genres = load_fma_genres(args.hierarchy)
            vocab = load_vocabulary(args.vocab) if args.vocab else fma_genre_vocabulary(genres)
            return vocab, fma_genre_tree(genres, vocab)
        if not args.vocab:
            raise ValueError("no vocabulary given; pass --vocab (or --hierarchy FMA_GENRES_CSV)")
        return load_vocabulary(args.vocab), None
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"--vocab/--hierarchy: {exc}") from exc


def _score_variant(args, vocab, extract) -> ScoreOutput:
    from pathlib import Path

    from musiceval.protocols.factual.variants import score_binary, score_true_false

    if args.format not in (None, "musiceval", "musiceval-factual"):
        raise InputError(f"--answers {args.answers} reads musiceval-format rows (got --format {args.format})")
    path = Path(args.file)
    if not path.is_file():
        raise InputError(f"{path}: file not found; pass an existing answers file")
    records, bad = read_records(path, args.manifest)
    if not records:
        raise InputError(f"{path}: no readable records ({len(bad)} bad); see musiceval.protocols.factual.variants for the layout")
    field = args.labels_field or "labels"
    result = (score_true_false(records, vocab, labels_field=field, seed=args.seed, n_permutations=args.n_permutations, failures=bad)
              if args.answers == "true-false" else score_binary(records, vocab, extract, labels_field=field, failures=bad))
    failures = [{"item_id": f.item_id, "error": f.reason} for f in result.failures]
    blocks = dict(result.metrics)
    extra = {"vocab": vocab.name, "answers": args.answers, "extractor": args.extractor if args.answers == "binary" else "yes/no",
             "chance": blocks.pop("chance")}
    return ScoreOutput("factual", blocks["correct"]["n"], per_item=result.per_item + failures, failures=failures,
                       extra=extra, **by_condition(blocks))


def _score(args: argparse.Namespace) -> ScoreOutput:
    if not getattr(args, "file", None):
        raise InputError("score factual: no FILE given; pass recorded answers (see --format)")
    vocab, hierarchy = _vocabulary(args)
    if args.extractor != "llm" and not args.agreement:
        return _score_with(args, vocab, hierarchy, None)
    from pathlib import Path

    from musiceval.llm.cassettes import COMMAND_RECORDING, command_mode, use_cassette
    from musiceval.llm.client import make_client

    mode = command_mode(args.llm_replay)
    cassette = Path(args.llm_cassette or Path(".musiceval", "cassettes", f"factual-{Path(args.file).name}-{args.llm_model}.yaml"))
    llm = llm_extractor(vocab, model=args.llm_model, cache_dir=args.llm_cache, client=make_client(require_key=mode != "none"))
    with use_cassette(cassette, mode=mode, how_to_record=COMMAND_RECORDING):  # every call recorded or replayed
        out = _score_with(args, vocab, hierarchy, llm)
    out.extra["llm_cassette"] = str(cassette)
    return out


def _score_with(args: argparse.Namespace, vocab: Vocabulary, hierarchy: dict | None, llm: Extract | None) -> ScoreOutput:
    extract = llm if args.extractor == "llm" else rule_extractor(vocab)
    if args.answers != "open":
        return _score_variant(args, vocab, extract)
    from musiceval.data.factual_files import load_factual
    from musiceval.protocols import ProtocolSettings
    from musiceval.protocols.factual import FactualProtocol
    from musiceval.commands import load_protocol_answers, resolve_format

    if args.labels_field or args.manifest:  # options only the factual reader has: load with it, score through the protocol
        fmt = resolve_format(args.file, args.format, "factual")
        short = {"musiceval-factual": "musiceval", "dasheng-factual": "dasheng"}.get(fmt, fmt)
        answers = load_factual(args.file, short, args.labels_field, manifest=args.manifest)
    else:
        answers = load_protocol_answers(args.file, args.format, "factual")
    if not answers.items:
        raise InputError(f"{args.file}: no readable records ({len(answers.failures)} bad); check --format {args.format or answers.format}")
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    protocol = FactualProtocol.from_answers(answers, ProtocolSettings(seed=args.seed, options={
        "vocab": vocab, "extractor": extract, "chunks": args.chunks, "hierarchy": hierarchy,
        "n_permutations": args.n_permutations, "conditions": conditions}))
    result, data = protocol.result, protocol.data
    correct = result.scores["correct"]
    per_item = [{"item_id": i, "labels": list(result.predictions["correct"][i]),
                 **{m: float(correct[m].values[k]) for m in correct}} for k, i in enumerate(correct["f1"].ids)]
    failures = [{"item_id": f.item_id, "error": f.reason} for f in result.failures]
    extra = {"vocab": vocab.name, "extractor": args.extractor, "format": args.format or answers.format, "model": protocol.model,
             **excluded_entry(protocol),
             "per_label": result.per_label}
    blocks = dict(result.metrics)
    extra["chance"] = blocks.pop("chance")
    if args.agreement:
        agreement = extractor_agreement(data, vocab, rule_extractor(vocab), llm, chunks=args.chunks)
        agreement["failures"] = [{"item_id": f.item_id, "error": f.reason} for f in agreement["failures"]]
        extra["agreement"] = agreement
    if llm is not None:
        extra["llm_calls"] = llm.extractor.n_calls
    from musiceval.commands.summary import protocol_chances, protocol_headline

    headline = protocol_headline(protocol)
    return ScoreOutput("factual", correct["f1"].n, per_item=per_item + failures, failures=failures, extra=extra,
                       headline=headline, chances=protocol_chances(protocol, [protocol.headline]),
                       **by_condition(blocks))


register_scorer(Scorer(
    name="factual", configure=_configure, score=_score,
    help="factual QA: labels extracted from answers vs true labels (P/R/F1, accuracy), Random condition, permutation chance",
    formats=FORMATS,
))
