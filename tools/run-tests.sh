#!/usr/bin/env bash
# The whole test suite: set up, then unit, functional, pep8, the Watcher
# plugin's tests, the Nova-facing tests on the previous Nova release,
# the agent on a CAT-like compute host and the all-in-one cloud with the
# tempest plugin, through tox.
# Ends with one line "tests: N passed, M failed, K skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh || exit 1
log=$(mktemp)
python3 -m tox -e py3,functional,pep8,dist,watcher,nova-previous,host,cloud -- "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
passed=$(awk '/^ - Passed: /{s+=$3} END{print s+0}' "$log")
failed=$(awk '/^ - Failed: /{s+=$3} END{print s+0}' "$log")
skipped=$(awk '/^ - Skipped: /{s+=$3} END{print s+0}' "$log")
rm -f "$log"
echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
if [ "$rc" = 0 ] && [ "$passed" = 0 ]; then
    echo "no test ran" >&2
    exit 1
fi
exit "$rc"
