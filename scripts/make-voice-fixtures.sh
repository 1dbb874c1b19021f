#!/usr/bin/env bash
# Makes the caller utterances the simulated phone speaks in tests and the demo: espeak-ng's voice,
# resampled to 8 kHz and encoded as raw μ-law (the carrier's media format, no header). Run once when
# an utterance is added or changed; the files are committed, so tests and CI need neither tool.
#   apt-get install -y espeak-ng sox && scripts/make-voice-fixtures.sh
set -euo pipefail
cd "$(dirname "$0")/../test/fixtures/voice"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
node -e 'for (const [n, t] of Object.entries(require("./utterances.json"))) console.log(`${n}\t${t}`)' |
  while IFS=$'\t' read -r name text; do
    espeak-ng -v en-us -s 165 -w "$tmp/$name.wav" "$text"
    sox "$tmp/$name.wav" -r 8000 -c 1 -e u-law -t raw "$name.ulaw"
    echo "$name.ulaw: $(stat -c %s "$name.ulaw") bytes ($text)"
  done
