#!/usr/bin/env bash
# Fails when gen/ differs from what `buf generate` writes from proto/ now.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r proto buf.yaml buf.gen.yaml "$tmp/"
ln -s "$PWD/node_modules" "$tmp/node_modules"
(cd "$tmp" && PATH="$OLDPWD/node_modules/.bin:$PATH" buf generate)
if ! diff -r gen "$tmp/gen"; then
  echo "gen/ is stale: run 'npm run generate' and commit gen/" >&2
  exit 1
fi
echo "gen/ is up to date"
