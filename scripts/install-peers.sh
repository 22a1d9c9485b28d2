#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# .venv-peers/: TensorFlow 2.21 and the other peers and oracles (scripts/install-venv.sh).
exec "$(dirname "${BASH_SOURCE[0]}")/install-venv.sh" peers "$@"
