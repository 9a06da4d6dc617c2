#!/usr/bin/env bash
# Regenerates the pictures of README.md and docs/guide.md (docs/images/*.png): one per view of the
# window, rendered offscreen by `attnscope --screenshot` (no display needed) on the demo model with the
# default prompt, each view's settings given as a session file (the .attnscope format, app/session_file.h).
# Usage: tools/screenshots.sh [ATTNSCOPE_BINARY]   (default build/app/attnscope; builds it if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${1:-build/app/attnscope}
if [ ! -x "$exe" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target attnscope
fi
out=docs/images
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prompt="In the beginning God created the heaven and the earth. In the beginning God created the heaven and the earth."

# session VIEW LAYER HEAD PANELS_JSON: a session of the demo with the default prompt
session() {
  cat > "$work/$1.attnscope" <<JSON
{"format": "attnscope-session", "version": 1, "model": "demo", "prompt": "$prompt", "prependBos": true,
 "layer": $2, "head": $3, "panels": $4}
JSON
  echo "$work/$1.attnscope"
}
shot() { # VIEW FILE SESSION
  "$exe" --screenshot "$1" --out "$out/$2" --session-file "$3" --width 1600 --height 1000 --force
}

# position 15 is the second " God": the induction heads predict " created" from the first occurrence
attribution='{"logit-attribution": {"position": 15, "measure": "dla-difference", "target": " created", "counter": " said",
              "overlay": "induction", "ablatedHeads": [[1, 1], [1, 2], [1, 3]], "ablation": "zero"}}'
shot attention attention.png "$(session attention 1 2 "$attribution")"
shot head-detectors head-detectors.png "$(session detectors 1 2 "$attribution")"
shot logit-attribution logit-attribution.png "$(session attribution 1 2 "$attribution")"
shot ablation ablation.png "$(session ablation 1 2 "$attribution")"
shot attention-steps attention-steps.png "$(session steps 1 2 '{"attention-steps": {"step": "attn_out_additive"}}')"
shot attention-by-hand attention-by-hand.png "$(session byhand 0 0 '{"attention-by-hand": {"worksheetArithmetic": true}}')"
shot logit-lens logit-lens.png "$(session lens 1 2 '{"logit-lens": {"target": " created", "colouring": "target-rank", "cell": [3, 15]}}')"
shot embedding-space embedding-space.png \
  "$(session embedding 1 2 '{"embedding-space": {"kind": "ov", "layer": 1, "head": 2, "topK": 30, "rowToken": " created", "reverseToken": " created"}}')"
shot compare-models compare-models.png \
  "$(session compare 1 2 '{"compare-models": {"secondModel": "resources/demo-variant", "similarity": "ffvalue", "parameter": "ffvalue", "layer": 1, "index": 0, "topK": 20}}')"
# the Compare tab's sub-tabs, on the first verses of Genesis (the stitch view's text is the window's prompt)
genesis='In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.'
prompt=$genesis
shot stitch stitch.png \
  "$(session stitch 1 2 '{"compare-models": {"secondModel": "resources/demo-variant", "subTab": "stitch", "stitch": {"position": 12}}}')"
shot finetune-directions finetune-directions.png \
  "$(session finetune 1 2 '{"compare-models": {"secondModel": "resources/demo-variant", "subTab": "finetune"}}')"
# Circuits: z patched position by position, " created" against " made" after the second God; the sweep runs
# on restore ("autorun")
prompt='In the beginning God created the heaven and the earth. And God'
shot circuits circuits.png \
  "$(session circuits 1 1 '{"circuits": {"tab": "patching", "corrupt_prompt": "In the beginning God made the heaven and the earth. And God", "metric": "logit_diff", "token": " created", "counter_token": " made", "activation": "z", "by_position": true, "autorun": true}}')"
# Graph: the demo's attribution graph through its bundled transcoders, the most influential feature selected
prompt='In the beginning God created the'
shot graphs graph.png "$(session graph 0 0 '{"graphs": {"selected": "0_104_6"}}')"
ls -l "$out"
