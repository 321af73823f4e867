#!/usr/bin/env bash
# The Debian packages that neither cargo nor pip can install and that the
# build or the tests use, in one list for `make setup` and .ci/run.
#
#   tools/system-packages.sh install   (make setup) install what is missing
#       when run as root where apt-get exists; otherwise print one line naming
#       what is missing and how to install it. Never fails: the tests that need
#       a missing package are skipped, saying why.
#   tools/system-packages.sh ci        (.ci/run) the same, but fail if anything
#       is still missing, so that CI never skips a test for want of a package.
#   tools/system-packages.sh report    only print the line, install nothing.
#
# Prints nothing and changes nothing when everything is there, so that
# `make setup` still does nothing when nothing changed.
set -uo pipefail

mode=${1:-install}
case $mode in
  install | ci | report) ;;
  *) echo "usage: $0 [install|ci|report]" >&2; exit 2 ;;
esac

# ip and ethtool live in /usr/sbin, which a user's PATH may lack.
have() { command -v "$1" >/dev/null 2>&1 || [[ -x /usr/sbin/$1 || -x /sbin/$1 ]]; }

missing=()
# The build: Debian splits venv/ensurepip out of python3; cargo links with cc.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
have make || missing+=(make)
have cc || missing+=(gcc libc6-dev)
# Real-kernel tests: network namespaces and veth (iproute2), coalescing
# (ethtool), and Debian's memcached as the unmodified epoll server.
have ip || missing+=(iproute2)
have ethtool || missing+=(ethtool)
have memcached || missing+=(memcached)
# The HTML report is checked in headless Chromium through the system
# chromedriver (tests/python/test_report_browser.py).
have chromium || missing+=(chromium)
have chromedriver || missing+=(chromium-driver)

((${#missing[@]})) || exit 0

install_line="apt-get install --no-install-recommends ${missing[*]}"
if [[ $mode != report && $(id -u) == 0 ]] && have apt-get; then
  echo "system-packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    exit 0
  fi
  echo "system-packages: could not install ${missing[*]} (apt-get failed above); the tests that need them will be skipped"
else
  why="not root"
  [[ $(id -u) == 0 ]] && why="no apt-get"
  [[ $mode == report ]] && why="report only"
  echo "system-packages: not installed: ${missing[*]} ($why); the tests that need them will be skipped; to install, as root: $install_line"
fi
[[ $mode == ci ]] && exit 1
exit 0
