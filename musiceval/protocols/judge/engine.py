"""The LLM judge: its pinned identity, its prompts, the calls (cached and recorded) and how its
replies are read (docs/judge.md).

A judge is named by a spec:

- ``openai-compatible:<base url>#<model>``: any OpenAI-compatible chat endpoint (OpenAI, vLLM, a
  local server), called through :func:`musiceval.llm.client.make_client` with the bounded retries
  of :func:`musiceval.llm.client.call_with_retries`; ``openai:<model>`` uses ``OPENAI_BASE_URL``
  (OpenAI's API when unset);
- any other ``--model`` spec (``hf:<dir>``, a plugin's adapter): the musiceval model adapter asked
  text-only requests (:func:`musiceval.models.base.load_model`).

**Pinned.** A judge that changes under its name changes every score. An endpoint model must name a
dated snapshot (``gpt-4o-2024-08-06``, ``claude-3-5-sonnet-20241022``) or a revision
(``Qwen/Qwen2.5-7B-Instruct@<commit>``); an adapter judge is pinned when its revision is a content
hash (a local ``hf:`` directory, a hub commit). Anything else is an alias, refused
(:class:`JudgeUnpinned`) unless the config allows it, and then the verdict line names it.

**Recorded.** Every call goes through a content-addressed cache (:class:`musiceval.llm.cache.JSONCache`,
keyed by the judge's identity, prompt and sample) and, for an endpoint, a vcrpy cassette
(:mod:`musiceval.llm.cassettes`: credentials filtered). Replaying, a request the cassette does not
hold raises :class:`JudgeCassetteMiss` naming the item: never a silent re-judge.

**Read honestly** (:mod:`.engine_replies`): :func:`parse_pointwise`, :func:`parse_pairwise` and
:func:`parse_rubric` accept one line in the template's form, :func:`parse_mmau_pro` the scores
MMAU-Pro's evaluator reads; any other reply is unreadable: kept, counted, never a 0 and never skipped.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from musiceval.llm.cache import JSONCache
from musiceval.protocols.judge.engine_replies import (PARSER_VERSION, parse_mmau_pro, parse_pairwise,
                                                      parse_pointwise, parse_rubric)
from musiceval.redact import redact
from musiceval.stats.scales import BINARY, UNIT, Scale, bounded

PROMPTS = Path(__file__).parent / "prompts"
#: a dated snapshot (2024-08-06, 20241022) or a revision (@ and 7-40 hex digits) in a model id
_SNAPSHOT = re.compile(r"(?<!\d)(?:\d{4}-\d{2}-\d{2}|20\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))(?!\d)"
                       r"|@[0-9a-f]{7,40}$")
_HEX_REVISION = re.compile(r"^[0-9a-f]{7,64}$")
#: the evaluator's judge writes up to 512 new tokens: five lines, each with its reasons
MMAU_PRO_MAX_TOKENS = 512
#: a pairwise preference, from the candidate's side: win 1, tie 1/2, loss 0
WIN, TIE, LOSS = 1.0, 0.5, 0.0


class JudgeError(ValueError):
    """A judge that cannot take part as configured (one line: what and the fix)."""


class JudgeUnpinned(JudgeError):
    """A judge named by an alias where the config asks for a pinned one."""


class JudgeCassetteMiss(RuntimeError):
    """Replaying, the judge asked something its cassettes do not hold (``prompt``: the call)."""

    def __init__(self, message: str, prompt: str = ""):
        super().__init__(message)
        self.prompt = prompt


#: how to record the judge's cassettes, in the messages that need them
RECORD_HOW = ("record them: pytest evals/ --musiceval-record-mode once, with the judge reachable (OPENAI_API_KEY "
              "set, the spec's URL or OPENAI_BASE_URL serving it)")


def template(mode: str) -> str:
    if mode not in JUDGING:
        raise JudgeError(f"judge mode {mode!r}: choose {' or '.join(JUDGING)}")
    return (PROMPTS / f"{JUDGING[mode].template}.txt").read_text("utf-8")


def template_sha256(mode: str) -> str:
    return hashlib.sha256(template(mode).encode("utf-8")).hexdigest()


def pointwise_prompt(question: str, reference: str, answer: str) -> str:
    return template("pointwise").format(question=question, reference=reference, answer=answer)


def pairwise_prompt(question: str, first: str, second: str) -> str:
    return template("pairwise").format(question=question, first=first, second=second)


def rubric_prompt(description: str, question: str, first: str, second: str) -> str:
    return template("rubric").format(description=description, question=question, first=first, second=second)


def mmau_pro_prompt(question: str, reference: str, answer: str) -> str:
    return template("mmau-pro").format(question=question, reference=reference, answer=answer)


def _endpoint(spec: str) -> tuple[str | None, str] | None:
    """``(base url or None, model)`` of an endpoint judge spec, None for an adapter spec."""
    prefix, _, rest = spec.partition(":")
    if prefix == "openai" and rest:
        return None, rest
    if prefix == "openai-compatible":
        url, sep, model = rest.rpartition("#")
        if not sep or not url or not model:
            raise JudgeError(f"judge {redact(spec)!r} must be openai-compatible:<base url>#<model>")
        return url, model
    return None


@dataclass(frozen=True)
class JudgeSettings:
    """Who judges and how: the scorer side of a judged run's provenance (:meth:`facts`)."""

    spec: str
    mode: str = "pointwise"
    #: replies per prompt (self-consistency); more than one needs ``temperature > 0``
    samples: int = 1
    temperature: float = 0.0
    max_tokens: int = 32
    seed: int = 0
    allow_unpinned: bool = False
    #: an endpoint judge's calls in flight at once (not part of :meth:`facts`: it changes no reply)
    concurrency: int = 8

    def __post_init__(self) -> None:
        if not self.spec:
            raise JudgeError("no judge configured: set [judge] model to a pinned judge, e.g. "
                             "\"openai-compatible:http://localhost:8000/v1#gpt-4o-mini-2024-07-18\" (docs/judge.md)")
        template(self.mode)
        how = JUDGING[self.mode]
        if self.max_tokens < how.min_max_tokens:
            raise JudgeError(f"[judge] max_tokens = {self.max_tokens} cuts {how.long_reply} short: set [judge] "
                             f"max_tokens = {how.min_max_tokens}")
        if self.samples > 1 and self.temperature == 0:
            raise JudgeError(f"[judge] samples = {self.samples} at temperature 0 asks the same greedy reply "
                             f"{self.samples} times; set [judge] temperature > 0 (the judge's own) or samples = 1")

    @property
    def endpoint(self) -> tuple[str | None, str] | None:
        return _endpoint(self.spec)

    @property
    def model_id(self) -> str:
        """The judge's model as the provider names it (no URL: a recording replays at any address)."""
        found = self.endpoint
        return found[1] if found else redact(self.spec)

    def unpinned(self, revision: str = "") -> str | None:
        """Why the judge is not pinned (None when it is): an endpoint model without a dated snapshot
        or revision, an adapter whose ``revision`` is not a content hash."""
        if self.endpoint is not None:
            if _SNAPSHOT.search(self.model_id):
                return None
            return (f"judge {self.model_id!r} names no dated snapshot or revision: what answers under this "
                    "name can change (name a snapshot such as gpt-4o-2024-08-06, or a revision @<commit>)")
        if _HEX_REVISION.match(revision or ""):
            return None
        return f"judge {self.model_id!r} has no content-hash revision ({revision or 'none'})"

    def facts(self, revision: str = "") -> dict[str, Any]:
        """What decides the judge's scores: model (and revision), template, decoding, parser (the seed
        is the run's, recorded beside them in the provenance)."""
        return {"model": self.model_id, "revision": revision, "mode": self.mode,
                "template": JUDGING[self.mode].template, "template_sha256": template_sha256(self.mode),
                "decoding": {"temperature": self.temperature, "max_tokens": self.max_tokens, "samples": self.samples},
                "parser": PARSER_VERSION}


@dataclass(frozen=True)
class Reply:
    """One judge reply: its text, or why there is none."""

    text: str | None = None
    error: str | None = None


#: ``ask(prompts, seed) -> one Reply per prompt``: the judge's backend
Ask = Callable[[Sequence[str], int], list[Reply]]


def _endpoint_backend(settings: JudgeSettings, replaying: bool) -> Ask:
    from musiceval.llm.cassettes import is_cassette_miss
    from musiceval.llm.client import LLMCallFailed, call_with_retries, describe_error, make_client

    url, model = settings.endpoint  # type: ignore[misc]
    client = make_client(base_url=url, require_key=not replaying)

    def one(prompt: str, seed: int) -> Reply:
        import openai

        try:
            completion = call_with_retries(lambda: client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": prompt}], temperature=settings.temperature,
                max_tokens=settings.max_tokens, seed=seed, stream=False))
        except LLMCallFailed as exc:
            return Reply(error=str(exc))
        except Exception as exc:
            if is_cassette_miss(exc):
                raise JudgeCassetteMiss("not recorded", prompt) from exc
            if isinstance(exc, openai.APIError):
                return Reply(error=f"judge call failed: {describe_error(exc)}")
            raise
        text = completion.choices[0].message.content if completion.choices else None
        return Reply(text=text) if isinstance(text, str) else Reply(error="the judge returned no message")

    def ask(prompts: Sequence[str], seed: int) -> list[Reply]:
        """The calls in flight together (``settings.concurrency``), the replies in order."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
            return list(pool.map(lambda p: one(p, seed), prompts))

    return ask


def _adapter_backend(adapter: Any, settings: JudgeSettings) -> Ask:
    from musiceval.models.base import GenerationSettings, Request

    def ask(prompts: Sequence[str], seed: int) -> list[Reply]:
        decoding = GenerationSettings(temperature=settings.temperature, max_tokens=settings.max_tokens, seed=seed)
        answers = adapter.generate([Request(item_id=f"judge-{k}", prompt=p, audio=None) for k, p in enumerate(prompts)],
                                   decoding)
        return [Reply(text=a.text) if a.ok else Reply(error=a.error or "no reply") for a in answers]

    return ask


def adapter_revision(settings: JudgeSettings) -> str:
    """The revision of an adapter judge (``hf:<dir>``: a hash of its config and its weight files'
    names and sizes, :mod:`musiceval.models.hf`), read without loading the weights; "" for an
    endpoint judge, whose model id pins it. It goes into the judge's facts, so two runs judged by
    different weights at one path are told apart."""
    if settings.endpoint is not None:
        return ""
    from musiceval.models.base import load_model

    adapter = load_model(settings.spec)
    try:
        return str(getattr(adapter, "revision", "") or "")
    finally:
        close = getattr(adapter, "close", None)
        if close is not None:
            close()


class Judge:
    """The configured judge: ``ask(prompts, sample)`` answers each prompt once per sample index,
    from the cache when it holds the reply, else from the backend, an endpoint's calls inside the
    cassettes of folder ``cassettes``.

    ``cache_dir``: the folder of its cached replies (``<cache root>/judge`` in a run and in
    ``musiceval score judge``); ``revision`` is the adapter's revision for an adapter judge ("" for
    an endpoint)."""

    def __init__(self, settings: JudgeSettings, *, cache_dir: str | Path | None = None, cassettes: str | Path | None = None,
                 record_mode: str = "none"):
        self.settings = settings
        #: the folder of this answer file's cassettes (an endpoint judge), one file per key prefix
        self.cassette = Path(cassettes) if cassettes else None
        self.record_mode = record_mode
        self.revision = ""
        self._adapter = None
        if settings.endpoint is None:
            from musiceval.models.base import load_model

            self._adapter = load_model(settings.spec)
            self.revision = str(getattr(self._adapter, "revision", "") or "")
        if settings.endpoint is not None and self.cassette is None:
            raise JudgeError(f"judge {settings.model_id!r} is called over HTTP but no cassette is configured: set "
                             "[judge] cassettes (a folder relative to the config) so every call is recorded and CI "
                             "replays it (docs/judge.md)")
        reason = settings.unpinned(self.revision)
        if reason and not settings.allow_unpinned:
            raise JudgeUnpinned(f"{reason}; pin it, or set [judge] allow_unpinned = true (the verdict line then says "
                                "the judge is unpinned)")
        self.unpinned_reason = reason
        self._backend: Ask | None = None
        self.cache = JSONCache(cache_dir) if cache_dir else None
        self.n_calls = 0
        self._identity = json.dumps(settings.facts(self.revision), sort_keys=True)

    def _key(self, prompt: str, sample: int) -> str:
        seed = self.settings.seed + sample
        return hashlib.sha256(json.dumps([self._identity, prompt, seed]).encode("utf-8")).hexdigest()

    def _ask_backend(self, prompts: list[str], seed: int, keys: list[str]) -> list[Reply]:
        if self._backend is None:
            self._backend = (_adapter_backend(self._adapter, self.settings) if self._adapter is not None
                             else _endpoint_backend(self.settings, self.record_mode == "none"))
        self.n_calls += len(prompts)
        if self.cassette is None:
            return self._backend(prompts, seed)
        from musiceval.llm.cassettes import CassetteMissing, use_cassette

        # One cassette file per first two hex digits of the call's key: vcrpy finds a request by
        # comparing it with every interaction of its file, so one file of N calls costs N^2.
        buckets: dict[str, list[int]] = {}
        for k, key in enumerate(keys):
            buckets.setdefault(key[:2], []).append(k)
        out: list[Reply | None] = [None] * len(prompts)
        mode = "none" if self.record_mode == "none" else "new_episodes"  # several batches append to a file
        for bucket, ks in sorted(buckets.items()):
            path = self.cassette / f"{bucket}.yaml"
            try:
                with use_cassette(path, mode=mode, how_to_record=RECORD_HOW, match_on=("method", "path", "raw_body")):
                    for k, reply in zip(ks, self._backend([prompts[k] for k in ks], seed)):
                        out[k] = reply
            except CassetteMissing as exc:
                raise JudgeCassetteMiss(f"{path.name} is missing", prompts[ks[0]]) from exc
        return out  # type: ignore[return-value]

    def ask(self, prompts: Sequence[str], sample: int = 0) -> list[Reply]:
        """One reply per prompt for sample index ``sample`` (seed: the settings' seed plus ``sample``)."""
        out: list[Reply | None] = [None] * len(prompts)
        todo: dict[str, list[int]] = {}
        for k, prompt in enumerate(prompts):
            hit = self.cache.get(self._key(prompt, sample)) if self.cache is not None else None
            if hit is not None:
                out[k] = Reply(text=hit["text"])
            else:
                todo.setdefault(prompt, []).append(k)
        if todo:
            asked = list(todo)
            keys = [self._key(p, sample) for p in asked]
            replies = self._ask_backend(asked, self.settings.seed + sample, keys)
            for prompt, key, reply in zip(asked, keys, replies):
                if reply.text is not None and self.cache is not None:
                    self.cache.put(key, {"text": reply.text})
                for k in todo[prompt]:
                    out[k] = reply
        return out  # type: ignore[return-value]

    def close(self) -> None:
        if self._adapter is not None:
            self._adapter.close()


@dataclass(frozen=True)
class Judged:
    """The judge's reading of one answer to one item: every reply kept, the parsed values
    (None where unreadable), the item's score (None: no reply could be read) and, pairwise or
    rubric, whether the two seats disagreed; rubric, the reference's own score too."""

    item_id: str
    replies: tuple[str, ...]
    values: tuple[float | None, ...]
    score: float | None
    flipped: bool | None = None
    #: share of the readable samples agreeing with their majority (None with one sample)
    consistency: float | None = None
    errors: tuple[str, ...] = ()
    #: rubric: the reference's 1-10 score, the mean of its two seats (None in the other modes)
    reference_score: float | None = None

    @property
    def parsed_share(self) -> float:
        return sum(v is not None for v in self.values) / len(self.values) if self.values else 0.0

    @property
    def failure(self) -> str | None:
        if self.score is not None:
            return None
        if self.errors:
            return f"judge call failed: {self.errors[0]}"
        shown = next((r for r in self.replies if r), "")
        return f"judge reply unreadable: {shown[:120]!r}"


def _majority_share(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    from collections import Counter

    return Counter(values).most_common(1)[0][1] / len(values)


def _seat_value(pref: str | None, candidate_first: bool) -> float | None:
    if pref is None:
        return None
    if pref == "tie":
        return TIE
    return WIN if (pref == "1") == candidate_first else LOSS


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


@dataclass(frozen=True)
class Mode:
    """How one judging mode asks and reads, and how it is described (:data:`JUDGING`): a new mode
    is one entry there (with its prompt file under ``prompts/`` and its reply parser).

    ``template``: the prompt template's name (``prompts/<template>.txt``; a new wording is a new
    file and a new name); ``seats``: one prompt per seat from ``(question, reference, candidate,
    description)``; ``read``: a reply and its seat -> the candidate's value and the reference's
    (None: unreadable, or not scored); ``combine``: the seats' mean values (candidate's,
    reference's) -> the item's score, whether its ordering followed the seat (None where the mode
    cannot tell) and the reference's score (None where the mode does not score it)."""

    template: str
    seats: tuple[Callable[[str, str, str, str], str], ...]
    read: Callable[[str | None, int], tuple[float | None, float | None]]
    combine: Callable[[list[float], list[float]], tuple[float, bool | None, float | None]]
    #: what the mode does, in the help of ``[judge] mode`` / ``--mode``
    summary: str
    #: the unit of ``judge_score`` in this mode (the report's metric table)
    unit: str
    #: what one judge reply's value is (:mod:`musiceval.stats.scales`); an item's score over several
    #: samples or both seats is a mean of them (:meth:`~musiceval.stats.scales.Scale.averaged`)
    scale: Scale = UNIT
    #: the score is a CORRECT/INCORRECT verdict: where the answer is known (a multiple-choice item)
    #: it is checked against exact scoring
    verdicts: bool = False
    #: the smallest ``max_tokens`` the mode's reply fits in (0: any), and that reply, named in the refusal
    min_max_tokens: int = 0
    long_reply: str = ""

    @property
    def two_seats(self) -> bool:
        """The answer is asked in both seats (the position gate applies)."""
        return len(self.seats) > 1


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _one_seat(means: list[float], _ref: list[float]) -> tuple[float, bool | None, float | None]:
    return _mean(means), None, None


def _pairwise_combine(means: list[float], _ref: list[float]) -> tuple[float, bool | None, float | None]:
    """Seats on opposite sides of a tie: the judge preferred a seat, not an answer: a tie, flipped."""
    flipped = (means[0] - TIE) * (means[1] - TIE) < 0
    return (TIE if flipped else _mean(means)), flipped, None


def _rubric_read(reply: str | None, seat: int) -> tuple[float | None, float | None]:
    """Seat 0 shows the reference as assistant 1, seat 1 the candidate."""
    pair = parse_rubric(reply)
    if pair is None:
        return None, None
    cand, ref = (pair[1], pair[0]) if seat == 0 else pair
    return float(cand), float(ref)


def _rubric_combine(means: list[float], ref_means: list[float]) -> tuple[float, bool | None, float | None]:
    """Flipped when the candidate's ordering against the reference (above, equal, below) differs between seats."""
    return _mean(means), len({_sign(a - b) for a, b in zip(means, ref_means)}) > 1, _mean(ref_means)


#: judging mode -> how it asks and reads (:func:`judge_items` documents each rule)
JUDGING: dict[str, Mode] = {
    "pointwise": Mode("pointwise_v1", (lambda q, ref, cand, _d: pointwise_prompt(q, ref, cand),),
                      lambda reply, _seat: (parse_pointwise(reply), None), _one_seat,
                      summary="CORRECT/INCORRECT against the reference", unit="share judged correct (0-1)",
                      scale=BINARY, verdicts=True),
    "pairwise": Mode("pairwise_v1", (lambda q, ref, cand, _d: pairwise_prompt(q, cand, ref),
                                     lambda q, ref, cand, _d: pairwise_prompt(q, ref, cand)),
                     lambda reply, seat: (_seat_value(parse_pairwise(reply), candidate_first=seat == 0), None),
                     _pairwise_combine, summary="the answer against the reference, both seats",
                     unit="win 1, tie 1/2, loss 0 vs the reference"),
    "rubric": Mode("rubric_v1", (lambda q, ref, cand, d: rubric_prompt(d, q, ref, cand),
                                 lambda q, ref, cand, d: rubric_prompt(d, q, cand, ref)), _rubric_read, _rubric_combine,
                   summary="the answer and the reference each scored 1-10, both seats: AIR-Bench's rule",
                   unit="the answer's 1-10 score, mean of both seats", scale=bounded(1, 10)),
    "mmau-pro": Mode("mmau_pro_v1", (lambda q, ref, cand, _d: mmau_pro_prompt(q, ref, cand),),
                     lambda reply, _seat: (parse_mmau_pro(reply), None), _one_seat,
                     summary="the answer scored 1-5 against the reference: MMAU-Pro's rule",
                     unit="the answer's 1-5 score (MMAU-Pro's OVERALL)", scale=bounded(1, 5),
                     min_max_tokens=MMAU_PRO_MAX_TOKENS,
                     long_reply=f"MMAU-Pro's judge reply (five lines with reasons; its evaluator allows "
                                f"{MMAU_PRO_MAX_TOKENS} tokens)"),
}
MODES = tuple(JUDGING)


def mode_help() -> str:
    """The modes and what each does, for the help of ``[judge] mode``: "pointwise (...), ... or mmau-pro (...)"."""
    said = [f"{mode} ({how.summary}{f'; max_tokens {how.min_max_tokens}' if how.min_max_tokens else ''})"
            for mode, how in JUDGING.items()]
    return ", ".join(said[:-1]) + " or " + said[-1] if len(said) > 1 else said[0]


def modes_with(two_seats: bool) -> tuple[str, ...]:
    """The modes that ask the answer in both seats (``two_seats``), or in one."""
    return tuple(mode for mode, how in JUDGING.items() if how.two_seats == two_seats)


def judge_items(judge: Judge, rows: Sequence[tuple[str, ...]], mode: str | None = None) -> list[Judged]:
    """Judge ``(item id, question, reference, candidate[, audio description])`` rows in ``mode``
    (default the judge's), as :data:`JUDGING` says.

    Pointwise: each sample's verdict (CORRECT 1, INCORRECT 0); the item's score is their mean.
    Pairwise: the candidate against the reference in both seats (candidate first, then second);
    each seat's value is the mean over its samples of win 1 / tie 1/2 / loss 0 from the
    candidate's side; when the seats fall on opposite sides of a tie the judge preferred a seat,
    not an answer: the item is a tie (1/2) and ``flipped``.
    MMAU-Pro (its evaluator's rule, docs/judge.md): each sample's 1-5 score (:func:`parse_mmau_pro`);
    the item's score is their mean.
    Rubric (AIR-Bench's rule, docs/judge.md): the audio description, the question and the reference
    and the candidate as two assistants, reference first then candidate first; each reply scores
    both 1-10; the candidate's score is the mean of its two seats' (each seat's the mean over its
    samples), the reference's likewise, and ``flipped`` when the candidate's ordering against the
    reference (above, equal, below) differs between the seats."""
    s = judge.settings
    how = JUDGING[mode or s.mode]
    prompts = [[ask(q, ref, cand, rest[0] if rest else "") for _, q, ref, cand, *rest in rows] for ask in how.seats]
    try:  # replies[seat][sample][row]
        replies = [[judge.ask(p, sample) for sample in range(s.samples)] for p in prompts]
    except JudgeCassetteMiss as exc:
        item = next((r[0] for seat in prompts for r, p in zip(rows, seat) if p == exc.prompt), "?")
        raise JudgeCassetteMiss(
            f"the judge's cassettes in {judge.cassette} hold no reply to its call about item {item!r} ({exc}): the "
            f"answers, the judge or its prompt changed since they were recorded; {RECORD_HOW}", exc.prompt) from exc
    out = []
    for k, (item_id, *_rest) in enumerate(rows):
        texts, errors, seats, ref_seats = [], [], [], []
        for seat, per_sample in enumerate(replies):
            values, ref_values = [], []
            for sample_replies in per_sample:
                reply = sample_replies[k]
                texts.append(reply.text or "")
                if reply.error:
                    errors.append(reply.error)
                cand, ref = how.read(reply.text, seat)
                values.append(cand)
                if ref is not None:
                    ref_values.append(ref)
            seats.append(values)
            ref_seats.append(ref_values)
        flat = [v for seat in seats for v in seat]
        read = [[v for v in seat if v is not None] for seat in seats]
        if not all(read):  # a seat with no readable reply: the item is not judged
            out.append(Judged(item_id, tuple(texts), tuple(flat), None, errors=tuple(errors)))
            continue
        score, flipped, reference_score = how.combine([_mean(r) for r in read],
                                                      [_mean(r) for r in ref_seats if r])
        shares = [_majority_share(r) for r in read]
        consistency = None if shares[0] is None else min(x for x in shares if x is not None)
        out.append(Judged(item_id, tuple(texts), tuple(flat), score, flipped, consistency, tuple(errors),
                          reference_score))
    return out
