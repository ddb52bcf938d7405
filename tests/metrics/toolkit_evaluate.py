"""Transcriptions of CMI-Bench ``evaluate.py`` (nicolaus625/CMI-bench) used as the reference side
of the differential tests: the functions at commit 35235cb, and ``extract_int`` also as it is at
commits 2cafca5 and 39a9c9b (:func:`extract_int_2cafca5`). Kept line by line with the toolkit's
code; the only changes are ``ast.literal_eval`` where the toolkit calls ``eval`` on model text
(what a literal cannot express raises in both, and every such raise lands in the toolkit's own
``except``) and no ``print``. Not imported by the package.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
#: ../shared/data beside the repository, or $MUSICEVAL_SHARED_DATA (worktrees sit elsewhere)
SHARED = Path(os.environ.get("MUSICEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


def normalise(text):
    if type(text) == list:
        text = text[0]
    return text.replace("_", "").replace("-", "").replace("#", "\u266f").replace("'", "").replace(" ", "").replace(".", "").lower()


CLASSES = [normalise(i) for i in ['Vibrato', 'Point Note', 'Upward Portamento', 'Downward Portamento', 'Plucks', 'Glissando', 'Tremolo']]


def convert_to_frame_labels(events, sr=100):
    start, end = events.find('['), events.find(')')
    if start == -1 or start >= end:
        events = [('0', '10', 'No Tech')]
    else:
        try:
            events_string = events[start:end] + ")]"
            if events_string.startswith("[\"["):
                events_string = events_string[2:]
            events = ast.literal_eval(events_string)  # toolkit: eval
        except:  # noqa: E722
            events = [('0', '10', 'No Tech')]
    if len(events) == 0:
        events = [('0', '10', 'No Tech')]
    if isinstance(events, list) and isinstance(events[0], dict):
        events = [(float(e['start']), float(e['end']), e['technique']) for e in events]
    elif isinstance(events, list) and all(isinstance(e, tuple) and len(e) == 3 for e in events):
        try:
            events = [(float(e[0]), float(e[1]), str(e[2])) for e in events if e[0][0].isdigit()]
            events = [(0, 10, 'No Tech')] if len(events) == 0 else events
        except:  # noqa: E722
            events = [(0, 10, 'No Tech')]
    try:
        events = [(start % 10, (end - 1e-4) % 10 + 1e-4, normalise(label)) for start, end, label in events]
    except:  # noqa: E722
        events = [(0, 10, 'notech')]
    num_frames = int(np.ceil(10 * sr))
    frame_labels = np.zeros((num_frames, len(CLASSES)))
    if len(events) == 1 and normalise(events[0][-1]) == "notech":
        return frame_labels
    for event in events:
        start_frame = int(float(event[0]) * sr)
        end_frame = int(float(event[1]) * sr)
        label = normalise(event[2])
        if label not in CLASSES:
            continue
        frame_labels[start_frame:end_frame, CLASSES.index(label)] = 1
    return frame_labels


def calculate_frame_f1(result_list, sr=100):
    total_tp = total_fp = total_fn = 0
    tp_per_class = np.zeros(len(CLASSES))
    fp_per_class = np.zeros(len(CLASSES))
    fn_per_class = np.zeros(len(CLASSES))
    for tmp in result_list:
        y_true = convert_to_frame_labels(tmp["correct_answer"], sr)
        y_pred = convert_to_frame_labels(tmp["response"], sr)
        total_tp += ((y_true == 1) & (y_pred == 1)).sum()
        total_fp += ((y_true == 0) & (y_pred == 1)).sum()
        total_fn += ((y_true == 1) & (y_pred == 0)).sum()
        for i in range(len(CLASSES)):
            tp_per_class[i] += ((y_true[:, i] == 1) & (y_pred[:, i] == 1)).sum()
            fp_per_class[i] += ((y_true[:, i] == 0) & (y_pred[:, i] == 1)).sum()
            fn_per_class[i] += ((y_true[:, i] == 1) & (y_pred[:, i] == 0)).sum()
    micro_precision = total_tp / (total_tp + total_fp) if (total_tp + total_fp) > 0 else 0
    micro_recall = total_tp / (total_tp + total_fn) if (total_tp + total_fn) > 0 else 0
    micro_f1 = 2 * micro_precision * micro_recall / (micro_precision + micro_recall) if (micro_precision + micro_recall) > 0 else 0
    class_f1 = []
    for i in range(len(CLASSES)):
        p = tp_per_class[i] / (tp_per_class[i] + fp_per_class[i]) if (tp_per_class[i] + fp_per_class[i]) > 0 else 0
        r = tp_per_class[i] / (tp_per_class[i] + fn_per_class[i]) if (tp_per_class[i] + fn_per_class[i]) > 0 else 0
        class_f1.append(2 * p * r / (p + r) if (p + r) > 0 else 0)
    return micro_f1, np.mean(class_f1)


def multi_label_scores(result_list, answer_list, score_fn):
    """``multi_label_bert``'s loop with the per-response scorer passed in (``score_fn(response,
    answer_list) -> row``): the GTE branch is ``gte.encode([response], prompt_name="query") @
    document_embeddings.T * 100``, the BERT branch ``score([response] * n, answer_list).R``."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    answer_list = sorted([ans.lower().strip() for ans in answer_list])
    y_true, y_pred = [], []
    for tmp in result_list:
        response = tmp["response"].lower().strip()
        correct_answers = tmp["correct_answer"].lower().strip()
        y_true.append([1 if answer in correct_answers else 0 for answer in answer_list])
        y_pred.append(list(score_fn(response, answer_list)))
    y_true, y_pred = np.array(y_true), np.array(y_pred)
    scores = [roc_auc_score(y_true[:, j], y_pred[:, j]) for j in range(y_true.shape[1]) if np.unique(y_true[:, j]).size >= 2]
    return {"ROC-AUC": float(np.mean(scores)) if scores else float("nan"),
            "PR-AUC": average_precision_score(y_true, y_pred, average="macro")}


def extract_int(response):
    """``extract_int`` at 35235cb: of several numbers, the last."""
    import re

    response = response.replace("1-9 scale", "scale")
    response = response.replace("from 1 to 9", "scale")
    response = re.sub(r'\d-point scale', 'scale', response)
    response = re.sub(r'\d/\d time signature', 'time signature', response)
    response = re.sub(r'\d/\d beat', 'time signature', response)
    response = re.sub(r'Example \d', '', response)
    numbers = re.findall(r'\d+', response)
    numbers = [i for i in numbers if 0 < int(i) < 10]
    if not numbers:
        return -0.5
    elif len(numbers) > 1:
        if len(numbers) == 2 and f"{numbers[0]}.{numbers[1]}" in response:
            return float(f"{numbers[0]}.{numbers[1]}")
        if len(numbers) == 2 and numbers[0] == numbers[1]:
            return int(numbers[0])
        return int(numbers[-1])
    return int(numbers[0])


def extract_int_2cafca5(response):
    """``extract_int`` at 2cafca5 (the same text at 39a9c9b): of several numbers, the first."""
    import re

    response = response.replace("1-9 scale", "scale")
    response = response.replace("from 1 to 9", "scale")
    response = re.sub(r'\d-point scale', 'scale', response)
    response = re.sub(r'\d/\d time signature', 'time signature', response)
    response = re.sub(r'\d/\d beat', 'time signature', response)
    response = re.sub(r'Example \d', '', response)
    numbers = re.findall(r'\d+', response)
    numbers = [i for i in numbers if 0 < int(i) < 10]
    if not numbers:
        return -0.5
    elif len(numbers) > 1:
        if len(numbers) == 2 and f"{numbers[0]}.{numbers[1]}" in response:
            return float(f"{numbers[0]}.{numbers[1]}")
        if len(numbers) == 2 and numbers[0] == numbers[1]:
            return int(numbers[0])
    return int(numbers[0])


def cal_r2(result_list, extract_int=extract_int):
    """``cal_r2`` at 35235cb with torchmetrics' ``R2Score`` written out (1 - SS_res / SS_tot, float32
    tensors); ``extract_int`` is the rating reader (:func:`extract_int_2cafca5` for the first number)."""
    import re

    answer_list = [float(tmp["correct_answer"]) for tmp in result_list]
    response = [extract_int(re.sub(r'out of 9', '', tmp['response'])) for tmp in result_list]
    response_2 = [x for x in response if x != -0.5]
    if len(response_2) == 0:
        response_2 = [0.0]
    mean, std = np.mean(response_2), np.std(response_2)
    if std == 0:
        normalised = [0.0 for _ in response]
    else:
        a, b = 1 / std, -mean / std
        normalised = [(a * x + b) for x in [mean if x == -0.5 else x for x in response]]
    p = np.asarray(normalised, dtype=np.float32).astype(np.float64)
    y = np.asarray(answer_list, dtype=np.float32).astype(np.float64)
    return 1.0 - ((y - p) ** 2).sum() / ((y - y.mean()) ** 2).sum()
