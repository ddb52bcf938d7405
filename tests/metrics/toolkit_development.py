"""Transcriptions of the development-branch functions of CMI-Bench ``evaluate.py``
(nicolaus625/CMI-bench@35235cb) used as the reference side of the differential tests of
tests/metrics/test_mir_development_differential.py: ``andalusian_normalise`` and
``andalusian_multiclass_acc``, ``lyra_label_set``, ``lyra_multilabel_scores`` and ``lyra_dance_acc``,
and ``song_structure_analysis`` with its parsers (returning the seven means instead of printing
them). Kept line by line with the toolkit's code, like tests/metrics/toolkit_evaluate.py. Not
imported by the package.
"""
from __future__ import annotations

import ast
import re
import unicodedata

import mir_eval
import numpy as np

from tests.metrics.toolkit_evaluate import normalise


def lyra_label_set(value):
    if isinstance(value, list):
        values = value
    else:
        values = str(value).split(",")
    return {normalise(item) for item in values if normalise(item)}


def lyra_multilabel_scores(result_list):
    answer_list = sorted({label for sample in result_list for label in lyra_label_set(sample["correct_answer"])})
    true_vectors = []
    pred_vectors = []
    exact_matches = []
    for sample in result_list:
        response = normalise(sample["response"])
        correct = lyra_label_set(sample["correct_answer"])
        predicted = {label for label in answer_list if label in response}
        true_vectors.append([1 if label in correct else 0 for label in answer_list])
        pred_vectors.append([1 if label in predicted else 0 for label in answer_list])
        exact_matches.append(predicted == correct)
    y_true = np.array(true_vectors)
    y_pred = np.array(pred_vectors)
    tp = np.logical_and(y_true == 1, y_pred == 1).sum()
    fp = np.logical_and(y_true == 0, y_pred == 1).sum()
    fn = np.logical_and(y_true == 1, y_pred == 0).sum()
    micro_f1 = 0.0 if 2 * tp + fp + fn == 0 else (2 * tp) / (2 * tp + fp + fn)
    per_label_f1 = []
    for idx in range(len(answer_list)):
        label_tp = np.logical_and(y_true[:, idx] == 1, y_pred[:, idx] == 1).sum()
        label_fp = np.logical_and(y_true[:, idx] == 0, y_pred[:, idx] == 1).sum()
        label_fn = np.logical_and(y_true[:, idx] == 1, y_pred[:, idx] == 0).sum()
        denom = 2 * label_tp + label_fp + label_fn
        per_label_f1.append(0.0 if denom == 0 else (2 * label_tp) / denom)
    return {
        "micro_f1": micro_f1,
        "macro_f1": float(np.mean(per_label_f1)) if per_label_f1 else 0.0,
        "exact_match": float(np.mean(exact_matches)) if exact_matches else 0.0,
        "num_labels": len(answer_list),
    }


def lyra_dance_acc(result_list):
    correct = 0
    for sample in result_list:
        response = normalise(sample["response"])
        answer = normalise(sample["correct_answer"])
        if answer == "yes":
            predicted = "yes" in response and "no" not in response
        else:
            predicted = "no" in response and "yes" not in response
        correct += int(predicted)
    return correct / len(result_list)


def andalusian_normalise(text):
    text = normalise(text)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    replacements = {"ā": "a", "ī": "i", "ū": "u", "ḥ": "h", "ḍ": "d", "ṣ": "s", "ṭ": "t", "‘": "", "’": "", "`": ""}
    for src, dst in replacements.items():
        text = text.replace(src, dst)
    return text


def andalusian_multiclass_acc(result_list):
    count = 0
    for sample in result_list:
        response = andalusian_normalise(sample["response"])
        correct = andalusian_normalise(sample["correct_answer"])
        if correct and correct in response:
            count += 1
    return count / len(result_list)


def parse_song_structure_time(value):
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().lower()
    text = text.replace("seconds", "").replace("second", "").replace("secs", "").replace("sec", "").strip()
    if text.endswith("s"):
        text = text[:-1].strip()
    if ":" in text:
        parts = text.split(":")
        try:
            return sum(float(part) * (60 ** idx) for idx, part in enumerate(reversed(parts)))
        except ValueError:
            return None
    match = re.search(r"-?\d+(?:\.\d+)?", text)
    if not match:
        return None
    return float(match.group(0))


def normalise_song_structure_label(label):
    label = str(label).strip().lower()
    label = re.sub(r"\s+", " ", label)
    label = label.replace("_", "-")
    label = label.strip(" .,:;")
    label_map = {"pre chorus": "pre-chorus", "prechorus": "pre-chorus", "post chorus": "chorus", "postchorus": "chorus",
                 "post-chorus": "chorus", "refrain": "chorus", "instrumental": "inst", "interlude": "inst",
                 "instrumental break": "inst", "silent": "silence"}
    if label in label_map:
        return label_map[label]
    known_labels = ["pre-chorus", "chorus", "verse", "bridge", "intro", "outro", "inst", "silence"]
    for known_label in known_labels:
        if re.search(rf"(^|[^a-z]){re.escape(known_label)}([^a-z]|$)", label):
            return known_label
    return "unknown" if label else "unknown"


def coerce_song_structure_segments(raw_segments):
    segments = []
    if isinstance(raw_segments, dict):
        raw_segments = raw_segments.get("segments", raw_segments.get("labels", []))
    if not isinstance(raw_segments, list):
        return segments
    for item in raw_segments:
        if isinstance(item, str):
            nested = parse_song_structure_segments(item)
            segments.extend(nested)
            continue
        if isinstance(item, dict):
            start = item.get("start", item.get("start_time", item.get("onset")))
            end = item.get("end", item.get("end_time", item.get("offset")))
            label = item.get("label", item.get("section", item.get("type")))
        elif isinstance(item, (list, tuple)) and len(item) >= 2:
            start, end = item[0], item[1]
            label = item[2] if len(item) >= 3 else "unknown"
        else:
            continue
        start = parse_song_structure_time(start)
        end = parse_song_structure_time(end)
        if start is None or end is None or end <= start or label is None:
            continue
        segments.append((start, end, normalise_song_structure_label(label)))
    return sorted(segments, key=lambda item: (item[0], item[1]))


def parse_song_structure_segments(text):
    if isinstance(text, list):
        return coerce_song_structure_segments(text)
    if not isinstance(text, str):
        return []
    text = text.strip()
    candidates = [text]
    list_start = text.find("[")
    list_end = text.rfind("]")
    if list_start != -1 and list_end > list_start:
        candidates.append(text[list_start:list_end + 1])
    for candidate in candidates:
        try:
            parsed = ast.literal_eval(candidate)
        except (SyntaxError, ValueError):
            continue
        segments = coerce_song_structure_segments(parsed)
        if segments:
            return segments
    pattern = re.compile(
        r"\(?\s*['\"]?([0-9][0-9:.]*\s*s?)['\"]?\s*,\s*"
        r"['\"]?([0-9][0-9:.]*\s*s?)['\"]?\s*,\s*"
        r"['\"]?([^'\"\)\]\n,]+)['\"]?\s*\)?"
    )
    segments = []
    for match in pattern.finditer(text):
        start = parse_song_structure_time(match.group(1))
        end = parse_song_structure_time(match.group(2))
        label = normalise_song_structure_label(match.group(3))
        if start is not None and end is not None and end > start:
            segments.append((start, end, label))
    if segments:
        return sorted(segments, key=lambda item: (item[0], item[1]))
    pair_pattern = re.compile(
        r"\(?\s*['\"]?([0-9][0-9:.]*\s*s?)['\"]?\s*,\s*"
        r"['\"]?([0-9][0-9:.]*\s*s?)['\"]?\s*\)?"
    )
    for match in pair_pattern.finditer(text):
        start = parse_song_structure_time(match.group(1))
        end = parse_song_structure_time(match.group(2))
        if start is not None and end is not None and end > start:
            segments.append((start, end, "unknown"))
    if segments:
        return sorted(segments, key=lambda item: (item[0], item[1]))
    bracketed_range_pattern = re.compile(
        r"[\[\(]\s*([0-9][0-9:.]*\s*s?)\s*-\s*"
        r"([0-9][0-9:.]*\s*s?)\s*[\]\)]\s*"
        r"([^,\n\]\)]+)?",
        re.IGNORECASE,
    )
    for match in bracketed_range_pattern.finditer(text):
        start = parse_song_structure_time(match.group(1))
        end = parse_song_structure_time(match.group(2))
        label = normalise_song_structure_label(match.group(3) or "unknown")
        if start is not None and end is not None and end > start:
            segments.append((start, end, label))
    if segments:
        return sorted(segments, key=lambda item: (item[0], item[1]))
    bare_range_pattern = re.compile(
        r"['\"]?\s*([0-9][0-9:.]*\s*s?)\s*-\s*"
        r"([0-9][0-9:.]*\s*s?)\s*['\"]?",
        re.IGNORECASE,
    )
    for match in bare_range_pattern.finditer(text):
        start = parse_song_structure_time(match.group(1))
        end = parse_song_structure_time(match.group(2))
        if start is not None and end is not None and end > start:
            segments.append((start, end, "unknown"))
    return sorted(segments, key=lambda item: (item[0], item[1]))


def segments_to_intervals_and_labels(segments, start_time=None, end_time=None):
    intervals = []
    labels = []
    cursor = start_time if start_time is not None else segments[0][0]
    for start, end, label in segments:
        if start_time is not None:
            start = max(start, start_time)
        if end_time is not None:
            end = min(end, end_time)
        if end <= cursor:
            continue
        if start > cursor:
            intervals.append([cursor, start])
            labels.append("unknown")
        start = max(start, cursor)
        if end > start:
            intervals.append([start, end])
            labels.append(label)
            cursor = end
    if end_time is not None and cursor < end_time:
        intervals.append([cursor, end_time])
        labels.append("unknown")
    return np.asarray(intervals, dtype=float), labels


def song_structure_analysis(result_list):
    boundary_f1_05, boundary_f1_30, pairwise_f1, rand_scores, ari_scores, ref_to_est_dev, est_to_ref_dev = ([] for _ in range(7))
    for tmp in result_list:
        ref_segments = parse_song_structure_segments(tmp["correct_answer"])
        est_segments = parse_song_structure_segments(tmp["response"])
        if not ref_segments or not est_segments:
            for values in (boundary_f1_05, boundary_f1_30, pairwise_f1, rand_scores, ari_scores, ref_to_est_dev, est_to_ref_dev):
                values.append(0.0)
            continue
        ref_intervals, ref_labels = segments_to_intervals_and_labels(ref_segments)
        ref_start = float(ref_intervals[0, 0])
        ref_end = float(ref_intervals[-1, 1])
        est_intervals, est_labels = segments_to_intervals_and_labels(est_segments, start_time=ref_start, end_time=ref_end)
        ref_intervals = ref_intervals - ref_start
        est_intervals = est_intervals - ref_start
        try:
            _, _, f1_05 = mir_eval.segment.detection(ref_intervals, est_intervals, window=0.5, trim=True)
            _, _, f1_30 = mir_eval.segment.detection(ref_intervals, est_intervals, window=3.0, trim=True)
            _, _, pair_f1 = mir_eval.segment.pairwise(ref_intervals, ref_labels, est_intervals, est_labels)
            rand_score = mir_eval.segment.rand_index(ref_intervals, ref_labels, est_intervals, est_labels)
            ari_score = mir_eval.segment.ari(ref_intervals, ref_labels, est_intervals, est_labels)
            ref_dev, est_dev = mir_eval.segment.deviation(ref_intervals, est_intervals, trim=True)
        except Exception:
            f1_05 = f1_30 = pair_f1 = rand_score = ari_score = ref_dev = est_dev = 0.0
        boundary_f1_05.append(f1_05)
        boundary_f1_30.append(f1_30)
        pairwise_f1.append(pair_f1)
        rand_scores.append(rand_score)
        ari_scores.append(ari_score)
        ref_to_est_dev.append(ref_dev)
        est_to_ref_dev.append(est_dev)
    return {"boundary_f1_05s": np.mean(boundary_f1_05), "boundary_f1_3s": np.mean(boundary_f1_30),
            "pairwise_f1": np.mean(pairwise_f1), "rand_index": np.mean(rand_scores), "ari": np.mean(ari_scores),
            "deviation_ref_to_est": np.mean(ref_to_est_dev), "deviation_est_to_ref": np.mean(est_to_ref_dev)}
