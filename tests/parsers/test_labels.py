"""Single-label matching: the toolkit's substring rule and the corrected whole-word rule."""
from musiceval.parsers.labels import find_labels, is_correct_cmi, normalise_cmi, predict_single_label

VOCALSET = ["belt", "breathy", "inhaled", "lip_trill", "spoken", "straight", "trill", "trillo", "vibrato", "vocal_fry"]
GTZAN = ["blues", "classical", "country", "disco", "hiphop", "jazz", "metal", "pop", "reggae", "rock"]


def test_normalise_cmi_follows_the_toolkit():
    assert normalise_cmi("Hip-Hop") == "hiphop"
    assert normalise_cmi("lip_trill") == "liptrill"
    assert normalise_cmi("F# minor.") == "f\u266fminor"
    assert normalise_cmi("don't  stop") == "dontstop"


def test_cmi_rule_accepts_real_mullama_answer():
    # real MU-LLaMA response (GTZAN, blues.00013)
    assert is_correct_cmi("The genre of the given music is blues.", "blues", GTZAN)


def test_cmi_rule_makes_trillo_unreachable_and_default_fixes_it():
    assert not is_correct_cmi("trillo", "trillo", VOCALSET)  # "trill" is a substring of "trillo"
    assert predict_single_label("trillo", VOCALSET) == "trillo"


def test_cmi_rule_rejects_answer_naming_two_labels():
    assert not is_correct_cmi("It could be rock or pop.", "rock", GTZAN)
    assert predict_single_label("It could be rock or pop.", GTZAN) is None


def test_default_rule_matches_separator_variants_and_plurals():
    assert predict_single_label("The genre is hip-hop.", GTZAN) == "hiphop"
    assert predict_single_label("a lip trill", VOCALSET) == "lip_trill"
    assert predict_single_label("I hear strings", ["string", "brass"]) == "string"


def test_default_rule_needs_whole_words():
    # "pop" inside "popular" or "rock" inside "rocket" is not a mention
    assert find_labels("a popular rocket", GTZAN) == []


def test_real_ltu_refusal_names_no_label():
    text = "This audio clip does not contain enough information to determine which singing technique is being used."
    assert find_labels(text, VOCALSET) == []


def test_longer_label_shadows_nested_one():
    assert find_labels("punk rock", ["rock", "punk rock"]) == ["punk rock"]
    assert find_labels("trill and trillo", VOCALSET) == ["trill", "trillo"]
