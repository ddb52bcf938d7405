"""Label vocabularies of the CMI-Bench tasks (dataset facts, not scoring rules).

Tag vocabularies are those the CMI-Bench toolkit scores against: the MTG-Jamendo genre (87),
instrument (40), mood/theme (56) and top-50 tag sets, written without spaces as in MTG-Jamendo's
tag ids ("easylistening", "acousticguitar"), and the MagnaTagATune top-50 tags (with spaces, in
the order of the toolkit's ``tags.npy``). Class vocabularies list every class of the dataset, so a
slice of a file that lacks a class is still scored against the full label set.
"""
from __future__ import annotations

#: MTG-Jamendo genre tags (87).
MTG_GENRE_TAGS: tuple[str, ...] = (
    "60s", "70s", "80s", "90s", "acidjazz", "alternative", "alternativerock", "ambient",
    "atmospheric", "blues", "bluesrock", "bossanova", "breakbeat", "celtic", "chanson", "chillout",
    "choir", "classical", "classicrock", "club", "contemporary", "country", "dance", "darkambient",
    "darkwave", "deephouse", "disco", "downtempo", "drumnbass", "dub", "dubstep", "easylistening",
    "edm", "electronic", "electronica", "electropop", "ethno", "eurodance", "experimental", "folk",
    "funk", "fusion", "groove", "grunge", "hard", "hardrock", "hiphop", "house", "idm",
    "improvisation", "indie", "industrial", "instrumentalpop", "instrumentalrock", "jazz",
    "jazzfusion", "latin", "lounge", "medieval", "metal", "minimal", "newage", "newwave",
    "orchestral", "pop", "popfolk", "poprock", "postrock", "progressive", "psychedelic", "punkrock",
    "rap", "reggae", "rnb", "rock", "rocknroll", "singersongwriter", "soul", "soundtrack", "swing",
    "symphonic", "synthpop", "techno", "trance", "triphop", "world", "worldfusion"
)

#: MTG-Jamendo instrument tags (40).
MTG_INSTRUMENT_TAGS: tuple[str, ...] = (
    "accordion", "acousticbassguitar", "acousticguitar", "bass", "beat", "bell", "bongo", "brass",
    "cello", "clarinet", "classicalguitar", "computer", "doublebass", "drummachine", "drums",
    "electricguitar", "electricpiano", "flute", "guitar", "harmonica", "harp", "horn", "keyboard",
    "oboe", "orchestra", "organ", "pad", "percussion", "piano", "pipeorgan", "rhodes", "sampler",
    "saxophone", "strings", "synthesizer", "trombone", "trumpet", "viola", "violin", "voice"
)

#: MTG-Jamendo mood/theme tags (56).
MTG_EMOTION_TAGS: tuple[str, ...] = (
    "action", "adventure", "advertising", "background", "ballad", "calm", "children", "christmas",
    "commercial", "cool", "corporate", "dark", "deep", "documentary", "drama", "dramatic", "dream",
    "emotional", "energetic", "epic", "fast", "film", "fun", "funny", "game", "groovy", "happy",
    "heavy", "holiday", "hopeful", "inspiring", "love", "meditative", "melancholic", "melodic",
    "motivational", "movie", "nature", "party", "positive", "powerful", "relaxing", "retro",
    "romantic", "sad", "sexy", "slow", "soft", "soundscape", "space", "sport", "summer", "trailer",
    "travel", "upbeat", "uplifting"
)

#: MTG-Jamendo top-50 tags, in the toolkit's order.
MTG_TOP50_TAGS: tuple[str, ...] = (
    "alternative", "ambient", "atmospheric", "chillout", "classical", "dance", "downtempo",
    "easylistening", "electronic", "experimental", "folk", "funk", "hiphop", "house", "indie",
    "instrumentalpop", "jazz", "lounge", "metal", "newage", "orchestral", "pop", "popfolk",
    "poprock", "reggae", "rock", "soundtrack", "techno", "trance", "triphop", "world",
    "acousticguitar", "bass", "computer", "drummachine", "drums", "electricguitar", "electricpiano",
    "guitar", "keyboard", "piano", "strings", "synthesizer", "violin", "voice", "emotional",
    "energetic", "film", "happy", "relaxing"
)

#: MagnaTagATune top-50 tags (Choi et al. split), in tags.npy order.
MTT_TOP50_TAGS: tuple[str, ...] = (
    "guitar", "classical", "slow", "techno", "strings", "drums", "electronic", "rock", "fast",
    "piano", "ambient", "beat", "violin", "vocal", "synth", "female", "indian", "opera", "male",
    "singing", "vocals", "no vocals", "harpsichord", "loud", "quiet", "flute", "woman",
    "male vocal", "no vocal", "pop", "soft", "sitar", "solo", "man", "classic", "choir",
    "voice", "new age", "dance", "male voice", "female vocal", "beats", "harp", "cello",
    "no voice", "weird", "country", "metal", "female voice", "choral",
)

#: GTZAN genres as spelled in the CMI-Bench answers.
GTZAN_GENRES: tuple[str, ...] = (
    "blues", "classical", "country", "disco", "hiphop", "jazz", "metal", "pop", "reggae", "rock"
)

#: NSynth instrument families (11; the CMI-Bench test outputs contain 10, no synth_lead).
NSYNTH_FAMILIES: tuple[str, ...] = (
    "bass", "brass", "flute", "guitar", "keyboard", "mallet", "organ", "reed", "string",
    "synth_lead", "vocal"
)

#: VocalSet singing techniques (10).
VOCALSET_TECHNIQUES: tuple[str, ...] = (
    "belt", "breathy", "inhaled", "lip_trill", "spoken", "straight", "trill", "trillo", "vibrato",
    "vocal_fry"
)

#: Tag vocabulary of each multi-label task.
TAG_VOCABULARIES: dict[str, tuple[str, ...]] = {
    "MTT": MTT_TOP50_TAGS,
    "MTG_genre": MTG_GENRE_TAGS,
    "MTG_instrument": MTG_INSTRUMENT_TAGS,
    "MTG_emotion": MTG_EMOTION_TAGS,
    "MTG_top50tags": MTG_TOP50_TAGS,
}

#: Full class vocabulary of each multi-class task (default mode adds the file's own answers).
CLASS_VOCABULARIES: dict[str, tuple[str, ...]] = {
    "GTZAN": GTZAN_GENRES,
    "Nsynth_instrument": NSYNTH_FAMILIES,
    "VocalSet_tech": VOCALSET_TECHNIQUES,
    "Nsynth_pitch": tuple(str(p) for p in range(9, 120)),
}
