#!/usr/bin/env bash
# CI step: builds the Debian package (cpack -G DEB) from BUILD_DIR (default ./build, reused when
# tools/test.sh built it), installs it with apt like a user would (apt install ./attnscope_*.deb, which
# resolves the dependencies dpkg-shlibdeps declared), checks the installed files, runs
# /usr/bin/attnscope --version, a headless --dump-json on the demo model and --finetune-diff on the bundled
# demo-variant, and removes the package.
# Needs root or sudo. Usage: tools/test_package.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
APT=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq)
start=$(date +%s)

bash tools/install_deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target attnscope
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

for f in /usr/bin/attnscope /usr/share/applications/attnscope.desktop \
         /usr/share/icons/hicolor/scalable/apps/attnscope.svg /usr/share/mime/packages/attnscope.xml; do
  [ -e "$f" ] || { echo "missing after install: $f" >&2; exit 1; }
done
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
# the second bundled model (stitching and fine-tuning examples) is found by name from any folder
(cd "$work" && env -u DISPLAY -u QT_QPA_PLATFORM HOME="$work" /usr/bin/attnscope --model demo \
   --finetune-diff demo-variant --top 3 --dump-json variant.json)
for key in '"finetune_diff"' '"model_b":"demo-variant"' '"heads"' '"neurons"'; do
  grep -q "$key" "$work/variant.json" || { echo "variant.json lacks $key" >&2; exit 1; }
done
echo "demo-variant ok"
cleanup
trap 'rm -rf "$work"' EXIT
if dpkg-query -W -f='${Status}' attnscope 2>/dev/null | grep -q "install ok installed"; then
  echo "attnscope is still installed after purge" >&2; exit 1
fi
[ ! -e /usr/bin/attnscope ] || { echo "/usr/bin/attnscope left behind" >&2; exit 1; }
echo "package test passed in $(( $(date +%s) - start )) s"
