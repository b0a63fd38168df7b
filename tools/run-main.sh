#!/usr/bin/env bash
# The main job on its embedded defaults: set up, then tox -e main.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh
exec python3 -m tox -e main -- "$@"
