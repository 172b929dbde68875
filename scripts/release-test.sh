#!/usr/bin/env bash
# The release as a user meets it: a scratch clone of this repository is
# released with the project's release command, the tagged modules become a
# file-based module proxy, and a program outside the repository, with no
# replace line and no network proxy, gets the store and the etcd driver at
# that version and builds; storectl installs from it with go install and
# names the version. Nothing here touches this checkout or its tags.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
version=${RELEASE_TEST_VERSION:-v0.1.0}
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cache=$(go env GOMODCACHE)

git clone -q "$repo" "$tmp/repo"
cd "$tmp/repo"
git config user.name "release test"
git config user.email "release-test@localhost"
# As a release manager does: the Unreleased entries become the version's.
sed -i "0,/^## \[Unreleased\]\$/s//## [Unreleased]\n\n## [${version#v}] - $(date -u +%F)/" CHANGELOG.md
git commit -q -am "Changelog: $version"
make -s release VERSION="$version"
(cd tools && go run ./release proxy "$version" "$tmp/proxy")
# The release keeps its API (api/$version.txt); make check's API check
# passes on it, and fails naming a declaration the release had and the
# tree lacks (as after a function was removed).
test -s "api/$version.txt"
(cd tools && go run ./release api-check)
echo "pkg github.com/cosid-go/store, func Gone() error" >>"api/$version.txt"
if (cd tools && go run ./release api-check) >"$tmp/api.out" 2>&1; then
	echo "release test: the API check passed with a released function gone"
	exit 1
fi
grep -qF 'removed or changed: pkg github.com/cosid-go/store, func Gone() error' "$tmp/api.out"
git checkout -q "api/$version.txt"

# Outside the repository: no workspace, no replace, only the release's
# modules and what the local module cache already holds (no network).
export GOWORK=off GOSUMDB=off GOFLAGS="-modcacherw -trimpath"
export GOPROXY="file://$tmp/proxy,file://$cache/cache/download"
export GOMODCACHE="$tmp/modcache" GOBIN="$tmp/bin"
mkdir "$tmp/app"
cd "$tmp/app"
cp "$repo/scripts/release-test/main.go.txt" main.go
go mod init -q example.com/app 2>/dev/null || go mod init example.com/app
go get "github.com/cosid-go/store@$version" "github.com/cosid-go/store/drivers/etcd@$version"
# (go mod tidy would also want the tests' modules of every dependency,
# which the module cache need not hold: go get adds what the build needs.)
go get .
if grep -q replace go.mod; then echo "release test: the app's go.mod has a replace line"; exit 1; fi
go build -o app .
out=$(./app "$tmp")
echo "app: $out"
case "$out" in
"drivers etcd,sqlite; orders [0,10)") ;;
*) echo "release test: the app printed $out"; exit 1 ;;
esac

go install "github.com/cosid-go/store/cmd/storectl@$version"
out=$("$tmp/bin/storectl" version)
echo "$out"
for want in "storectl $version" "  github.com/cosid-go/store $version" "  github.com/cosid-go/store/drivers/etcd $version"; do
	if ! grep -qxF -- "$want" <<<"$out"; then
		echo "release test: storectl version printed no line \"$want\""
		exit 1
	fi
done
echo "release test: $version works from outside the repository"
