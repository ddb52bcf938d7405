"""Label vocabularies of the CMI-Bench tasks (dataset facts, not scoring rules).

Tag vocabularies are those the CMI-Bench toolkit scores against: the MTG-Jamendo genre (87),
instrument (40), mood/theme (56) and top-50 tag sets, written without spaces as in MTG-Jamendo's
tag ids ("easylistening", "acousticguitar"), and the MagnaTagATune top-50 tags (with spaces, in
the order of the toolkit's ``tags.npy``). Class vocabularies list every class of the dataset, so a
slice of a file that lacks a class is still scored against the full label set; the Arab-Andalusian
and Lyra lists are those the instructions of nicolaus625/CMI-bench @ 35235cb offer the model.
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

#: Arab-Andalusian labels (transliterated names) as each task's instruction lists them, nicolaus625/CMI-bench
#: @ 35235cb ``data/arab_andalusian/CMI_ArabAndalusian_<task>.jsonl`` (``sft_arab_andalusian.py`` collects
#: them from the dataset's ``andalusian_description.json``).
ARAB_ANDALUSIAN_NAWBA: tuple[str, ...] = (
    "al-istihlāl", "al-māīyah", "al-ruṣṣad", "al-āṣbhān", "al-ḥjāz al-kabīr", "al-ḥjāz al-mashriqī", "al-‘ushshāq",
    "bawākir al-māīyah", "bidūn", "gharībat al-ḥusayn", "rumil al-māīyah", "ruṣid al-dhayl", "‘irāq al-‘ajam",
)
ARAB_ANDALUSIAN_TAB: tuple[str, ...] = (
    "al-istihlāl", "al-mashriqī", "al-māīyah", "al-nhāūnd", "al-ruṣṣad", "al-zrkh", "al-āṣbhān", "al-ḥjāz al-kabīr",
    "al-ḥjāz al-mashriqī", "al-ṣīkh", "al-‘ushshāq", "bawākir al-māīyah", "gharībat al-ḥusayn", "khalīṭ al-ṭbū‘",
    "qarībun ilá al-istihlāl", "qarībun ilá al-māīyah", "rumil al-māīyah", "ruṣid al-dhayl", "ruṣid al-dhayl maghribī",
    "‘irāq al-‘ajam",
)
ARAB_ANDALUSIAN_FORM: tuple[str, ...] = (
    "al-inṣirāf", "al-mahzūz", "al-mahzūz al-awl", "al-mahzūz al-thānī", "al-mashālīyah", "al-mūssi‘",
    "al-tawshīh al-khāmsah", "al-tawshīh al-rāb‘ah", "al-tawshīh al-sāb‘ah", "al-tawshīh al-sādsah",
    "al-tawshīh al-thālithah", "al-tawshīh al-thālithah lilnnūbah", "al-tawshīh al-thāniyah",
    "al-tawshīh al-thāniyah lilnnūbah", "al-tawshīh al-thāniyah linūbat al-istihlāl", "al-tawshīh al-ūlá",
    "al-tawshīh al-ūlá lilnnūbah", "al-tūāshī al-sab‘ ( dūn al-ūlá wal-sāb‘ahi)", "inshād", "inṣirāf al-basīṭ",
    "mashālīyah", "mawwāl", "taqsīm", "tawshīt al-mīzān", "tawshīt al-mīzān ( bi-al-qawli)", "tawshīt al-nūbah",
    "tawshīt al-nūbah ( bi-al-qawli)", "ṣāmat ruṣṣad al-dhayl",
)
ARAB_ANDALUSIAN_MIZAN: tuple[str, ...] = (
    "basīṭ", "bidūn", "bṭāyḥī", "darij", "qdām", "qā’imun wanuṣf", "thulāthī", "thunā’ī", "thunā’ī wbṭāyḥī",
    "zanadānī waqdām", "ḥḍḍārī",
)

#: Lyra (Greek traditional and folk music) label sets as each task's instruction lists them,
#: nicolaus625/CMI-bench @ 35235cb ``data/lyra/CMI_Lyra_<task>.jsonl`` (``sft_lyra.py`` collects them
#: from Lyra's training and test splits).
LYRA_INSTRUMENTS: tuple[str, ...] = (
    "Accordion", "Baglamas", "Bass", "Bassoon", "Bouzouki", "Cello", "Cimbalom", "Electric-guitar", "Floghera",
    "Flute", "Guitar", "Kanonaki", "Klarino", "Laouto", "Lyra", "Mandolin", "Ney", "Oud", "Percussion", "Piano",
    "Santouri", "Tambouras", "Trombone", "Trumpet", "Tsampouna", "Tsumbus", "Tuba", "Tzouras", "Violin", "Voice",
    "Whistling", "Zournas",
)
LYRA_GENRES: tuple[str, ...] = (
    "Aegean", "Arabic", "Arrangement", "Arvanitic", "Bulgarian", "Central-Greek", "Cretan", "Cypriot", "Epirotic",
    "Euboean", "Ionian", "Laiko", "Macedonian", "Melodized-poetry", "Mikrasiatiko", "Newer", "Nisiotiko",
    "Peloponnesian", "Politiko", "Polyphonic", "Pontian", "Rebetiko", "Romanian", "Sarakatsani", "Southern-Italian",
    "Thessalic", "Thracian", "Traditional", "Turkish", "Urban-folk", "Urban-light", "Vlachic",
)
LYRA_PLACES: tuple[str, ...] = (
    "Aegean-sea", "Aegina", "Aivali", "Amorgos", "Andros", "Arachova", "Arcadia", "Arta", "Asia-minor", "Bulgaria",
    "Cappadocia", "Central-Greece", "Cephalonia", "Chios", "Corfu", "Crete", "Cyprus", "Deropolis", "Drama",
    "East-Crete", "Egypt", "Epirus", "Euboea", "Folegandros", "Grevena", "Halki", "Halkidiki", "Himara", "Icaria",
    "Ionian-sea", "Kalavryta", "Kalymnos", "Karpathos", "Kasos", "Kastoria", "Kea", "Kilkis", "Konitsa", "Kos",
    "Kozani", "Kythira", "Kythnos", "Lebanon", "Lefkada", "Lemnos", "Leros", "Lesbos", "Macedonia", "Mesologgi",
    "Metsovo", "Mykonos", "Napoli", "Naxos", "Nisyros", "Oinousses", "Paros", "Peloponnese", "Pogoni", "Poli",
    "Pontus", "Preveza", "Rhodes", "Romania", "Samos", "Samothrace", "Serifos", "Serres", "Sifnos", "Skyros",
    "Smyrni", "Southern-Italy", "Syrrako", "Thessaloniki", "Thessaly", "Thrace", "Trikala", "Turkey", "Tzoumerka",
    "West-Crete", "Zagori", "Zakynthos",
)

#: Label vocabulary of each label-set task (answers name several labels, scored by F1).
LABEL_SET_VOCABULARIES: dict[str, tuple[str, ...]] = {
    "Lyra_instrument": LYRA_INSTRUMENTS,
    "Lyra_genre": LYRA_GENRES,
    "Lyra_place": LYRA_PLACES,
}

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
    "ArabAndalusian_nawba": ARAB_ANDALUSIAN_NAWBA,
    "ArabAndalusian_tab": ARAB_ANDALUSIAN_TAB,
    "ArabAndalusian_form": ARAB_ANDALUSIAN_FORM,
    "ArabAndalusian_mizan": ARAB_ANDALUSIAN_MIZAN,
    "Lyra_dance": ("no", "yes"),
}
