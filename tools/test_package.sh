#!/usr/bin/env bash
# CI step: checks `cmake --install` into a scratch prefix (the files, and that the installed program opens
# the bundled demo and demo-variant by name from any folder: both are inside the executable), then builds the
# Debian package (cpack -G DEB) from BUILD_DIR (default ./build, reused when tools/test.sh built it),
# installs it with apt like a user would (apt install ./attnscope_*.deb, which resolves the dependencies
# dpkg-shlibdeps declared), checks the installed files (exactly these), runs /usr/bin/attnscope --version, a
# headless --dump-json on the demo model and on demo-variant (other logits than the demo's), --finetune-diff
# and --stitch with demo-variant, a --screenshot of the Compare tab with demo-variant as the second model
# (the offscreen platform comes with the dependencies), and removes the package.
# Needs root or sudo. Usage: tools/test_package.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
APT=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq)
start=$(date +%s)

bash tools/install_deps.sh
source tools/ccache_env.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${ATTNSCOPE_LAUNCHER[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target attnscope

# the files `cmake --install` puts in place, and the models inside the program, used from another folder
installed="bin/attnscope share/applications/attnscope.desktop share/icons/hicolor/scalable/apps/attnscope.svg
share/mime/packages/attnscope.xml"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
got=$(cd "$prefix" && find . -type f | sed 's|^\./||' | sort)
if [ "$got" != "$(tr ' ' '\n' <<<"$installed" | sort)" ]; then
  echo "cmake --install put in place:" >&2; echo "$got" >&2; exit 1
fi
(cd "$prefix" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$prefix" ./bin/attnscope --model demo --finetune-diff demo-variant \
   --top 1 --dump-json finetune.json >/dev/null)
grep -q '"model_b":"demo-variant"' "$prefix/finetune.json" || { echo "cmake --install: no demo-variant in the program" >&2; exit 1; }
rm -rf "$prefix"
trap - EXIT
echo "cmake --install ok: $(tr '\n' ' ' <<<"$got")and demo-variant inside the program"

rm -f "$build"/attnscope_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/attnscope_*.deb)
echo "built $deb ($(du -h "$deb" | cut -f1))"
dpkg-deb -f "$deb" Package Version Architecture Depends

if dpkg-query -W -f='${Status}' attnscope 2>/dev/null | grep -q "install ok installed"; then
  echo "attnscope is already installed; refusing to replace it" >&2
  exit 1
fi
cleanup() { $SUDO "${APT[@]}" purge attnscope >/dev/null 2>&1 || true; }
trap cleanup EXIT
$SUDO "${APT[@]}" install "$(realpath "$deb")" >/dev/null

for f in $installed; do
  [ -e "/usr/$f" ] || { echo "missing after install: /usr/$f" >&2; exit 1; }
done
# ... and nothing else: the demo models travel inside the program, not as files
packaged=$(dpkg -L attnscope | while read -r f; do [ -f "$f" ] && echo "$f"; done | sort)
if [ "$packaged" != "$(tr ' ' '\n' <<<"$installed" | sed 's|^|/usr/|' | sort)" ]; then
  echo "the package installs:" >&2; echo "$packaged" >&2; exit 1
fi
# every shared library the binary needs resolves from a declared dependency
if ldd /usr/bin/attnscope | grep -q "not found"; then ldd /usr/bin/attnscope | grep "not found" >&2; exit 1; fi
# the desktop entry and the MIME database know the file types (the dpkg trigger updated the cache)
if command -v desktop-file-validate >/dev/null; then desktop-file-validate /usr/share/applications/attnscope.desktop; fi
grep -q "application/x-gguf" /usr/share/mime/globs2 || { echo "the MIME cache lacks application/x-gguf" >&2; exit 1; }
grep -q "application/x-safetensors" /usr/share/mime/globs2 || { echo "the MIME cache lacks application/x-safetensors" >&2; exit 1; }
# runs on any x86-64 CPU: no AVX outside the compute kernels chosen at run time
if command -v objdump >/dev/null && [ "$(uname -m)" = x86_64 ]; then bash tests/isa_containment.sh objdump /usr/bin/attnscope; fi

work=$(mktemp -d)
trap 'rm -rf "$work"; cleanup' EXIT
(cd "$work" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$work" /usr/bin/attnscope --version)
(cd "$work" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$work" /usr/bin/attnscope --model demo \
   --prompt "In the beginning God created the heaven and the earth." --dump-json demo.json --layer 1 --head 1)
for key in '"token_ids"' '"logits_last"' '"top_next_tokens"' '"pattern"'; do
  grep -q "$key" "$work/demo.json" || { echo "demo.json lacks $key" >&2; exit 1; }
done
echo "dump-json ok: $(du -h "$work/demo.json" | cut -f1) of JSON"
# the bundled dictionaries, and the corpus pass through Qt SQL's SQLite driver (a plugin: a declared dependency)
printf 'In the beginning God created the heaven and the earth.\nAnd God said, Let there be light.\n' > "$work/corpus.txt"
(cd "$work" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$work" /usr/bin/attnscope --model demo --sae resid-topk \
   --feature-contexts corpus.txt --contexts-db contexts.sqlite --dump-json contexts.json >/dev/null)
grep -q '"windows_done":1' "$work/contexts.json" || { echo "contexts.json lacks windows_done 1" >&2; exit 1; }
echo "features ok: the bundled SAE and a contexts database"
# the second bundled model (stitching and fine-tuning examples) is found by name from any folder
(cd "$work" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$work" /usr/bin/attnscope --model demo \
   --finetune-diff demo-variant --top 3 --dump-json variant.json)
for key in '"finetune_diff"' '"model_b":"demo-variant"' '"heads"' '"neurons"'; do
  grep -q "$key" "$work/variant.json" || { echo "variant.json lacks $key" >&2; exit 1; }
done
# demo-variant is the fine-tuned copy, not the demo again: the same prompt gives other last logits
(cd "$work" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$work" /usr/bin/attnscope --model demo-variant \
   --prompt "In the beginning God created the heaven and the earth." --dump-json variant-dump.json)
logits() { grep -o '"logits_last":\[[^]]*\]' "$1"; }
[ -n "$(logits "$work/variant-dump.json")" ] || { echo "variant-dump.json lacks logits_last" >&2; exit 1; }
if [ "$(logits "$work/demo.json")" = "$(logits "$work/variant-dump.json")" ]; then
  echo "demo-variant gives the demo's logits" >&2; exit 1
fi
(cd "$work" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$work" /usr/bin/attnscope --model demo --stitch demo-variant --layer 1 \
   --prompt "In the beginning God created the heaven and the earth." --dump-json stitch.json)
grep -q '"stitch"' "$work/stitch.json" || { echo "stitch.json lacks stitch" >&2; exit 1; }
# the window's code path: the Compare tab opens demo-variant as the second model (the session resolves the name)
cat > "$work/compare.attnscope" <<'JSON'
{"format": "attnscope-session", "version": 1, "model": "demo", "prompt": "In the beginning God created the heaven",
 "panels": {"compare-models": {"secondModel": "demo-variant"}}}
JSON
shot=$(cd "$work" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$work" /usr/bin/attnscope --screenshot compare-models \
         --out compare.png --session-file compare.attnscope 2>"$work/shot.err")
grep -q "(1600×1000, compare-models)" <<<"$shot" || { echo "screenshot: $shot" >&2; cat "$work/shot.err" >&2; exit 1; }
if grep -q "attnscope: warning" "$work/shot.err"; then cat "$work/shot.err" >&2; exit 1; fi
echo "demo-variant ok: its own logits, fine-tuning ranking, stitching, the Compare tab ($(du -h "$work/compare.png" | cut -f1) PNG)"
cleanup
trap 'rm -rf "$work"' EXIT
if dpkg-query -W -f='${Status}' attnscope 2>/dev/null | grep -q "install ok installed"; then
  echo "attnscope is still installed after purge" >&2; exit 1
fi
[ ! -e /usr/bin/attnscope ] || { echo "/usr/bin/attnscope left behind" >&2; exit 1; }
echo "package test passed in $(( $(date +%s) - start )) s"
