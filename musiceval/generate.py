"""Run a Music LM over a dataset manifest and fill the response cache (``musiceval generate``,
:mod:`musiceval.commands.generate`).

::

    musiceval generate --model hf:/models/qwen2-audio --dataset data/manifest.jsonl \\
        --conditions correct,random,noise,text_only --cache-dir .musiceval/cache [--concurrency 8]

The expensive GPU step runs once; ``pytest evals/ --musiceval-model MODEL_SPEC --musiceval-cache-dir
.musiceval/cache`` (and any later ``generate`` run) reuses the cached answers. A killed run resumes where it stopped: finished
batches are in the cache, the torn last line of a killed writer is ignored and reported.

Manifest (JSON lines, one item per line): ``id``; ``question`` (or ``prompt`` / ``instruction``);
``audio`` (a path relative to the data directory, or CMI-Bench's ``audio_path`` list);
optional ``audio_start`` / ``audio_end`` (seconds; a negative end, CMI-Bench's ``-1``, means the
end of the file), ``reference``, ``labels``, ``choices``,
``answer``, ``group``; other keys go to ``meta``. Paths are resolved against ``--data-dir``
(default: the manifest's folder) and may not leave it.

Conditions: ``correct`` (the item's audio), ``random`` (another clip of the same manifest, a
seeded derangement over distinct clips: never the clip itself; ``--random-draws K`` asks K
independent pairings, responses carry ``meta.draw``), ``noise`` (white Gaussian noise of
the clip's length and RMS, seeded per item), ``text_only`` (no audio). ``skyline`` and
``adversarial`` rewrite references and need no model run.

Sharding (several machines, a Slurm array, a Kubernetes indexed job): ``--shard i/n`` (0 <= i < n)
answers only the items whose id hashes to shard ``i`` of ``n`` (SHA-256 of the id, so the split
does not depend on file order or on the other items); the Random condition's pairing and the
noise are drawn over the whole manifest, so shard answers equal an unsharded run's. Join the
shards' caches with ``musiceval merge``.

Exit status: 0 all answered, 1 some items failed (each listed with its reason on stderr; the
rest are cached), 2 unusable input (manifest, model spec).
"""
from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from musiceval.audio import (
    AudioError,
    audio_content_hash,
    chunk_audio,
    load_audio,
    resolve_audio_path,
    white_noise_like,
)
from musiceval.models.base import Answer, GenerationSettings, MusicLM, Request
from musiceval.models.cache import ResponseCache, cache_key, redact_spec
from musiceval.data.answers import AnswerSet
from musiceval.data.jsonl import has_lone_surrogate
from musiceval.data.manifest import ManifestError, load_manifest
from musiceval.records import Item, ItemFailure, Response, to_jsonable
from musiceval.redact import redact

__all__ = [
    "MODEL_CONDITIONS",
    "GENERATED_FORMAT",
    "GenerationResult",
    "ManifestError",
    "load_manifest",
    "random_partners",
    "shard_of",
    "parse_shard",
    "generate_responses",
    "require_answers",
]

MODEL_CONDITIONS = ("correct", "random", "noise", "text_only")
#: the format name of an answer set built from generated answers (:meth:`GenerationResult.answer_set`)
GENERATED_FORMAT = "generated"


def shard_of(item_id: str, n_shards: int) -> int:
    """The shard (0..n-1) of an item: its id's SHA-256 modulo ``n_shards``; independent of file order."""
    return int(hashlib.sha256(str(item_id).encode("utf-8")).hexdigest()[:16], 16) % int(n_shards)


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/8"`` -> ``(2, 8)``; shards count from 0 (a Slurm array ``--array=0-7`` gives the index)."""
    index, sep, total = str(text).partition("/")
    try:
        i, n = int(index), int(total)
    except ValueError:
        i, n = -1, 0
    if not sep or n < 1 or not 0 <= i < n:
        raise ValueError(f"--shard {text!r} must be i/n with 0 <= i < n, e.g. --shard 0/4 (shards count from 0)")
    return i, n


def _clip(item: Item) -> tuple[str, float | None, float | None] | None:
    if item.audio is None:
        return None
    return item.audio, item.meta.get("audio_start"), item.meta.get("audio_end")


def random_partners(items: Sequence[Item], seed: int, *, draws: int = 1) -> list[dict[str, Item]]:
    """Per draw, for each item with audio, an item holding a different recording (the Random condition).

    Uses :func:`musiceval.conditions.random_audio_assignment` (``draws`` independent seeded
    derangements over distinct recordings, so questions about one clip never get that clip back);
    the partner item supplies its ``audio_start``/``audio_end`` window. Empty mappings when fewer
    than two recordings exist.
    """
    from musiceval.conditions import random_audio_assignment

    with_audio = [item for item in items if item.audio is not None]
    holder: dict[str, Item] = {}
    for item in with_audio:
        holder.setdefault(item.audio, item)
    if len(holder) < 2:
        return [{} for _ in range(draws)]
    return [{item_id: holder[audio] for item_id, audio in assignment.items()}
            for assignment in random_audio_assignment(with_audio, seed, draws=draws)]


def _item_seed(seed: int, item_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{item_id}".encode(), digest_size=8).digest(), "little")


@dataclass
class GenerationResult:
    responses: list[Response] = field(default_factory=list)
    failures: list[ItemFailure] = field(default_factory=list)
    n_cached: int = 0
    n_generated: int = 0

    def summary(self) -> dict[str, Any]:
        return {"n_responses": len(self.responses), "n_cached": self.n_cached,
                "n_generated": self.n_generated, "n_failed": len(self.failures)}

    @classmethod
    def joined(cls, results: Iterable[GenerationResult]) -> GenerationResult:
        """Several results as one (the K repeats of a run, :func:`musiceval.suite.repeats.each_repeat`):
        responses and failures in order, counts summed."""
        out = cls()
        for r in results:
            out.responses += r.responses
            out.failures += r.failures
            out.n_cached += r.n_cached
            out.n_generated += r.n_generated
        return out

    def answer_set(self, items: Sequence[Item], *, model: str, source: str) -> AnswerSet:
        """These answers to ``items`` as the :class:`~musiceval.data.answers.AnswerSet` a recorded answer
        file gives (format ``"generated"``), for a protocol's ``from_answers``: live answers are scored on
        the path recorded ones are. The failed requests are the set's failures (reason prefixed by the
        condition); ``model`` names the model (credentials redacted), ``source`` what it was asked."""
        return AnswerSet(items=list(items), responses=list(self.responses), failures=list(self.failures),
                         model=model, source=source, format=GENERATED_FORMAT)


def require_answers(result: GenerationResult, model: str, what: str) -> GenerationResult:
    """``result`` when the model answered at least one request (or none was asked); else
    :class:`~musiceval.models.base.ModelAnsweredNothing`: one line naming ``model`` (credentials
    redacted), the failed requests on ``what``, the commonest reason and the fix."""
    if result.responses or not result.failures:
        return result
    from collections import Counter

    from musiceval.models.base import ModelAnsweredNothing

    # "correct chunk 0: server returned no message content" -> "server returned no message content"
    reasons = Counter(re.sub(r"^[a-z_]+(?: chunk \d+)?: ", "", f.reason) for f in result.failures)
    reason, count = reasons.most_common(1)[0]
    raise ModelAnsweredNothing(redact(
        f"model {model} answered nothing: all {len(result.failures)} requests on {what} failed "
        f"({count} with: {' '.join(reason.split())[:300]}); check that the model answers one request by hand "
        "(a server: its log and one chat completion with curl), then run again"))


def generate_responses(
    model: MusicLM,
    items: Sequence[Item],
    *,
    conditions: Iterable[str] = ("correct",),
    data_dir: str | Path,
    cache: ResponseCache | None = None,
    settings: GenerationSettings = GenerationSettings(),
    batch_size: int = 16,
    progress: bool = False,
    random_draws: int = 1,
    shard: tuple[int, int] | None = None,
) -> GenerationResult:
    """Answer every (item, condition), reusing and filling ``cache``; one bad item never stops it.

    ``random_draws`` = K asks each item under K independent Random pairings (responses carry
    ``meta["draw"]`` 0..K-1 and ``meta["audio_from"]``); scores are averaged over draws per item.

    ``shard=(i, n)`` answers only the items of shard ``i`` (:func:`shard_of`); pass the whole
    manifest as ``items`` so that the Random pairing is the unsharded run's.

    Returns the responses (one per chunk when the model chunks) in (item, condition) order and the
    failures, each naming the item, the condition and the reason. Requests go to the model
    ``batch_size`` (item, condition) pairs at a time; each finished batch is in the cache before
    the next starts, so an interrupted run loses at most one batch.
    """
    conditions = list(dict.fromkeys(conditions))
    unknown = [c for c in conditions if c not in MODEL_CONDITIONS]
    if unknown:
        raise ValueError(f"conditions {unknown} need no model run or do not exist; choose from {', '.join(MODEL_CONDITIONS)}")
    if random_draws < 1:
        raise ValueError(f"random_draws must be >= 1, got {random_draws}")
    result = GenerationResult()
    partners = random_partners(items, settings.seed, draws=random_draws) if "random" in conditions else []
    spec = redact_spec(model.spec)

    @lru_cache(maxsize=64)
    def decoded(clip: tuple[str, float | None, float | None]) -> np.ndarray:
        path = resolve_audio_path(clip[0], data_dir)
        return load_audio(path, model.sample_rate, start=clip[1], end=clip[2])

    def audio_for(item: Item, condition: str, draw: int) -> tuple[np.ndarray | None, dict[str, Any]]:
        if condition == "text_only" or not getattr(model, "needs_audio", True):
            return None, {}
        if _clip(item) is None:
            raise AudioError(f"item {item.id!r} has no audio; condition {condition!r} needs it")
        if condition == "random":
            if item.id not in partners[draw]:
                raise AudioError("the random condition needs at least two distinct clips in the manifest")
            partner = partners[draw][item.id]
            return decoded(_clip(partner)), {"audio_from": partner.id, "draw": draw}
        audio = decoded(_clip(item))
        if condition == "noise":
            return white_noise_like(audio, _item_seed(settings.seed, item.id)), {}
        return audio, {}

    mine = items if shard is None else [item for item in items if shard_of(item.id, shard[1]) == shard[0]]
    tasks = [(item, c, k) for item in mine for c in conditions for k in range(random_draws if c == "random" else 1)]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), unit="item", desc=f"generate {spec}", dynamic_ncols=True, file=sys.stderr)
    try:
        for start in range(0, len(tasks), max(1, batch_size)):
            _run_block(model, tasks[start : start + batch_size], audio_for, cache, settings, spec, result)
            if bar is not None:
                bar.update(len(tasks[start : start + batch_size]))
    finally:
        if bar is not None:
            bar.close()
    return result


def _run_block(model, block, audio_for, cache, settings, spec, result: GenerationResult) -> None:
    sdict = settings.as_dict()
    pending: list[tuple[Request, dict[str, Any]]] = []
    slots: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for item, condition, draw in block:
        try:
            audio, extra = audio_for(item, condition, draw)
        except AudioError as exc:
            result.failures.append(ItemFailure(item.id, f"{condition}: {exc}"))
            continue
        chunks: list[np.ndarray | None] = [audio]
        if audio is not None:
            if model.chunk_seconds:
                chunks = list(chunk_audio(audio, model.sample_rate, model.chunk_seconds))
            elif model.max_audio_seconds and len(audio) > model.max_audio_seconds * model.sample_rate:
                chunks = [audio[: int(model.max_audio_seconds * model.sample_rate)]]
                extra = {**extra, "truncated_to_s": model.max_audio_seconds}
        for index, chunk in enumerate(chunks):
            audio_hash = audio_content_hash(chunk, model.sample_rate)
            if not getattr(model, "needs_audio", True):  # answers are per item, not per waveform
                audio_hash = f"item:{item.id}"
            key = cache_key(model=spec, revision=model.revision, settings=sdict, prompt=item.question,
                            audio_hash=audio_hash, condition=condition, chunk=index)
            record = {"key": key, "item_id": item.id, "condition": condition, "chunk": index,
                      "n_chunks": len(chunks), "model": spec, "revision": model.revision,
                      "settings": sdict, "prompt": item.question, "audio_hash": audio_hash, "meta": extra}
            hit = cache.get(key) if cache is not None else None
            slots.append((record, hit))
            if hit is None:
                pending.append((Request(item.id, item.question, chunk, condition, index), record))
    answer_of: dict[int, Answer] = {}
    late_hit: dict[int, dict[str, Any]] = {}
    todo = pending
    try:
        while todo:
            if cache is not None:
                mine, _ = cache.claim(record["key"] for _, record in todo)
                mine_set = set(mine)
                ask = [(req, record) for req, record in todo if record["key"] in mine_set]
                wait = [(req, record) for req, record in todo if record["key"] not in mine_set]
            else:
                ask, wait = todo, []
            if ask:
                _ask_model(model, ask, settings, spec, answer_of)
                fresh = []
                for _, record in ask:
                    answer = answer_of[id(record)]
                    if answer.ok and has_lone_surrogate(answer.text) is None:
                        meta = {**record["meta"], **dict(answer.meta)}
                        fresh.append({**record, "text": answer.text, "meta": to_jsonable(meta)})
                if cache is not None:
                    if fresh:
                        cache.put_many(fresh)
                    cache.release(mine)
            todo = []
            if wait:  # another run is asking these: take its answers, ask only what it failed to answer
                found = cache.wait_for(record["key"] for _, record in wait)
                for req, record in wait:
                    if record["key"] in found:
                        late_hit[id(record)] = found[record["key"]]
                    else:
                        todo.append((req, record))
    finally:
        if cache is not None:
            cache.release()
    n_fresh = 0
    for record, hit in slots:  # responses in task order, cached or not
        hit = hit if hit is not None else late_hit.get(id(record))
        if hit is not None:
            result.n_cached += 1
            # this request's context (partner clip, draw) over what was recorded with the answer
            result.responses.append(_response(record, hit["text"], {**hit.get("meta", {}), **record["meta"]}, cached=True))
            continue
        answer = answer_of[id(record)]
        if answer.ok and has_lone_surrogate(answer.text) is not None:
            answer = Answer(error="the model's answer holds a lone UTF-16 surrogate (not valid Unicode text)")
        if not answer.ok:
            result.failures.append(ItemFailure(record["item_id"], f"{record['condition']} chunk {record['chunk']}: {answer.error}"))
            continue
        n_fresh += 1
        meta = {**record["meta"], **dict(answer.meta)}
        result.responses.append(_response(record, answer.text, meta, cached=False))
    result.n_generated += n_fresh


def _ask_model(model, ask, settings, spec, answer_of: dict[int, Answer]) -> None:
    try:
        answers = model.generate([req for req, _ in ask], settings)
        if len(answers) != len(ask):
            raise RuntimeError(f"returned {len(answers)} answers for {len(ask)} requests")
    except Exception as exc:  # noqa: BLE001 - an adapter bug fails this block's items, not the run
        answers = [Answer(error=redact(f"model {spec} raised {type(exc).__name__}: {exc}")[:500])] * len(ask)
    for (_, record), answer in zip(ask, answers):
        answer_of[id(record)] = answer


def _response(record: dict[str, Any], text: str, meta: dict[str, Any], *, cached: bool) -> Response:
    full = {**meta, "chunk": record["chunk"], "n_chunks": record["n_chunks"], "settings": record["settings"],
            "revision": record["revision"], "audio_hash": record["audio_hash"], "cache_key": record["key"],
            "cached": cached}
    return Response(record["item_id"], record["condition"], record["model"], record["prompt"], text, full)
