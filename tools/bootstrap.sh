#!/usr/bin/env bash
# Install what the two README commands need on a fresh Debian machine:
# tox and bindep from PyPI, then the Debian packages bindep.txt lists.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

python3 -m pip install --quiet --disable-pip-version-check 'tox>=4.6' bindep 2>&1 \
    | grep -v -e '^WARNING: Location' -e 'Running pip as the' || true

missing=$(bindep -b test || true)
if [ -n "$missing" ]; then
    echo "Installing Debian packages: $missing"
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# libvirtd and QEMU for tests/host, Apache and sudo for the all-in-one
# cloud, without what they recommend.
missing=$(bindep -b host cloud || true)
if [ -n "$missing" ]; then
    echo "Installing Debian packages (no recommends): $missing"
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
        --no-install-recommends $missing >/dev/null
fi

# The agent's messaging tests use the RabbitMQ broker on 127.0.0.1:5672
# (guest/guest); start it when the machine has it stopped.
if ! (echo > /dev/tcp/127.0.0.1/5672) 2>/dev/null; then
    echo "Starting RabbitMQ"
    $SUDO rabbitmq-server -detached || true
    for _ in $(seq 60); do
        (echo > /dev/tcp/127.0.0.1/5672) 2>/dev/null && break
        sleep 1
    done
fi
