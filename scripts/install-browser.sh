#!/usr/bin/env bash
# Debian's chromium (and a CJK font, the notes are Chinese) for the Playwright tests (Playwright's own browser download cannot work here).
set -eu
if [ -x /usr/bin/chromium ] && fc-list 2>/dev/null | grep -qi wqy; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null
else
  echo "chromium is not installed and cannot be installed here: browser tests will be skipped" >&2
fi
