#!/usr/bin/env bash
# Render a report.html written by `mmaemu report` in headless Chromium and save a PNG screenshot.
#
#   scripts/screenshot-report.sh REPORT_DIR_OR_HTML [OUT.png] [HEIGHT]
#
# Opt-in: needs a Chromium (Debian: `apt-get install chromium`; or set CHROMIUM=/path/to/chrome).
# Nothing in the build or in CI depends on it. Exits 2 without a browser, 1 if no PNG was produced.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: $0 REPORT_DIR_OR_HTML [OUT.png] [HEIGHT]" >&2
    exit 2
fi
src=$1
[[ -d $src ]] && src=$src/report.html
if [[ ! -f $src ]]; then
    echo "$0: no such file: $src" >&2
    exit 2
fi
out=${2:-$(dirname "$src")/report.png}
height=${3:-4000}
browser=${CHROMIUM:-}
if [[ -z $browser ]]; then
    for b in chromium chromium-browser google-chrome google-chrome-stable; do
        if command -v "$b" >/dev/null 2>&1; then
            browser=$b
            break
        fi
    done
fi
if [[ -z $browser ]]; then
    echo "$0: no Chromium found (apt-get install chromium, or set CHROMIUM)" >&2
    exit 2
fi
abs=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
rm -f "$out_abs"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
    --window-size=1200,"$height" --screenshot="$out_abs" "file://$abs" >/dev/null 2>&1 || true
if [[ ! -s $out_abs ]]; then
    echo "$0: $browser produced no screenshot" >&2
    exit 1
fi
echo "$out_abs"
