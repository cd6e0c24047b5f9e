#!/usr/bin/env bash
# Builds the Debian package from the build tree (cpack -G DEB, cmake/Packaging.cmake) and checks
# what someone installing it gets:
#  - control fields: name, version, architecture, maintainer, section, description, and Depends
#    naming the runtime libraries' packages, each installed here at a version that satisfies it
#    (this machine built and runs the binary, so that is what `apt install ./nanscope_*.deb` needs);
#  - contents: the binary, the desktop entry, its icon, the MIME type for run.h5, the bash
#    completion and the Python recorder, under /usr, owned by root;
#  - the unpacked binary runs outside the build tree (`--version`) and has no RUNPATH into it;
#  - the desktop entry opens a run.h5 or a folder (%f, MimeType) without claiming JSON, names an
#    icon the package has, and passes desktop-file-validate (skipped, saying so, when absent);
#  - the MIME XML compiles with update-mime-database and maps run.h5 to the type the entry lists.
# usage: check_deb_package.sh CPACK CPACK_CONFIG WORK_DIR VERSION
set -uo pipefail # not -e: every check runs and reports, and the exit status counts the failures
cpack=$1
cpack_config=$2
work=$3
version=$4

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
note() { echo "-- $*"; }

command -v dpkg-deb >/dev/null || { echo "FAIL: dpkg-deb not found (package dpkg): this check needs Debian's tools"; exit 1; }

rm -rf "$work" && mkdir -p "$work"
start=$SECONDS
if ! "$cpack" -G DEB --config "$cpack_config" -B "$work" >"$work/cpack.log" 2>&1; then
  tail -n 30 "$work/cpack.log"
  echo "FAIL: cpack could not build the package (whole log: $work/cpack.log)"
  exit 1
fi
shopt -s nullglob
debs=("$work"/nanscope_"$version"_*.deb)
((${#debs[@]} == 1)) || { ls "$work"; echo "FAIL: expected one nanscope_${version}_*.deb in $work"; exit 1; }
deb=${debs[0]}
note "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) in $((SECONDS - start)) s"

# --- control fields
field() { dpkg-deb --field "$deb" "$1"; }
[[ $(field Package) == nanscope ]] || fail "Package is '$(field Package)', not nanscope"
[[ $(field Version) == "$version" ]] || fail "Version is '$(field Version)', not $version"
[[ $(field Architecture) == "$(dpkg --print-architecture)" ]] || fail "Architecture is '$(field Architecture)'"
for name in Maintainer Section Description; do
  [[ -n $(field "$name") ]] || fail "the $name field is empty"
done
depends=$(field Depends)
note "Depends: $depends"

# Each dependency is "name [(op version)]", or alternatives joined by '|'; one alternative installed
# here at a satisfying version is enough.
satisfied_here()
{
  local alternative name op wanted installed
  IFS='|' read -r -a alternatives <<<"$1"
  for alternative in "${alternatives[@]}"; do
    read -r name op wanted <<<"$(sed -E 's/[()]/ /g' <<<"$alternative")"
    name=${name%%:*}
    installed=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null | sed -n 's/^install ok installed //p')
    [[ -n $installed ]] || continue
    [[ -z $op ]] && return 0
    dpkg --compare-versions "$installed" "$op" "$wanted" && return 0
  done
  return 1
}
declared=()
IFS=',' read -r -a dependencies <<<"$depends"
for dependency in "${dependencies[@]}"; do
  dependency=$(xargs <<<"$dependency")
  satisfied_here "$dependency" || fail "dependency '$dependency' is not installed here at a version that satisfies it"
  for alternative in ${dependency//|/ }; do
    [[ $alternative == [a-z0-9]* ]] && declared+=("${alternative%%:*}")
  done
done
# The libraries the binary cannot start without, and libprotobuf32 for the TensorBoard reader.
for package in libqt6core6 libqt6gui6 libqt6widgets6 libqt6svg6 libqcustomplot2.1-qt6 \
               libhdf5-103-1 zlib1g libprotobuf32 libstdc++6 libc6; do
  [[ " ${declared[*]} " == *" $package "* ]] || fail "Depends does not name $package"
done
[[ " ${declared[*]} " == *" libasan"* ]] && fail "Depends names a sanitizer runtime: the package was built from a sanitizer build"

# --- contents
contents=$(dpkg-deb --contents "$deb")
paths=$(awk '{print $6}' <<<"$contents")
for path in ./usr/bin/nanscope \
            ./usr/bin/nanscope-torch \
            ./usr/share/applications/nanscope.desktop \
            ./usr/share/icons/hicolor/scalable/apps/nanscope.svg \
            ./usr/share/mime/packages/nanscope.xml \
            ./usr/share/bash-completion/completions/nanscope \
            ./usr/share/nanscope/python/nanscope_recorder/__init__.py \
            ./usr/share/nanscope/python/nanscope_recorder/recorder.py \
            ./usr/share/nanscope/python/nanscope_recorder/capture_policy.json \
            ./usr/lib/python3/dist-packages/nanscope-recorder.pth \
            ./usr/share/doc/nanscope/run-format.md \
            ./usr/include/nanscope/core/torch/Guard.h \
            ./usr/include/nanscope/RunFormatTable.h \
            ./usr/lib/libnanscope_torch.a \
            ./usr/lib/libnanscope_core.a \
            ./usr/lib/cmake/nanscope/nanscopeConfig.cmake \
            ./usr/lib/cmake/nanscope/nanscopeConfigVersion.cmake; do
  grep -qxF "$path" <<<"$paths" || fail "the package lacks $path"
done
outside=$(grep -v -e '^\./$' -e '^\./usr/' <<<"$paths")
[[ -z $outside ]] || fail "the package installs outside /usr: $outside"
grep -q '__pycache__\|\.pyc$' <<<"$paths" && fail "the package carries Python byte-code caches"
not_root=$(awk '$2 != "root/root" {print $6}' <<<"$contents")
[[ -z $not_root ]] || fail "files not owned by root: $not_root"
grep -E ' \./usr/bin/nanscope$' <<<"$contents" | grep -q '^-rwxr-xr-x' || fail "usr/bin/nanscope is not mode 0755"
grep -E ' \./usr/bin/nanscope-torch$' <<<"$contents" | grep -q '^-rwxr-xr-x' || fail "usr/bin/nanscope-torch is not mode 0755"

root="$work/unpacked"
dpkg-deb --extract "$deb" "$root"

# --- the binary, away from the build tree
runpath=$(readelf -d "$root/usr/bin/nanscope" 2>/dev/null | grep -E 'RPATH|RUNPATH')
[[ -z $runpath ]] || fail "the installed binary keeps a library path of the build: $runpath"
said=$(env -u DISPLAY -u WAYLAND_DISPLAY "$root/usr/bin/nanscope" --version 2>&1)
[[ $said == "nanscope $version" ]] || fail "the packaged 'nanscope --version' says '$said', not 'nanscope $version'"
# nanscope never loads LibTorch; the installed nanscope-torch beside it runs the models (issue 54).
readelf -d "$root/usr/bin/nanscope" | grep -qE '\[lib(torch|c10)' && fail "the packaged nanscope links LibTorch"
usage=$(env -u DISPLAY -u WAYLAND_DISPLAY "$root/usr/bin/nanscope" replay --help 2>&1 | head -1)
[[ $usage == "Usage: nanscope replay [options]"* ]] || fail "the packaged 'nanscope replay --help' (done by nanscope-torch) says '$usage'"

# --- the desktop entry
desktop="$root/usr/share/applications/nanscope.desktop"
entry() { sed -n "s/^$1=//p" "$desktop"; }
[[ $(entry Exec) =~ ^nanscope\ %f$ ]] || fail "Exec is '$(entry Exec)': it should be 'nanscope %f' (one run.h5 or folder)"
icon=$(entry Icon)
[[ -f "$root/usr/share/icons/hicolor/scalable/apps/$icon.svg" ]] || fail "Icon '$icon' is not an icon the package installs"
mime_types=";$(entry MimeType)"
for type in application/x-nanscope-run inode/directory; do
  [[ $mime_types == *";$type;"* ]] || fail "MimeType does not list $type"
done
[[ $mime_types == *application/json* ]] && fail "MimeType claims application/json: nanscope is no JSON viewer"
[[ -n $(entry Categories) ]] || fail "the desktop entry has no Categories"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$desktop" || fail "desktop-file-validate rejects nanscope.desktop"
else
  note "desktop-file-validate not found (package desktop-file-utils): desktop entry validation skipped"
fi

# --- the MIME type
if command -v update-mime-database >/dev/null; then
  mime="$work/mime"
  mkdir -p "$mime/packages"
  cp "$root/usr/share/mime/packages/nanscope.xml" "$mime/packages/"
  if update-mime-database "$mime" >/dev/null 2>"$work/mime.log"; then
    grep -qx '[0-9]*:application/x-nanscope-run:run.h5' "$mime/globs2" ||
      fail "the MIME database does not map run.h5 to application/x-nanscope-run"
    grep -q '^application/x-nanscope-run application/x-hdf$' "$mime/subclasses" ||
      fail "application/x-nanscope-run is not a sub-class of application/x-hdf"
  else
    fail "update-mime-database rejects nanscope.xml: $(cat "$work/mime.log")"
  fi
else
  note "update-mime-database not found (package shared-mime-info): MIME XML check skipped"
fi

# --- the completion parses
bash -n "$root/usr/share/bash-completion/completions/nanscope" || fail "the bash completion is not valid bash"

note "checked in $((SECONDS - start)) s"
if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "the Debian package holds what a desktop install needs"
