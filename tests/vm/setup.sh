#!/bin/bash
# Prepares the qemu guest of the VM tests and caches it in CACHE_DIR:
#   version            "<package version> <kernel release>" chosen on the first run
#   kernel/vmlinuz     Debian's kernel (from linux-image-<release>, never installed)
#                      and its config
#   kernel/vmlinux     the same kernel uncompressed, for qemu's PVH boot (no xz
#                      decompressor, no real-mode set-up under TCG); absent when the
#                      image cannot be unpacked or has no PVH entry
#   kernel/root/       the few stock modules the guest needs, plus our own in extra/
#   initramfs.cpio.gz  static busybox, init, modules and their load order
#   stamp              hash of the inputs; when it matches, setup returns at once
#   logs/              apt and module build logs
#
# Usage: setup.sh CACHE_DIR
# Safe to run again and concurrently (flock on CACHE_DIR/.lock). Needs root (or
# password-less sudo) only when Debian packages are missing. Never touches /boot
# and never loads a module on the host.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:?usage: setup.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

exec 9>"$cache/.lock"
flock 9

inputs_hash=$(cat "$here/setup.sh" "$here/init" "$here"/patches/*.patch | sha256sum | cut -c1-32)
if [[ -f $cache/stamp && $(<"$cache/stamp") == "$inputs_hash" && -f $cache/initramfs.cpio.gz ]]; then
  exit 0
fi

log() { echo "vm-setup [${SECONDS}s] $*"; }
die() { echo "vm-setup: error: $*" >&2; exit 1; }
mkdir -p "$cache/logs"
rm -f "$cache/stamp"

export DEBIAN_FRONTEND=noninteractive
as_root() {
  if [[ $EUID -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    die "root is needed for: $*"
  fi
}
# Other apt users on the machine: wait for the dpkg lock instead of failing.
apt_opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=600)
apt_updated=0
apt_update() {
  [[ $apt_updated == 1 ]] && return 0
  log "apt-get update"
  as_root apt-get -q -o DPkg::Lock::Timeout=600 update >>"$cache/logs/apt.log" 2>&1 ||
    die "apt-get update failed (see $cache/logs/apt.log)"
  apt_updated=1
}
missing_packages() {  # arguments: name or name=version
  local p
  for p in "$@"; do
    dpkg-query -W -f='${db:Status-Status}\n' "${p%%=*}" 2>/dev/null | grep -qx installed ||
      echo "$p"
  done
}
apt_install() {
  local missing
  missing=$(missing_packages "$@")
  [[ -z $missing ]] && return 0
  log "apt-get install" $missing
  # shellcheck disable=SC2086
  if ! as_root apt-get install "${apt_opts[@]}" $missing >>"$cache/logs/apt.log" 2>&1; then
    apt_update
    # shellcheck disable=SC2086
    as_root apt-get install "${apt_opts[@]}" $missing >>"$cache/logs/apt.log" 2>&1 ||
      die "apt-get install $missing failed (see $cache/logs/apt.log)"
  fi
}

# 1. Host tools.
apt_install qemu-system-x86 busybox-static kmod cpio xz-utils patch build-essential

# 2. The kernel version, chosen once: whatever linux-image-amd64 depends on now.
if [[ ! -s $cache/version ]]; then
  show=$(apt-cache show --no-all-versions linux-image-amd64 2>/dev/null || true)
  if [[ -z $show ]]; then
    apt_update
    show=$(apt-cache show --no-all-versions linux-image-amd64)
  fi
  dep=$(sed -n 's/^Depends: .*\(linux-image-[^ ,]*-amd64\) (= \([^)]*\)).*/\1 \2/p' <<<"$show" | head -1)
  [[ -n $dep ]] || die "cannot read the dependency of linux-image-amd64"
  read -r image_pkg pkg_version <<<"$dep"
  echo "$pkg_version ${image_pkg#linux-image-}" >"$cache/version.new"
  mv "$cache/version.new" "$cache/version"
fi
read -r pkg_version kver <"$cache/version"
log "guest kernel $kver (package version $pkg_version)"

# 3. Headers for the out-of-tree build; they must be this exact version.
apt_install "linux-headers-$kver=$pkg_version"
headers=/usr/src/linux-headers-$kver
[[ -f $headers/Makefile ]] || die "$headers is missing"

apt_download() {  # package=version into the current directory
  local sandbox=()
  [[ $EUID -eq 0 ]] && sandbox=(-o APT::Sandbox::User=root)
  apt-get download -q "${sandbox[@]}" "$1" >>"$cache/logs/apt.log" 2>&1 && return 0
  apt_update
  apt-get download -q "${sandbox[@]}" "$1" >>"$cache/logs/apt.log" 2>&1 ||
    die "apt-get download $1 failed (see $cache/logs/apt.log)"
}

# 4. Kernel image and the stock modules the guest loads (closure by depmod).
stock_modules=(virtio_pci virtio_console 9pnet_virtio 9p overlay drm drm_kms_helper
               drm_shmem_helper vgem evdev uinput)
root=$cache/kernel/root
moddir=lib/modules/$kver
# A cache from before a module was added to the list lacks it: extract again.
missing_module=
if [[ -f $cache/kernel/.complete-$kver ]]; then
  for m in "${stock_modules[@]}"; do
    modprobe -d "$root" -S "$kver" --show-depends "$m" >/dev/null 2>&1 || missing_module=$m
  done
fi
if [[ ! -f $cache/kernel/vmlinuz || ! -f $cache/kernel/.complete-$kver || -n $missing_module ]]; then
  log "download linux-image-$kver"
  rm -rf "$cache/kernel" "$cache/tmp"
  mkdir -p "$cache/tmp" "$root/$moddir"
  (cd "$cache/tmp" && apt_download "linux-image-$kver=$pkg_version")
  dpkg-deb -x "$cache"/tmp/linux-image-*.deb "$cache/tmp/img"
  img=$cache/tmp/img
  cp "$img/boot/vmlinuz-$kver" "$cache/kernel/vmlinuz"
  cp "$img/boot/config-$kver" "$cache/kernel/config"
  cp "$img/$moddir"/modules.{builtin,builtin.modinfo,order} "$root/$moddir/"
  depmod -b "$img" "$kver"
  # --show-depends only prints the insmod lines; nothing is loaded on the host.
  for m in "${stock_modules[@]}"; do
    modprobe -d "$img" -S "$kver" --show-depends "$m"
  done | awk '$1 == "insmod" { print $2 }' | sort -u | while read -r ko; do
    rel=${ko#"$img"/}
    mkdir -p "$root/$(dirname "$rel")"
    cp "$ko" "$root/$rel"
  done
  rm -rf "$cache/tmp"
  touch "$cache/kernel/.complete-$kver"
fi

# 4b. The uncompressed kernel: qemu boots an ELF with a PVH entry note directly. Under TCG
#     that takes /bin/true in the guest from 11.0 s to 6.5 s (2026-11-27): the xz
#     decompressor and the real-mode set-up no longer run emulated. run-in-vm uses
#     vmlinuz when vmlinux is absent.
if [[ ! -f $cache/kernel/vmlinux || $cache/kernel/vmlinux -ot $cache/kernel/vmlinuz ]]; then
  rm -f "$cache/kernel/vmlinux"
  python3 - "$cache/kernel/vmlinuz" "$cache/kernel/vmlinux.new" <<'PY' || log "no vmlinux (see above): booting the compressed kernel"
import lzma, sys
data = open(sys.argv[1], 'rb').read()
at = data.find(b'\xfd7zXZ\x00')  # the payload of a CONFIG_KERNEL_XZ bzImage
if at < 0:
    sys.exit('vm-setup: the kernel image holds no xz payload')
elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[at:])
if elf[:4] != b'\x7fELF':
    sys.exit('vm-setup: the kernel payload is not an ELF image')
open(sys.argv[2], 'wb').write(elf)
PY
  # XEN_ELFNOTE_PHYS32_ENTRY (18): the PVH entry point qemu needs.
  if [[ -f $cache/kernel/vmlinux.new ]] &&
     readelf -n "$cache/kernel/vmlinux.new" | grep -q 'Xen .*(0x00000012)'; then
    mv "$cache/kernel/vmlinux.new" "$cache/kernel/vmlinux"
  else
    rm -f "$cache/kernel/vmlinux.new"
    log "the kernel has no PVH entry: booting the compressed kernel"
  fi
fi

# 5. vkms and sw_sync from Debian's linux-source-6.1 of the same version, only
#    the two directories needed, patched, built against the headers.
src=$cache/src
if [[ ! -f $src/.extracted-$pkg_version ]]; then
  log "download linux-source-6.1=$pkg_version"
  rm -rf "$src" "$cache/tmp"
  mkdir -p "$cache/tmp" "$src"
  (cd "$cache/tmp" && apt_download "linux-source-6.1=$pkg_version")
  dpkg-deb --fsys-tarfile "$cache"/tmp/linux-source-6.1_*.deb |
    tar -xO ./usr/src/linux-source-6.1.tar.xz |
    tar -xJ -C "$src" --strip-components=1 \
      linux-source-6.1/drivers/gpu/drm/vkms \
      linux-source-6.1/drivers/dma-buf/sw_sync.c \
      linux-source-6.1/drivers/dma-buf/sync_debug.c \
      linux-source-6.1/drivers/dma-buf/sync_debug.h \
      linux-source-6.1/drivers/dma-buf/sync_trace.h
  rm -rf "$cache/tmp"
  touch "$src/.extracted-$pkg_version"
fi
build=$cache/build
rm -rf "$build"
mkdir -p "$build"
cp -a "$src/drivers" "$build/"
for p in "$here"/patches/*.patch; do
  patch -s -p1 -d "$build" <"$p" || die "patch $(basename "$p") does not apply"
done
log "build vkms and sw_sync"
make -C "$headers" M="$build/drivers/gpu/drm/vkms" CONFIG_DRM_VKMS=m -j"$(nproc)" modules \
  >"$cache/logs/build-vkms.log" 2>&1 || die "vkms build failed (see $cache/logs/build-vkms.log)"
make -C "$headers" M="$build/drivers/dma-buf" -j"$(nproc)" modules \
  >"$cache/logs/build-sw_sync.log" 2>&1 || die "sw_sync build failed (see $cache/logs/build-sw_sync.log)"
rm -rf "${root:?}/$moddir/extra"
mkdir -p "$root/$moddir/extra"
cp "$build/drivers/gpu/drm/vkms/vkms.ko" "$build/drivers/dma-buf/sw_sync.ko" "$root/$moddir/extra/"
depmod -b "$root" "$kver"

# 6. Initramfs: busybox, init, the modules in dependency order with options.
log "build initramfs"
# No fbdev emulation: fbcon would otherwise own the CRTC between tests.
declare -A module_opts=([vkms]="enable_writeback=1 enable_overlay=1 enable_cursor=1"
                        [drm_kms_helper]="fbdev_emulation=0")
stage=$cache/initramfs.stage
rm -rf "$stage"
mkdir -p "$stage"/{bin,dev,proc,sys,mnt,newroot,modules}
cp /bin/busybox "$stage/bin/busybox"
file -L "$stage/bin/busybox" 2>/dev/null | grep -q dynamic && die "/bin/busybox is not static"
install -m 0755 "$here/init" "$stage/init"
for m in virtio_pci virtio_console 9pnet_virtio 9p overlay vkms vgem sw_sync evdev uinput; do
  modprobe -d "$root" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
  name=$(basename "$ko" .ko)
  cp "$ko" "$stage/modules/"
  echo "$name.ko ${module_opts[$name]:-}"
done >"$stage/modules/load-order"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -6) >"$cache/initramfs.cpio.gz.new"
mv "$cache/initramfs.cpio.gz.new" "$cache/initramfs.cpio.gz"
rm -rf "$stage"

echo "$inputs_hash" >"$cache/stamp"
log "done: $(tr '\n' ' ' <"$cache/version")initramfs $(du -h "$cache/initramfs.cpio.gz" | cut -f1)"
