#!/usr/bin/env bash
# Fails when a tracked file is a binary or larger than 1 MB: a build output
# committed by mistake travels with every clone and goes stale.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "tracked file larger than 1 MB: $f ($size bytes)"
		bad=1
	fi
done < <(git ls-files -z)
# git's own binary detection: numstat prints "-	-" for a file it treats as binary.
# The documentation's PNG images are binary on purpose (the README's
# screenshot of the status page, made by storehttp/browser's test).
while IFS=$'\t' read -r added _ path; do
	if [ "$added" = "-" ] && [[ $path != docs/*.png ]]; then
		echo "tracked binary file: $path"
		bad=1
	fi
done < <(git diff --cached --numstat "$(git hash-object -t tree /dev/null)")
if [ "$bad" -ne 0 ]; then
	echo "remove these from git (git rm --cached) and ignore build outputs in .gitignore"
	exit 1
fi
