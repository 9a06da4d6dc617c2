#!/usr/bin/env bash
# The layers point one way: every `#include "model/…"`, "views/…" or "app/…" in model/, views/ and app/
# names a folder the including file's layer may use. Fails (exit 1) listing each upward include as
# FILE:LINE: FOLDER may not include HEADER. Usage: tools/check_layers.sh [SOURCE_DIR] (ctest: check_layers).
#
#   model/core         core only (the compute kernels know nothing of text or models)
#   model/tokenizers   core
#   model/transformer  core, tokenizers (the model description, the forward pass, the activation cache)
#   model/formats      core, tokenizers, and of transformer only the model description the loaders fill
#                      (model.h, model_config.h, weights.h): never the forward pass
#   model/discovery    core, formats (header probes): names and stores of models; formats never include it
#   model/features     core, tokenizers, transformer, formats: sparse dictionaries (SAEs, transcoders), their
#                      files and where they hook into the forward pass
#   model/analysis     core, tokenizers, transformer, features
#   views              core, tokenizers, transformer, features, analysis (models come from the app, never by name or file)
#   app                everything
set -euo pipefail
root=${1:-$(dirname "$0")/..}
cd "$root"

# allowed LAYER: extended regular expressions of the headers a file in LAYER may include (besides its own folder)
allowed() {
  local core='model/core/' tok='model/tokenizers/' tf='model/transformer/' an='model/analysis/' ft='model/features/'
  case $1 in
    model/core) echo "^$core" ;;
    model/tokenizers) echo "^($core|$tok)" ;;
    model/transformer) echo "^($core|$tok|$tf)" ;;
    model/formats) echo "^($core|$tok|model/formats/|${tf}(model|model_config|weights)\\.h$)" ;;
    model/discovery) echo "^($core|model/formats/|model/discovery/)" ;;
    model/features) echo "^($core|$tok|$tf|model/formats/|$ft)" ;;
    model/analysis) echo "^($core|$tok|$tf|$ft|$an)" ;;
    views) echo "^($core|$tok|$tf|$ft|$an|views/)" ;;
    app) echo "^(model/|views/|app/)" ;;
  esac
}

status=0
checked=0
for layer in model/core model/tokenizers model/transformer model/formats model/discovery model/features model/analysis views app; do
  [ -d "$layer" ] || { echo "check_layers: no folder $layer in $(pwd)" >&2; exit 2; }
  # FILE:LINE:HEADER of every quoted include of the project's own folders (Qt, Eigen, fragments are skipped)
  hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(model|views|app)/' "$layer" --include='*.h' --include='*.cpp' |
         sed -E 's/^([^:]*:[0-9]*):.*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1:\2/' || true)
  [ -n "$hits" ] || continue
  checked=$((checked + $(wc -l <<<"$hits")))
  upward=$(awk -F: -v allowed="$(allowed "$layer")" -v layer="$layer" \
               '$3 !~ allowed { printf "%s:%s: %s may not include %s\n", $1, $2, layer, $3 }' <<<"$hits")
  if [ -n "$upward" ]; then
    echo "$upward" >&2
    status=1
  fi
done
if [ "$status" -eq 0 ]; then echo "check_layers: $checked includes of model/, views/ and app/, none upward"; fi
exit "$status"
