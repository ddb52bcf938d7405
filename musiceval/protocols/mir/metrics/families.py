"""Per-family loops of :mod:`musiceval.protocols.mir.metrics.tasks`: parse every response, score every item.

Each function takes the task's records and the mode (``compat=None`` or one of
:data:`musiceval.protocols.mir.metrics.compat.COMPAT_MODES`) and
returns per-item values plus :class:`~musiceval.records.ItemFailure` rows. Unparseable responses
stay in the denominator with the score the family's rule gives them (0 for accuracy, key, beats,
melody and frames; the mean for regression) and are listed as failures; items whose reference
cannot be read are left out and listed.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from musiceval.schemas import OutputRecord
from musiceval.parsers import ParseError
from musiceval.records import ItemFailure


class TaskError(ValueError):
    """A task that cannot be scored as a whole (the message says why and what to do); re-exported
    as :class:`musiceval.protocols.mir.metrics.tasks.TaskError`. Raised for references that leave a metric undefined
    whatever the model answers (docs/cmi-bench.md, "Undefined metrics")."""


def _short(text: str, n: int = 60) -> str:
    return text[:n].replace("\n", " ") + ("..." if len(text) > n else "")


def classify(task: str, records: Sequence[OutputRecord], compat: str | None, vocabulary: Sequence[str]) -> tuple[np.ndarray, list[ItemFailure]]:
    """0/1 per item for multi-class tasks (and Nsynth_pitch)."""
    from musiceval.parsers.labels import find_labels, is_correct_cmi_normalised, normalise_cmi
    from musiceval.parsers.numbers import parse_midi_pitch

    golds = [r.correct_answer for r in records]
    failures: list[ItemFailure] = []
    if compat:
        labels = sorted(set(golds))
        norm = [normalise_cmi(x) for x in labels]
        if len(set(norm)) != len(norm):  # the toolkit asserts this: a property of the references, not of the answers
            same = sorted(lab for lab, n in zip(labels, norm) if norm.count(n) > 1)
            raise TaskError(f"{task}: the reference labels {', '.join(map(repr, same[:4]))} normalise to the same string "
                            "under the toolkit's rule (the toolkit stops here); score the file without --compat")
        gold = dict(zip(labels, norm))  # normalised once per task, as the toolkit does
        return np.array([float(is_correct_cmi_normalised(normalise_cmi(r.response), gold[r.correct_answer], norm))
                         for r in records]), failures
    values = []
    labels = list(dict.fromkeys([*vocabulary, *golds]))
    for r in records:
        if task == "Nsynth_pitch":
            try:
                pred: str | None = str(parse_midi_pitch(r.response))
            except ParseError as exc:
                pred = None
                failures.append(ItemFailure(r.item_id, f"{exc}: {_short(r.response)!r}"))
        else:
            found = find_labels(r.response, labels)
            pred = found[0] if len(found) == 1 else None
            if pred is None:
                why = "no label named" if not found else f"several labels named: {', '.join(found[:4])}"
                failures.append(ItemFailure(r.item_id, f"{why}: {_short(r.response)!r}"))
        values.append(float(pred is not None and normalise_cmi(pred) == normalise_cmi(r.correct_answer)))
    return np.array(values), failures


def key_scores(records: Sequence[OutputRecord], compat: str | None) -> tuple[np.ndarray, list[ItemFailure]]:
    import mir_eval

    from musiceval.parsers.key import parse_key, parse_key_cmi

    values, failures = [], []
    for r in records:
        if compat:
            pred = parse_key_cmi(r.response)
        else:
            try:
                pred = parse_key(r.response)
            except ParseError as exc:
                pred = None
                failures.append(ItemFailure(r.item_id, f"{exc}: {_short(r.response)!r}"))
        try:
            values.append(0.0 if pred is None else float(mir_eval.key.weighted_score(r.correct_answer, pred)))
        except ValueError as exc:  # a reference key mir_eval cannot read
            values.append(0.0)
            failures.append(ItemFailure(r.item_id, f"reference key {r.correct_answer!r}: {exc}"))
    return np.array(values), failures


def regression_scores(records: Sequence[OutputRecord], compat: str | None
                      ) -> tuple[np.ndarray, list[bool], list[ItemFailure], np.ndarray, list[str]]:
    """Per-item R^2 contributions of the model and of the mean predictor, and notes.

    Ratings without spread (every answer the same number, or none parsed) are the model's doing and
    are scored (:func:`musiceval.protocols.mir.metrics.regression.r2_standardised_items`: the mean predictor
    by default; every standardised prediction 0 in the compat modes, as ``cal_r2`` at 35235cb does,
    also for ``@2cafca5``, whose ``cal_r2`` raised), with a note. References that leave R^2
    undefined (fewer than two numeric ones, or all equal) are the benchmark file's: a
    :class:`~musiceval.protocols.mir.metrics.tasks.TaskError` naming the fix.
    """
    from musiceval.protocols.mir.metrics.compat import is_old, rating_reads_last
    from musiceval.protocols.mir.metrics.regression import MEAN_PREDICTOR, ZERO, has_spread, r2_items, r2_standardised_items
    from musiceval.parsers.numbers import parse_rating, parse_rating_cmi

    keep, refs, preds, failures = [], [], [], []
    for r in records:
        try:
            ref = float(r.correct_answer)
        except ValueError:
            keep.append(False)
            failures.append(ItemFailure(r.item_id, f"reference {r.correct_answer!r} is not a number"))
            continue
        if not np.isfinite(ref):
            keep.append(False)
            failures.append(ItemFailure(r.item_id, f"reference {r.correct_answer!r} is not finite"))
            continue
        keep.append(True)
        refs.append(ref)
        if compat:
            pred = parse_rating_cmi(r.response, last=rating_reads_last(compat))
            if pred is None:
                failures.append(ItemFailure(r.item_id, f"no rating, imputed with the mean: {_short(r.response)!r}"))
        else:
            try:
                pred = parse_rating(r.response)
            except ParseError as exc:
                pred = None
                failures.append(ItemFailure(r.item_id, f"{exc}, imputed with the mean: {_short(r.response)!r}"))
        preds.append(pred)
    if len(refs) < 2:
        raise TaskError(f"{len(refs)} of {len(records)} items have a numeric reference (correct_answer): R^2 needs at "
                        "least two; score the task's whole output file, whose correct_answer fields hold the ratings")
    y = np.array(refs)
    if float(np.var(y)) == 0.0:
        raise TaskError(f"every reference (correct_answer) of the {len(refs)} items is {refs[0]:g}: R^2 = 1 - SS_res / "
                        "SS_tot is undefined without variance (SS_tot = 0); score a file whose references differ "
                        "(the task's whole output file)")
    notes = []
    if not has_spread(preds):
        parsed = sorted({p for p in preds if p is not None})
        what = f"every parsed rating is {parsed[0]:g}" if parsed else "no rating was parsed"
        rule = ("scored as the mean predictor (R^2 = 0, the trivial baseline on every item)" if not compat else
                "every standardised prediction is 0, as cal_r2 at 35235cb does"
                + (" (evaluate.py at 2cafca5 raises here)" if is_old(compat) else ""))
        notes.append(f"{what}: predictions without spread carry no information, so {rule}")
    contrib = r2_standardised_items(y, preds, no_spread=ZERO if compat else MEAN_PREDICTOR)
    return contrib, keep, failures, r2_items(y, np.full_like(y, y.mean())), notes


def beat_table(records: Sequence[OutputRecord], compat: str | None, *,
               baseline_memo: Any = None) -> tuple[dict[str, list[float]], list[bool], list[ItemFailure], dict[str, list[float]], float]:
    """F-measure, CMLt, AMLt per item for the model and the evenly-spaced baseline (the latter
    memoised per reference set, see :func:`musiceval.protocols.mir.metrics.beats.metronome_baseline`)."""
    from musiceval.protocols.mir.metrics.beats import beat_scores, median_tempo, metronome_baseline
    from musiceval.parsers.times import parse_times, parse_times_cmi

    refs: list[np.ndarray | None] = []
    ests: list[np.ndarray | None] = []
    failures: list[ItemFailure] = []
    for r in records:
        if compat:
            try:  # the toolkit parses reference and estimate in one try block: any error zeroes the item
                ref, est = parse_times_cmi(r.correct_answer), parse_times_cmi(r.response)
                if ref.size and ref.max() > 30000 or est.size and est.max() > 30000:
                    raise ValueError("time above mir_eval's 30000 s limit")
            except ValueError as exc:
                ref2 = _try(lambda: parse_times_cmi(r.correct_answer))
                refs.append(ref2 if ref2 is not None else np.zeros(0))  # still counted, as a 0
                ests.append(None)
                failures.append(ItemFailure(r.item_id, f"toolkit parse error ({exc}), scored 0: {_short(r.response)!r}"))
                continue
            refs.append(ref)
            ests.append(est)
            continue
        try:
            ref = parse_times(r.correct_answer)
        except ParseError as exc:
            refs.append(None)
            ests.append(None)
            failures.append(ItemFailure(r.item_id, f"reference beats unreadable ({exc}), item left out"))
            continue
        refs.append(ref)
        try:
            ests.append(parse_times(r.response))
        except ParseError as exc:
            ests.append(None)
            failures.append(ItemFailure(r.item_id, f"{exc}, scored 0: {_short(r.response)!r}"))
    keep = [ref is not None for ref in refs]
    tempo = median_tempo([ref for ref in refs if ref is not None and ref.size >= 2])
    table: dict[str, list[float]] = {"f_measure": [], "cmlt": [], "amlt": []}
    for ref, est in zip(refs, ests):
        if ref is None:
            continue
        for m, v in beat_scores(ref, est).items():
            table[m].append(v)
    base = metronome_baseline([ref for ref in refs if ref is not None], tempo, memo=baseline_memo)
    return table, keep, failures, base, tempo


def _try(fn: Callable[[], np.ndarray]) -> np.ndarray | None:
    try:
        return fn()
    except ValueError:
        return None


def lyrics_scores(records: Sequence[OutputRecord], compat: str | None) -> tuple[list[float], list[float], list[bool], list[ItemFailure]]:
    import jiwer

    from musiceval.protocols.mir.metrics.lyrics import wer_cer
    from musiceval.parsers.lyrics import clean_lyrics, clean_lyrics_cmi, strip_prefix, strip_prefix_cmi

    wers, cers, keep, failures = [], [], [], []
    for r in records:
        try:
            if compat:
                ref, hyp = clean_lyrics_cmi(r.correct_answer), clean_lyrics_cmi(strip_prefix_cmi(r.response))
                w, c = float(jiwer.wer(ref, hyp)), float(jiwer.cer(ref, hyp))
            else:
                w, c = wer_cer(clean_lyrics(r.correct_answer), clean_lyrics(strip_prefix(r.response)))
        except ValueError as exc:
            keep.append(False)
            failures.append(ItemFailure(r.item_id, f"not scorable ({exc}), item left out"))
            continue
        keep.append(True)
        wers.append(w)
        cers.append(c)
    return wers, cers, keep, failures


def tag_matrices(records: Sequence[OutputRecord], tags: Sequence[str], compat: str | None,
                 embed: Callable[[Sequence[str]], np.ndarray], query_prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """Ground-truth matrix and response-tag cosine similarities."""
    from musiceval.protocols.mir.metrics.tagging import tag_truth, tag_truth_cmi

    truth = tag_truth_cmi if compat else tag_truth
    y_true = np.stack([truth(r.correct_answer, tags) for r in records])
    check_tag_truth(y_true, len(tags))
    # lowercased in both modes (the toolkit does; MiniLM and BGE are uncased, so one cache serves both)
    texts = [r.response.lower().strip() for r in records]
    resp = np.asarray(embed([query_prefix + t for t in texts]), dtype=np.float32)
    tag_emb = np.asarray(embed(list(tags)), dtype=np.float32)
    return y_true, resp @ tag_emb.T


def check_tag_truth(y_true: np.ndarray, n_tags: int) -> None:
    """Refuse references under which no tag has both a positive and a negative item: macro ROC-AUC
    and PR-AUC (:func:`musiceval.protocols.mir.metrics.tagging.macro_auc`) are then undefined whatever the
    answers. A property of the benchmark file, so a :class:`~musiceval.protocols.mir.metrics.tasks.TaskError`."""
    pos = np.asarray(y_true).sum(axis=0)
    if not ((pos > 0) & (pos < len(y_true))).any():
        raise TaskError(f"no tag of the task's {n_tags} has both a positive and a negative item among the {len(y_true)} "
                        "references (correct_answer), so ROC-AUC and PR-AUC are undefined; score more records of the "
                        "file, whose correct_answer fields hold comma-separated tags of the task's vocabulary")


def tag_matrices_bertscore(records: Sequence[OutputRecord], tags: Sequence[str], compat: str | None,
                           bertscorer: Any) -> tuple[np.ndarray, np.ndarray]:
    """Ground-truth matrix and per-tag BERTScore recall of each response (``evaluate.py`` at
    35235cb scores tagging with this beside GTE; see :func:`musiceval.protocols.mir.metrics.tagging.bertscore_tag_scores`)."""
    from musiceval.protocols.mir.metrics.tagging import bertscore_tag_scores, tag_truth, tag_truth_cmi

    truth = tag_truth_cmi if compat else tag_truth
    y_true = np.stack([truth(r.correct_answer, tags) for r in records])
    return y_true, bertscore_tag_scores([r.response.lower().strip() for r in records], tags, bertscorer)


def guzheng_scores(records: Sequence[OutputRecord], compat: str | None) -> dict[str, Any]:
    from musiceval.protocols.mir.metrics.compat import is_old
    from musiceval.protocols.mir.metrics.sequence import frame_counts, frame_f1
    from musiceval.parsers.guzheng import TECHNIQUES, events_to_frames, frames_cmi_2cafca5, frames_cmi_explained, parse_events

    failures: list[ItemFailure] = []
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    keep: list[bool] = []
    empty = np.zeros((1000, len(TECHNIQUES)), dtype=bool)
    for r in records:
        if compat:
            # 35235cb: unreadable answers are "No Tech" (listed); 2cafca5: the toolkit raised (listed)
            read = (lambda t: (frames_cmi_2cafca5(t), None)) if is_old(compat) else frames_cmi_explained
            ref_cmi, _ = read(r.correct_answer)
            if ref_cmi is None:
                keep.append(False)
                failures.append(ItemFailure(r.item_id, "reference unreadable by the toolkit rule, item left out"))
                continue
            pred, why = read(r.response)
            if pred is None:
                failures.append(ItemFailure(r.item_id, f"the toolkit would raise here; scored as no technique: {_short(r.response)!r}"))
                pred = empty
            elif why is not None:
                failures.append(ItemFailure(r.item_id, f"{why}: the toolkit reads 'No Tech': {_short(r.response)!r}"))
            pairs.append((ref_cmi.astype(bool), pred.astype(bool)))
        else:
            try:
                ref = events_to_frames(parse_events(r.correct_answer))
            except ParseError as exc:
                keep.append(False)
                failures.append(ItemFailure(r.item_id, f"reference unreadable ({exc}), item left out"))
                continue
            try:
                pred = events_to_frames(parse_events(r.response))
            except ParseError as exc:
                failures.append(ItemFailure(r.item_id, f"{exc}; scored as no technique: {_short(r.response)!r}"))
                pred = empty
            pairs.append((ref, pred))
        keep.append(True)
    if not pairs:  # a property of the references, not of the answers
        raise TaskError(f"none of the {len(records)} references (correct_answer) is a readable list of "
                        "(start, end, technique) tuples, so no frame F1 can be computed; check the file's correct_answer fields")
    counts = [frame_counts(t, p) for t, p in pairs]
    total = frame_f1(np.sum(counts, axis=0))
    # baseline: every frame labelled with the technique most frequent over all reference frames
    top = int(np.argmax(sum(t.sum(0) for t, _ in pairs)))
    const = np.zeros_like(empty)
    const[:, top] = True
    base_counts = [frame_counts(t, const) for t, _ in pairs]
    base_total = frame_f1(np.sum(base_counts, axis=0))
    metrics = {"macro_f1": total["macro_f1"], "micro_f1": total["micro_f1"]}
    if compat:  # evaluate.py unpacks (micro, macro) as (macro, micro)
        metrics = {"macro_f1": total["micro_f1"], "micro_f1": total["macro_f1"]}
    return {
        "metrics": metrics,
        "keep": keep,
        "failures": failures,
        "item_f1": [frame_f1(c)["micro_f1"] for c in counts],
        "baseline_item_f1": [frame_f1(c)["micro_f1"] for c in base_counts],
        "baseline_metrics": {"macro_f1": base_total["macro_f1"], "micro_f1": base_total["micro_f1"], "technique": TECHNIQUES[top]},
        "per_class_f1": dict(zip(TECHNIQUES, total["per_class_f1"])),
    }


def melody_scores(records: Sequence[OutputRecord], compat: str | None) -> tuple[list[float], list[bool], list[ItemFailure]]:
    from musiceval.protocols.mir.metrics.sequence import melody_overall_accuracy
    from musiceval.parsers.melody import parse_melody, parse_melody_cmi

    values, keep, failures = [], [], []
    for r in records:
        if compat:
            ref, est = parse_melody_cmi(r.correct_answer), parse_melody_cmi(r.response)
            if ref is None or est is None:
                keep.append(True)
                values.append(0.0)
                failures.append(ItemFailure(r.item_id, f"unreadable by the toolkit rule, scored 0: {_short(r.response)!r}"))
                continue
        else:
            try:
                ref = parse_melody(r.correct_answer)
            except ParseError as exc:
                keep.append(False)
                failures.append(ItemFailure(r.item_id, f"reference unreadable ({exc}), item left out"))
                continue
            try:
                est = parse_melody(r.response)
            except ParseError as exc:
                keep.append(True)
                values.append(0.0)
                failures.append(ItemFailure(r.item_id, f"{exc}, scored 0: {_short(r.response)!r}"))
                continue
        try:
            values.append(melody_overall_accuracy(ref[0], ref[1], est[0], est[1]))
            keep.append(True)
        except (ValueError, IndexError) as exc:  # the toolkit prints and skips such items
            keep.append(False)
            failures.append(ItemFailure(r.item_id, f"mir_eval.melody failed ({exc}), item left out"))
    return values, keep, failures
