#!/bin/sh
# Writes BuildCommit.swift into OUT_DIR: the git commit of the checkout at ROOT, with "-dirty" when tracked
# files differ from it, or "unknown" when ROOT is not a git checkout of its own (a source tarball, even one
# unpacked inside another repository) or git is not installed. Run before every build by the BuildCommit
# plugin; the file is replaced only when its text changes, so an unchanged commit recompiles nothing.
# usage: build-commit.sh ROOT OUT_DIR
set -u
root=$1
out=$2
commit=unknown
if command -v git >/dev/null 2>&1; then
  top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null || true)
  if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$(cd "$root" && pwd -P)" ]; then
    head=$(git -C "$root" rev-parse --verify -q HEAD 2>/dev/null || true)
    if [ -n "$head" ]; then
      commit=$head
      git -C "$root" diff --quiet HEAD -- 2>/dev/null || commit="$head-dirty"
    fi
  fi
fi
mkdir -p "$out"
tmp="$out/.BuildCommit.swift.$$"
printf '// Written at build time by scripts/build-commit.sh; not in the repository.\nlet buildCommit = "%s"\n' "$commit" >"$tmp"
if cmp -s "$tmp" "$out/BuildCommit.swift"; then rm -f "$tmp"; else mv "$tmp" "$out/BuildCommit.swift"; fi
