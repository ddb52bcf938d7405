#!/usr/bin/env bash
# Install WordNet 3.0 where nltk finds it, without nltk's downloader (its host is unreachable
# on the build machines). METEOR's synonym stage needs it; musiceval refuses to run METEOR
# without it rather than silently dropping synonym matching.
#
#   scripts/install_wordnet.sh            # NLTK_DATA defaults to <repo>/.venv/nltk_data
#   NLTK_DATA=/some/dir scripts/install_wordnet.sh
#
# Source: Debian's wordnet-base + wordnet-sense-index packages (WordNet 3.0, Princeton
# WordNet licence). nltk wants real files, not symlinks, in $NLTK_DATA/corpora/wordnet/, plus
# a `lexnames` file that Debian does not ship (we write the standard 45 lexicographer files).
# Idempotent: returns at once when the files are already in place.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NLTK_DATA="${NLTK_DATA:-$repo/.venv/nltk_data}"
dest="$NLTK_DATA/corpora/wordnet"
src=/usr/share/wordnet
files=(adj.exc adv.exc noun.exc verb.exc data.adj data.adv data.noun data.verb
       index.adj index.adv index.noun index.verb index.sense cntlist.rev)

done_already=1
for f in "${files[@]}" lexnames; do
  [[ -s "$dest/$f" && ! -L "$dest/$f" ]] || { done_already=0; break; }
done
if [[ $done_already == 1 ]]; then
  echo "WordNet already installed in $dest"
  exit 0
fi

if [[ ! -s "$src/data.noun" || ! -s "$src/index.sense" ]]; then
  if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then SUDO=sudo; else SUDO=; fi
  echo "install_wordnet: installing the Debian packages wordnet-base and wordnet-sense-index (WordNet 3.0," \
       "system-wide, with apt-get${SUDO:+ through sudo}): METEOR's synonym stage needs them; they are then copied to $dest"
  $SUDO apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index >/dev/null \
    || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index >/dev/null; }
fi

mkdir -p "$dest"
for f in "${files[@]}"; do
  cp --dereference "$src/$f" "$dest/$f"
done

# lexnames: "<number>\t<lexicographer file>\t<syntactic category>", WordNet 3.0 (lexnames(5WN)).
names=(adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute
  noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group
  noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession
  noun.process noun.quantity noun.relation noun.shape noun.state noun.substance noun.time
  verb.body verb.change verb.cognition verb.communication verb.competition verb.consumption
  verb.contact verb.creation verb.emotion verb.motion verb.perception verb.possession
  verb.social verb.stative verb.weather adj.ppl)
: > "$dest/lexnames"
for i in "${!names[@]}"; do
  n=${names[$i]}
  case $n in adj.*) cat=3;; adv.*) cat=4;; noun.*) cat=1;; verb.*) cat=2;; esac
  printf '%02d\t%s\t%s\n' "$i" "$n" "$cat" >> "$dest/lexnames"
done
echo "WordNet 3.0 installed in $dest"
