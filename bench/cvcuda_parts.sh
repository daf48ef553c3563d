#!/usr/bin/env bash
# CV-CUDA for the device machine, which cannot download it and takes at most 64 MiB a call:
# fetch the cvcuda-cu13 wheel here (128 MB), keep the Python 3.12 module and stripped
# libraries, compress them and split them into .cv1/part00 and .cv2/part01 (~54 MiB each,
# git-ignored). On the device, each part travels in its own call (the machine stays warm for
# 30 s between calls; /tmp survives), then one more call unpacks both into /tmp/site:
#   run(carry=[".cv1"]): mkdir -p /tmp/cvc && cp .cv1/part00 /tmp/cvc/
#   run(carry=[".cv2"]): cp .cv2/part01 /tmp/cvc/
#   run(carry=[".whl"]): cat /tmp/cvc/part0* | xz -d | tar xf - -C /tmp/site; ... bench/w1.py --peers cvcuda_ops,cvcuda_fused2
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${CVCUDA_VERSION:-0.19.0}"
work=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$work" "cvcuda-cu13==$VERSION"
mkdir "$work/pkg"
(cd "$work/pkg" && unzip -q "$work"/cvcuda_cu13-*.whl)
find "$work/pkg/cvcuda" -name '_cvcuda.cpython-*.so' ! -name '*cpython-312-*' -delete
rm -rf "$work"/pkg/*.dist-info "$work"/pkg/cvcuda/*.pyi
strip --strip-unneeded "$work"/pkg/cvcuda_cu13.libs/*.so*
tar cf - -C "$work/pkg" . | xz -T0 -6 > "$work/cvcuda.tar.xz"
split -n 2 -d "$work/cvcuda.tar.xz" "$work/part"
mkdir -p .cv1 .cv2
mv "$work/part00" .cv1/ && mv "$work/part01" .cv2/
for d in .cv1 .cv2; do grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude; done
rm -rf "$work"
ls -l .cv1 .cv2
