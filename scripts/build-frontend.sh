#!/usr/bin/env bash
# Build the browser assets (htmx, CodeMirror, KaTeX) from the npm registry into static/dist.
set -eu
cd "$(dirname "$0")/../frontend"
if [ ! -f package.json ]; then exit 0; fi
stamp=node_modules/.quizsite-stamp
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
npm run --silent build
