#!/usr/bin/env bash
# Fails when a tracked file reads, links or points to something outside the repository: the project's working
# notes kept in a folder beside the clone (its vectors, notes, DESIGN.md, STYLE.md) or an absolute /work/ path of the
# machine it was written on. Tests must run, and docs must resolve, in a fresh clone with nothing beside it; copy
# what a test needs into its target (with source and licence) instead. `make test` runs this first.
# Usage: scripts/check-self-contained.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# The folder's name is put together here so that this file itself does not name it.
folder=shar"ed"
pattern='\.\./'"$folder"'([/`"'"'"' ]|$)|/work/|(^|[^[:alnum:]_.-])'"$folder"'/(vectors|notes|DESIGN\.md|STYLE\.md)'
self=scripts/check-self-contained.sh
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    hits=$(git grep -n -I -E "$pattern" -- . ":(exclude)$self" || true)
else
    # Not a git checkout (an exported tarball): scan the files instead, without build products.
    hits=$(grep -rnIE "$pattern" --exclude-dir=.build --exclude-dir='.build-*' --exclude-dir=.git . \
        | grep -v "^\./$self:" || true)
fi
if [[ -n $hits ]]; then
    echo "$hits" >&2
    echo "check-self-contained: the files above point outside the repository (a folder beside the clone, or /work/): copy what" \
        "they need into the repository, with its source and licence" >&2
    exit 1
fi
echo "check-self-contained: no tracked file points outside the repository"
