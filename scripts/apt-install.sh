#!/usr/bin/env bash
# Install Debian packages for the test scripts: `scripts/apt-install.sh PKG...` runs
# apt-get update and a quiet, non-interactive install, through sudo unless already root.
# With no package names it does nothing. The callers decide what is missing.
set -euo pipefail
[ $# -gt 0 ] || exit 0
echo "== apt-get install $*"
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
