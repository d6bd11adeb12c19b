#!/usr/bin/env bash
# Release wheels: build the abi3 wheels and try each on its own architecture.
#
#   bash .ci/wheels.sh              build the manylinux wheels for x86_64 and aarch64 and the
#                                   win_amd64 one (with mingw) into dist/, install the x86_64 one
#                                   into a fresh virtual environment and the aarch64 one into an
#                                   arm64 Debian root (debootstrap, run under qemu-user-static),
#                                   and run .ci/smoke.py in each; the Windows wheel is checked for
#                                   its contents here and smoke-tested by the wheels workflow
#   bash .ci/wheels.sh build TARGET build one wheel (a Rust target triple) into dist/: what the
#                                   release workflow runs on every platform, macOS included
#
# Linux, as root (it installs Debian packages and enters a chroot); the Debian root and the
# build tools go to a temporary folder that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore DEBIAN_FRONTEND=noninteractive
REPO=$PWD
OUT="$REPO/dist"
SUITE=bookworm
MIRROR=http://deb.debian.org/debian

build() {  # the one maturin command every wheel comes from
    local target=$1 linux=()
    # zig links against glibc 2.17, so the Linux wheels are manylinux2014 on any build host
    [[ $target == *-linux-* ]] && linux=(--zig --compatibility manylinux2014)
    rustup target add "$target"
    # ${a[@]+...}: an empty array is an unbound variable to macOS's bash 3.2
    maturin build --release --locked --out "$OUT" --target "$target" ${linux[@]+"${linux[@]}"}
}

if [[ ${1:-} == build ]]; then
    build "$2"
    exit 0
fi

work=$(mktemp -d /tmp/kenning-wheels.XXXXXX)
root="$work/arm64"
# build tools at a fixed path, so that cargo's build cache (keyed on the linker's path) serves
# the next run
tools="$REPO/target/wheel-tools"
cleanup() {
    for mounted in "$root/dev" "$root/proc"; do
        mountpoint -q "$mounted" && umount "$mounted"
    done
    rm -rf "$work"
}
trap cleanup EXIT
times=()
timed() {  # timed NAME COMMAND...: runs it and keeps its wall time for the summary
    local name=$1 start=$SECONDS
    shift
    echo "== $name"
    "$@"
    times+=("$name: $((SECONDS - start)) s")
    echo "${times[-1]}"
}

tools() {
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends debootstrap qemu-user-static binfmt-support \
        gcc-mingw-w64-x86-64 >/dev/null
    [[ -x $tools/bin/maturin ]] || python3 -m venv "$tools"
    "$tools/bin/pip" install -q "maturin>=1.7,<2" ziglang
}

wheels() {
    rm -f "$OUT"/kenning-*-linux_*.whl "$OUT"/kenning-*-manylinux*.whl "$OUT"/kenning-*-win_*.whl
    PATH="$tools/bin:$PATH" build x86_64-unknown-linux-gnu
    PATH="$tools/bin:$PATH" build aarch64-unknown-linux-gnu
    PATH="$tools/bin:$PATH" build x86_64-pc-windows-gnu
    ls -l "$OUT"
    windows_contents "$OUT"/kenning-*-win_amd64.whl
}

windows_contents() {  # the Windows wheel holds the core's module and the embedded model
    local listing
    listing="$(python3 -m zipfile -l "$1")"
    for member in kenning/_core.pyd kenning/data/minilm-l6-int8.onnx \
        kenning/data/minilm-tokenizer.json; do
        grep -q "$member" <<<"$listing" || { echo "$1 lacks $member"; exit 1; }
    done
}

smoke_x86_64() {
    python3 -m venv "$work/x86_64"
    "$work/x86_64/bin/pip" install -q "$OUT"/kenning-*manylinux*x86_64.whl
    # from outside the checkout, so only the installed wheel can be imported
    (cd "$work" && "$work/x86_64/bin/python" "$REPO/.ci/smoke.py" --backend rust)
}

arm64_root() {
    # foreign binaries run through qemu-user-static's binfmt entry, which needs binfmt_misc
    mountpoint -q /proc/sys/fs/binfmt_misc ||
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    update-binfmts --enable qemu-aarch64
    debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv,ca-certificates \
        "$SUITE" "$root" "$MIRROR" >/dev/null
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # the root trusts what the host trusts (a proxy's own authority included), pip too
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
}

smoke_aarch64() {
    mkdir -p "$root/smoke"
    cp "$OUT"/kenning-*manylinux*aarch64.whl .ci/smoke.py tests/data/minilm_reference.json \
        "$root/smoke/"
    chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root \
        PIP_CERT=/etc/ssl/certs/ca-certificates.crt bash -euo pipefail -c '
        uname -m
        python3 -m venv /venv
        /venv/bin/pip install -q /smoke/kenning-*.whl
        cd /smoke && /venv/bin/python smoke.py --backend rust --reference minilm_reference.json'
}

timed "tools" tools
# the Debian root needs no wheel: it is made while they build
timed "arm64 Debian root (beside the builds)" arm64_root >"$work/root.log" 2>&1 &
root_pid=$!
timed "wheels" wheels
timed "x86_64 smoke" smoke_x86_64
wait "$root_pid" || { cat "$work/root.log"; exit 1; }
cat "$work/root.log"
times+=("$(tail -n 1 "$work/root.log")")
timed "aarch64 smoke (qemu)" smoke_aarch64
printf '%s\n' "== times" "${times[@]}"
