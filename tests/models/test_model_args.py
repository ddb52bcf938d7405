"""Model arguments: the --musiceval-model-args string and the [model] args table."""
from __future__ import annotations

import pytest

from musiceval.models import GenerationSettings
from musiceval.models.args import parse_model_args, split_model_args
from musiceval.models.cache import cache_key

FULL = ("dtype=bfloat16,device_map=auto,revision=abc,attn_implementation=sdpa,max_new_tokens=64,"
        "temperature=0,do_sample=false,seed=1,trust_remote_code=true")


def test_the_documented_string_parses_to_typed_values():
    assert parse_model_args(FULL) == {
        "dtype": "bfloat16", "device_map": "auto", "revision": "abc", "attn_implementation": "sdpa",
        "max_tokens": 64, "temperature": 0.0, "do_sample": False, "seed": 1, "trust_remote_code": True}
    assert parse_model_args("") == {} and parse_model_args(" dtype = bf16 , ") == {"dtype": "bfloat16"}


def test_split_gives_load_kwargs_and_settings():
    load, settings = split_model_args(parse_model_args(FULL))
    assert load == {"dtype": "bfloat16", "device_map": "auto", "revision": "abc", "attn_implementation": "sdpa",
                    "trust_remote_code": True}
    assert settings == GenerationSettings(temperature=0.0, max_tokens=64, seed=1, do_sample=False)
    # a suite config table is already typed; defaults come from the base settings
    load, settings = split_model_args({"max_new_tokens": 8}, GenerationSettings(seed=3))
    assert load == {} and settings == GenerationSettings(max_tokens=8, seed=3)


@pytest.mark.parametrize("text, message", [
    ("dtype=bfloat16,flash=yes", "unknown model argument 'flash'; known: .*attn_implementation.*max_new_tokens"),
    ("dtype", "not key=value"),
    ("seed=one", "seed='one'"),
    ("do_sample=maybe", "do_sample='maybe': expected true or false"),
    ("dtype=int3", "dtype='int3': expected one of auto, bfloat16"),
    ("seed=1,seed=2", "given twice"),
    ("max_tokens=1,max_new_tokens=2", "given twice"),
])
def test_bad_arguments_name_the_key_and_the_fix(text, message):
    with pytest.raises(ValueError, match=message):
        parse_model_args(text)


def test_do_sample_is_recorded_only_when_set_so_old_cache_keys_stay_valid():
    assert GenerationSettings().as_dict() == {"temperature": 0.0, "max_tokens": 256, "seed": 0}
    assert GenerationSettings(do_sample=False).as_dict()["do_sample"] is False

    def key(s):
        return cache_key(model="m", revision="r", settings=s.as_dict(), prompt="p", audio_hash="a", condition="correct")

    assert key(GenerationSettings()) != key(GenerationSettings(do_sample=False))
    assert GenerationSettings(temperature=0.5).sampling and not GenerationSettings(temperature=0.5, do_sample=False).sampling
    with pytest.raises(ValueError, match="do_sample=true needs temperature > 0"):
        GenerationSettings(do_sample=True)


class _Config:
    def __init__(self, value):
        self.value = value

    def getoption(self, name):
        if self.value is KeyError:
            raise ValueError(f"no option named {name!r}")  # what pytest raises for an undefined option
        return self.value


def test_the_fixtures_read_the_option_once_the_plugin_defines_it():
    from musiceval.models.fixtures import model_args_from_config

    assert model_args_from_config(_Config(KeyError)) == {}  # plugin without the option
    assert model_args_from_config(_Config(None)) == {}
    assert model_args_from_config(_Config("dtype=bf16,max_new_tokens=8")) == {"dtype": "bfloat16", "max_tokens": 8}
    with pytest.raises(pytest.UsageError, match="model arguments: unknown model argument 'gpu'"):
        model_args_from_config(_Config("gpu=1"))
