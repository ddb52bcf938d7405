"""Factual prompt templates: phrasings, the "Among {all labels}" variant, binary and true/false."""
import pytest

from musiceval.vocab.factual_prompts import PHRASINGS, among_prompt, binary_prompt, phrasing, true_false_prompts
from musiceval.extraction import load_vocabulary
from musiceval.schemas import binary_choices


def test_paper_phrasings_come_first():
    assert phrasing("instrument") == "Which instruments are used in this piece of music?"
    assert phrasing("genre") == "What genre does this piece of music fall under?"
    assert phrasing("composer") == "Which classical composer's style does this piece resemble the most?"
    assert all(len(v) >= 3 for v in PHRASINGS.values())
    with pytest.raises(ValueError, match="phrasings"):
        phrasing("genre", 99)
    with pytest.raises(ValueError, match="task"):
        phrasing("tempo")


def test_among_prompt_lists_the_whole_vocabulary():
    vocab = load_vocabulary("nsynth")
    prompt = among_prompt("instrument", vocab.labels)
    assert prompt.startswith("Among bass, brass,") and "synth lead and vocal, which instruments" in prompt
    with pytest.raises(ValueError):
        among_prompt("genre", [])


def test_binary_prompts_put_the_true_label_first_in_half():
    truth = ["rock", "pop", "jazz", "blues"] * 5
    pairs = binary_choices(truth, load_vocabulary("gtzan").labels, seed=0)
    prompts = [binary_prompt("genre", a, b) for a, b, _ in pairs]
    firsts = sum(p.startswith(f"Between {t} and") for p, t in zip(prompts, truth))
    assert firsts == len(truth) // 2


def test_true_false_prompt_per_label():
    prompts = true_false_prompts("instrument", ["piano", "synth_lead"])
    assert prompts == {"piano": "Is piano used in this song? Answer yes or no.",
                       "synth_lead": "Is synth lead used in this song? Answer yes or no."}


def test_variant_items_among_binary_true_false():
    from musiceval.vocab.factual_prompts import variant_items
    from musiceval.records import Item

    items = [Item("a", "q", labels=("pop",), group="g"), Item("b", "q", labels=("rock",))]
    labels = ["pop", "rock", "jazz"]
    assert variant_items(items, "paper", "genre", labels) == items
    among = variant_items(items, "among", "genre", labels)
    assert {it.question for it in among} == {"Among pop, rock and jazz, what genre does this piece of music fall under?"}
    binary = variant_items(items, "binary", "genre", labels, seed=3)
    assert all(it.labels[0] in it.meta["options"] and it.question.startswith("Between ") for it in binary)
    assert sum(it.meta["options"][0] == it.labels[0] for it in binary) == 1  # true first in exactly half
    tf = variant_items(items, "true-false", "genre", labels)
    assert [it.id for it in tf[:3]] == ["a#pop", "a#rock", "a#jazz"] and tf[3].group == "b"
    assert tf[1].meta == {"item": "a", "asked": "rock"} and tf[1].question == "Is this song rock music? Answer yes or no."
    with pytest.raises(ValueError, match="variant"):
        variant_items(items, "multiple-choice", "genre", labels)
    with pytest.raises(ValueError, match="true label"):
        variant_items([Item("c", "q")], "binary", "genre", labels)
