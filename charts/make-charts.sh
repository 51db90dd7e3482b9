#!/usr/bin/env bash
# Draws the PNG charts from the benchmark harness JSON.
#   bash charts/make-charts.sh [results-dir] [out-dir]     (defaults: benchmarks/results, charts)
# Relative paths are taken from the current directory. Builds charts/Dse.Charts (Release) first; everything it
# needs restores from NuGet (ScottPlot brings SkiaSharp's linux-x64 native assets: no system libraries).
# Exit 0: every chart whose input exists was drawn (missing inputs are skipped with a note);
# 1: a results file was malformed (the message names the file and field); 2: bad usage or build failure.
set -euo pipefail

if [[ $# -gt 2 || ${1:-} == -h || ${1:-} == --help ]]; then
  echo "usage: bash charts/make-charts.sh [results-dir (default benchmarks/results)] [out-dir (default charts)]" >&2
  [[ $# -gt 2 ]] && exit 2 || exit 0
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
results=$(realpath -m "${1:-$root/benchmarks/results}")
out=$(realpath -m "${2:-$root/charts}")

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

project="$root/charts/Dse.Charts/Dse.Charts.csproj"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! dotnet build "$project" -c Release --nologo -v quiet >"$log" 2>&1; then
  cat "$log" >&2
  echo "error: building $project failed" >&2
  exit 2
fi

exec dotnet "$root/charts/Dse.Charts/bin/Release/net10.0/Dse.Charts.dll" "$results" "$out"
