"""``musiceval score factual``: factual QA (docs/protocols/factual.md) on recorded answers.

::

    musiceval score factual --format {musiceval,dasheng,cmi-bench} FILE --vocab VOCAB \\
        [--labels-field F] [--extractor {rules,llm}] [--conditions correct,random] \\
        [--chunks {any,majority}] [--hierarchy FMA_GENRES_CSV] [--answers {open,true-false,binary}] \\
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

import os
from typing import Any, Mapping

from musiceval.data.errors import InputError
from musiceval.data.factual_files import read_records
from musiceval.extraction import Vocabulary, load_vocabulary
from musiceval.keys import Key
from musiceval.protocols.factual.engine import CHUNK_RULES, Extract, extractor_agreement, llm_extractor, rule_extractor
from musiceval.protocols.scoring import (ProtocolSettings, ScoreReport, ScoreRequest, by_condition, chance_rows,
                                         declared_scales, excluded_entry, headline_scores, load_protocol_answers,
                                         resolve_format)
from musiceval.ranges import PERMUTATIONS

FLAGS = {
    "vocab": Key(str, None, "closed vocabulary: nsynth, gtzan, fma-top, musicnet-instruments, musicnet-composers, or a "
                            "JSON/text vocabulary FILE (default with --hierarchy: every FMA genre)"),
    "labels_field": Key(str, None, "field holding the true labels (default: labels / label / correct_answer by format)"),
    "extractor": Key(str, "rules", "label extractor (default: rules, offline)", choices=("rules", "llm")),
    "conditions": Key(str, "correct,random", "comma-separated: correct[,random] (default: correct,random)"),
    "chunks": Key(str, None, "aggregate answers given per audio chunk: a label counts when any chunk / a strict majority "
                             "of chunks names it", choices=CHUNK_RULES),
    "hierarchy": Key(str, None, "FMA genres.csv: add 'same node' and 'same tree' scores from the genre tree",
                     metavar="FMA_GENRES_CSV"),
    "answers": Key(str, "open", "open answers (default), true/false rows or binary-choice rows (musiceval format)",
                   choices=("open", "true-false", "binary")),
    "manifest": Key(str, None, "generate manifest: fills labels/prompt/asked/options missing from records"),
    "agreement": Key(bool, False, "also report rule vs LLM extractor agreement (needs the LLM settings)", switch=True),
    "llm_model": Key(str, "gpt-4.1-mini", "extractor model for --extractor llm (OPENAI_API_KEY / OPENAI_BASE_URL)"),
    "llm_cache": Key(str, None, "directory caching extractor results (default $MUSICEVAL_LLM_CACHE)"),
    "llm_cassette": Key(str, None, "vcrpy cassette recording every extractor call (default "
                                   ".musiceval/cassettes/factual-<FILE name>-<model>.yaml)"),
    "llm_replay": Key(bool, False, "replay the cassette only, without a key (always on CI)", switch=True),
    "n_permutations": Key(int, 1000, "permutations for the chance level (default: 1000; at most 1000000: each one "
                                     "rescores every item, and a million already give a p-value near 0.05 to within "
                                     "0.0002)", PERMUTATIONS),
}


def _vocabulary(opts: Mapping[str, Any]) -> tuple[Vocabulary, dict | None]:
    try:
        if opts.get("hierarchy"):
            from musiceval.catalogue.datasets.fma import fma_genre_tree, fma_genre_vocabulary, load_fma_genres

            genres = load_fma_genres(opts["hierarchy"])
            vocab = load_vocabulary(opts["vocab"]) if opts.get("vocab") else fma_genre_vocabulary(genres)
            return vocab, fma_genre_tree(genres, vocab)
        if not opts.get("vocab"):
            raise ValueError("no vocabulary given; pass --vocab (or --hierarchy FMA_GENRES_CSV)")
        return load_vocabulary(opts["vocab"]), None
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"--vocab/--hierarchy: {exc}") from exc


def score_factual_file(cls: type, request: ScoreRequest) -> ScoreReport:
    """Flags -> :class:`musiceval.protocols.factual.FactualProtocol` (or a closed-question variant), the
    LLM extractor's calls recorded in (or replayed from) their cassette."""
    if not request.file:
        raise InputError("score factual: no FILE given; pass recorded answers (see --format)")
    opts = request.options
    vocab, hierarchy = _vocabulary(opts)
    if opts.get("extractor") != "llm" and not opts.get("agreement"):
        return _score_with(cls, request, vocab, hierarchy, None)
    from pathlib import Path

    from musiceval.llm.cassettes import COMMAND_RECORDING, command_mode, use_cassette
    from musiceval.llm.client import make_client

    mode = command_mode(bool(opts.get("llm_replay")))
    model = opts["llm_model"]
    cassette = Path(opts.get("llm_cassette") or Path(".musiceval", "cassettes", f"factual-{Path(request.file).name}-{model}.yaml"))
    llm = llm_extractor(vocab, model=model, cache_dir=opts.get("llm_cache") or os.environ.get("MUSICEVAL_LLM_CACHE"),
                        client=make_client(require_key=mode != "none"))
    with use_cassette(cassette, mode=mode, how_to_record=COMMAND_RECORDING):  # every call recorded or replayed
        out = _score_with(cls, request, vocab, hierarchy, llm)
    out.extra["llm_cassette"] = str(cassette)
    return out


def _score_variant(request: ScoreRequest, vocab: Vocabulary, extract) -> ScoreReport:
    from pathlib import Path

    from musiceval.protocols.factual.variants import score_binary, score_true_false

    opts, answers = request.options, request.options["answers"]
    if request.format not in (None, "musiceval", "musiceval-factual"):
        raise InputError(f"--answers {answers} reads musiceval-format rows (got --format {request.format})")
    path = Path(request.file)
    if not path.is_file():
        raise InputError(f"{path}: file not found; pass an existing answers file")
    records, bad = read_records(path, opts.get("manifest"))
    if not records:
        raise InputError(f"{path}: no readable records ({len(bad)} bad); see musiceval.protocols.factual.variants for the layout")
    field = opts.get("labels_field") or "labels"
    result = (score_true_false(records, vocab, labels_field=field, seed=request.seed, n_permutations=opts["n_permutations"],
                               failures=bad)
              if answers == "true-false" else score_binary(records, vocab, extract, labels_field=field, failures=bad,
                                                        seed=request.seed))
    failures = [{"item_id": f.item_id, "error": f.reason} for f in result.failures]
    blocks = dict(result.metrics)
    extra = {"vocab": vocab.name, "answers": answers, "extractor": opts["extractor"] if answers == "binary" else "yes/no",
             "chance": blocks.pop("chance")}
    return ScoreReport(blocks["correct"]["n"], per_item=result.per_item + failures, failures=failures, extra=extra,
                       **by_condition(blocks))


def _score_with(cls: type, request: ScoreRequest, vocab: Vocabulary, hierarchy: dict | None, llm: Extract | None) -> ScoreReport:
    from musiceval.data.factual_files import load_factual

    opts, file, fmt = request.options, request.file, request.format
    extract = llm if opts.get("extractor") == "llm" else rule_extractor(vocab)
    if opts.get("answers", "open") != "open":
        return _score_variant(request, vocab, extract)
    if opts.get("labels_field") or opts.get("manifest"):  # options only the factual reader has: load with it
        name = resolve_format(file, fmt, "factual")
        short = {"musiceval-factual": "musiceval", "dasheng-factual": "dasheng"}.get(name, name)
        answers = load_factual(file, short, opts.get("labels_field"), manifest=opts.get("manifest"))
    else:
        answers = load_protocol_answers(file, fmt, "factual")
    if not answers.items:
        raise InputError(f"{file}: no readable records ({len(answers.failures)} bad); check --format {fmt or answers.format}")
    conditions = [c.strip() for c in opts.get("conditions", "").split(",") if c.strip()]
    protocol = cls.from_answers(answers, ProtocolSettings(seed=request.seed, options={
        "vocab": vocab, "extractor": extract, "chunks": opts.get("chunks"), "hierarchy": hierarchy,
        "n_permutations": opts["n_permutations"], "conditions": conditions}))
    result, data = protocol.result, protocol.data
    correct = result.scores["correct"]
    per_item = [{"item_id": i, "labels": list(result.predictions["correct"][i]),
                 **{m: float(correct[m].values[k]) for m in correct}} for k, i in enumerate(correct["f1"].ids)]
    failures = [{"item_id": f.item_id, "error": f.reason} for f in result.failures]
    extra = {"vocab": vocab.name, "extractor": opts["extractor"], "format": fmt or answers.format, "model": protocol.model,
             **excluded_entry(protocol), "per_label": result.per_label}
    blocks = dict(result.metrics)
    extra["chance"] = blocks.pop("chance")
    if opts.get("agreement"):
        agreement = extractor_agreement(data, vocab, rule_extractor(vocab), llm, chunks=opts.get("chunks"))
        agreement["failures"] = [{"item_id": f.item_id, "error": f.reason} for f in agreement["failures"]]
        extra["agreement"] = agreement
    if llm is not None:
        extra["llm_calls"] = llm.extractor.n_calls
    return ScoreReport(correct["f1"].n, per_item=per_item + failures, failures=failures, extra=extra,
                       headline=headline_scores(protocol), chances=chance_rows(protocol, [protocol.headline]),
                       scales=declared_scales(protocol, protocol.metrics),
                       **by_condition(blocks))
