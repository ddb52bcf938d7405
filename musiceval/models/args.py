"""Model arguments: ``--musiceval-model-args 'dtype=bfloat16,device_map=auto,...'`` and ``[model] args``.

One vocabulary for the command line (a ``key=value,key=value`` string) and the suite config (a
TOML table, already typed). :func:`parse_model_args` turns the string into a typed dict;
:func:`split_model_args` splits a dict into the keyword arguments of
:func:`~musiceval.models.base.load_model` and the :class:`~musiceval.models.base.GenerationSettings`
of every call. Both are recorded in the run's provenance by the caller.

Load arguments (passed to the adapter; ``hf:`` forwards the first five to ``from_pretrained``):

========================  ======  ==========================================================
``dtype``                 str     ``auto``, ``bfloat16``, ``float16``, ``float32``
``device_map``            str     ``auto``, ``balanced``, ``sequential``, ``cuda:0``, ``cpu``...
``revision``              str     a hub branch, tag or commit
``attn_implementation``   str     ``sdpa``, ``eager``, ``flash_attention_2``...
``trust_remote_code``     bool    run code shipped with a checkpoint (explicit opt-in; default false)
``device``                str     one torch device (``cuda:1``); ignored when ``device_map`` is set
``batch_size``            int     requests per ``generate`` call (``hf:``)
``chunk_seconds``         float   answer per chunk of this length; ``max``: the model's maximum
``num_threads``           int     CPU threads torch may use while generating
``concurrency``           int     requests in flight per replica (``openai-compatible:``)
``audio_part``            str     ``input_audio`` or ``audio_url`` (``openai-compatible:``)
========================  ======  ==========================================================

Generation settings: ``max_new_tokens`` (alias ``max_tokens``) int, ``temperature`` float,
``do_sample`` bool, ``seed`` int.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from musiceval.models.base import GenerationSettings

__all__ = ["LOAD_ARGS", "GENERATION_ARGS", "parse_model_args", "coerce_model_args", "split_model_args"]

_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}
DTYPES = ("auto", "bfloat16", "float16", "float32")


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"expected an integer, got {value!r}")
    return int(str(value).strip()) if not isinstance(value, (int, float)) else int(value)


def _float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _str(value: Any) -> str:
    text = str(value).strip()
    if not text:
        raise ValueError("expected a non-empty value")
    return text


def _dtype(value: Any) -> str:
    text = _str(value).lower().removeprefix("torch.")
    aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}
    text = aliases.get(text, text)
    if text not in DTYPES:
        raise ValueError(f"expected one of {', '.join(DTYPES)}, got {value!r}")
    return text


def _audio_part(value: Any) -> str:
    text = _str(value)
    if text not in ("input_audio", "audio_url"):
        raise ValueError(f"expected input_audio or audio_url, got {value!r}")
    return text


def _chunk(value: Any) -> float | str:
    if str(value).strip().lower() == "max":
        return "max"
    seconds = _float(value)
    if seconds <= 0:
        raise ValueError(f"expected a positive number of seconds or 'max', got {value!r}")
    return seconds


#: load_model keyword arguments and how each value is read
LOAD_ARGS: dict[str, Callable[[Any], Any]] = {
    "dtype": _dtype,
    "device_map": _str,
    "revision": _str,
    "attn_implementation": _str,
    "trust_remote_code": _bool,
    "device": _str,
    "batch_size": _int,
    "chunk_seconds": _chunk,
    "num_threads": _int,
    "concurrency": _int,
    "audio_part": _audio_part,
}
#: GenerationSettings fields (``max_new_tokens`` is read as ``max_tokens``)
GENERATION_ARGS: dict[str, Callable[[Any], Any]] = {
    "max_tokens": _int,
    "temperature": _float,
    "do_sample": _bool,
    "seed": _int,
}
_ALIASES = {"max_new_tokens": "max_tokens", "torch_dtype": "dtype"}


def _known() -> str:
    return ", ".join(sorted(set(LOAD_ARGS) | set(GENERATION_ARGS) | set(_ALIASES)))


def coerce_model_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Validate and type a mapping of model arguments (strings or already typed values).

    Raises
    ------
    ValueError
        Naming the unknown key and the known ones, or the key whose value does not parse.
    """
    out: dict[str, Any] = {}
    for raw_key, value in args.items():
        key = _ALIASES.get(str(raw_key).strip(), str(raw_key).strip())
        reader = LOAD_ARGS.get(key) or GENERATION_ARGS.get(key)
        if reader is None:
            raise ValueError(f"unknown model argument {raw_key!r}; known: {_known()}")
        if key in out:
            raise ValueError(f"model argument {key!r} given twice (max_new_tokens is max_tokens)")
        try:
            out[key] = reader(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"model argument {raw_key}={value!r}: {exc}") from None
    return out


def parse_model_args(text: str) -> dict[str, Any]:
    """``'dtype=bfloat16,device_map=auto,max_new_tokens=64,do_sample=false'`` -> a typed dict.

    Keys are those of :data:`LOAD_ARGS` and :data:`GENERATION_ARGS` (``max_new_tokens`` becomes
    ``max_tokens``); an empty string gives ``{}``.

    Raises
    ------
    ValueError
        For a part without ``=``, an unknown key (the message lists the known ones), a repeated
        key, or a value of the wrong type.
    """
    pairs: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"model argument {part.strip()!r} is not key=value; e.g. dtype=bfloat16,device_map=auto")
        if key.strip() in pairs:
            raise ValueError(f"model argument {key.strip()!r} given twice")
        pairs[key.strip()] = value.strip()
    return coerce_model_args(pairs)


def split_model_args(args: Mapping[str, Any], base: GenerationSettings | None = None
                     ) -> tuple[dict[str, Any], GenerationSettings]:
    """``(load_kwargs, settings)``: the keyword arguments of ``load_model`` and the settings.

    ``args`` may be the output of :func:`parse_model_args` or the suite config's ``[model] args``
    table (validated here too). Settings not given keep ``base``'s values (default
    :class:`GenerationSettings`).
    """
    typed = coerce_model_args(args)
    load = {k: v for k, v in typed.items() if k in LOAD_ARGS}
    gen = {k: v for k, v in typed.items() if k in GENERATION_ARGS}
    base = base or GenerationSettings()
    fields = {"temperature": base.temperature, "max_tokens": base.max_tokens, "seed": base.seed,
              "do_sample": base.do_sample, **gen}
    return load, GenerationSettings(**fields)
