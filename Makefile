# make test: every test with the race detector, including the ZooKeeper
#            driver's against real 3.8 and 3.9 servers and the PostgreSQL
#            driver's against a real PostgreSQL server and the MySQL driver's
#            against a real MariaDB server, which the tests start, and the
#            status page's test in a real Chromium, which it installs.
# make check: no tracked binaries or files over 1 MB, formatting, go vet,
#             staticcheck (pinned), and the API against the last release's.
# otelstore, examples/prometheus, drivers/etcd, cmd/storectl and tools are modules of their own
# (OpenTelemetry needs a newer go line than the store's; etcd brings gRPC, and storectl
# imports every driver, etcd's included); both targets cover them, and
# check says when one needs `go mod tidy` after the store's requirements change.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GO_TEST_FLAGS ?=
NESTED := otelstore examples/prometheus drivers/etcd cmd/storectl tools storehttp/browser

.PHONY: test check zookeeper postgres etcd mariadb sqlite3 chromium example bench sizing histories mutants mutants-memory mutants-sqlstore mutants-etcd mutants-zookeeper release release-test

# The parts of make test run at once, as the tests mostly wait on servers
# and timers: the root module without the ZooKeeper driver, the ZooKeeper
# driver once per version (COSID_ZK_VERSIONS picks it) in two halves, its
# lock tests (TestLock...) and the rest, and each nested module. A part's
# output is printed whole when it ends, and make names a part that failed
# (test-zk/3.9/locks, test-mod/drivers/etcd); the others still run to the
# end. make test-zk/3.9 runs both halves of one version. TEST_P is go
# test's -p within a part; GO_TEST_FLAGS come last, so a -run there wins.
ZK_VERSIONS := 3.8 3.9
ZK_LOCK_PARTS := $(foreach v,$(ZK_VERSIONS),test-zk/$(v)/locks)
ZK_REST_PARTS := $(foreach v,$(ZK_VERSIONS),test-zk/$(v)/rest)
MOD_PARTS := $(addprefix test-mod/,$(NESTED))
TEST_PARTS := test-root $(ZK_LOCK_PARTS) $(ZK_REST_PARTS) $(MOD_PARTS)
TEST_P ?= 4
GO_TEST := go test -race -count=1 -p $(TEST_P)

.PHONY: $(TEST_PARTS) $(addprefix test-zk/,$(ZK_VERSIONS))

test: zookeeper postgres etcd mariadb sqlite3 chromium
	@$(MAKE) --no-print-directory -k -j $(words $(TEST_PARTS)) --output-sync=target $(TEST_PARTS)

test-root:
	pkgs=$$(go list ./...) && $(GO_TEST) -timeout 40m $(GO_TEST_FLAGS) $$(echo "$$pkgs" | grep -v '/drivers/zookeeper$$')

$(ZK_LOCK_PARTS): test-zk/%/locks:
	COSID_ZK_VERSIONS=$* $(GO_TEST) -timeout 40m -run '^TestLock' $(GO_TEST_FLAGS) ./drivers/zookeeper

$(ZK_REST_PARTS): test-zk/%/rest:
	COSID_ZK_VERSIONS=$* $(GO_TEST) -timeout 40m -skip '^TestLock' $(GO_TEST_FLAGS) ./drivers/zookeeper

$(addprefix test-zk/,$(ZK_VERSIONS)): test-zk/%: test-zk/%/locks test-zk/%/rest

$(MOD_PARTS): test-mod/%:
	cd $* && $(GO_TEST) -timeout 20m $(GO_TEST_FLAGS) ./...

# Installs ZooKeeper 3.8 and 3.9 for the tests when they are missing.
zookeeper:
	bash scripts/install-zookeeper.sh

# Installs Chromium (Debian's package) for the status page's browser test
# (storehttp/browser) when it is missing.
chromium:
	bash scripts/install-chromium.sh

# Builds the etcd server for the etcd driver's tests when it is missing.
etcd:
	bash scripts/install-etcd.sh

# Installs PostgreSQL for the tests when it is missing.
postgres:
	bash scripts/install-postgres.sh

# Installs MariaDB for the MySQL driver's tests when it is missing (never
# starting the system service: the tests run their own servers).
mariadb:
	bash scripts/install-mariadb.sh

# Installs the sqlite3 shell, which a documented SQLite procedure runs
# (docs/operations.md, a partial restore), when it is missing.
sqlite3:
	bash scripts/install-sqlite3.sh

check:
	bash scripts/check-tree.sh
	bash scripts/check-commits.sh
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...
	go run $(STATICCHECK) ./...
	for m in $(NESTED); do (cd $$m && go mod tidy -diff && go vet ./... && go run $(STATICCHECK) ./...) || exit 1; done
	cd tools && go run ./release api-check

example:
	go run ./examples/reserve

bench: zookeeper postgres
	go test -run '^$$' -bench . -benchtime 2s ./...

# The TCK's random histories with a fixed seed, then three random ones,
# each printed; RAPID_SEED=n replays one.
HISTORY_PKGS := ./drivers/memory ./drivers/sqlite
histories:
	for seed in 1 $$(od -An -N4 -tu4 /dev/urandom) $$(od -An -N4 -tu4 /dev/urandom) $$(od -An -N4 -tu4 /dev/urandom); do \
		echo "histories: RAPID_SEED=$$seed"; \
		RAPID_SEED=$$seed go test -count=1 -run 'TestTCK/Explore/Histories' $(HISTORY_PKGS) || exit 1; \
	done

# Mutation testing (not in CI: it takes a while, so it runs niced): each
# target changes one operator or constant of its files at a time and judges
# the mutant by a driver's TCK on a real server. It prints each mutant the
# TCK misses and the scores without and with its Explore checks; the
# equivalent mutants are listed, with why, in internal/testing/mutants/equivalent.go.
# MUTANTS_FLAGS go to every run: -sample 60 judges 60 mutants drawn at
# random (-seed n draws the same ones again), -j 1 one at a time.
MUTANTS := nice -n 15 go run ./internal/testing/mutants $(MUTANTS_FLAGS)
mutants: mutants-memory mutants-sqlstore mutants-etcd mutants-zookeeper

# The slot rules and the memory driver, judged by the memory driver's TCK.
mutants-memory:
	$(MUTANTS) -pkg ./drivers/memory driver/slot.go drivers/memory/ranges.go \
		drivers/memory/slots.go drivers/memory/locks.go drivers/memory/purge.go drivers/memory/memory.go

# The shared SQL layer, judged by the SQLite driver's TCK (then the SQLite
# driver's and the SQL layer's own tests, for a mutant the TCK misses).
# SQL_JUDGE=./drivers/postgres judges it by PostgreSQL's instead, which
# reaches what SQLite has not: pool events, row locks, lock tables.
SQL_JUDGE ?= ./drivers/sqlite
mutants-sqlstore:
	$(MUTANTS) -pkg $(SQL_JUDGE) -timeout 90s -own-pkgs ./internal/sqlstore \
		$(filter-out %_test.go,$(wildcard internal/sqlstore/*.go))

# The etcd driver's slots and ranges, judged by its TCK's sections that
# reach them (not the locks) on the test server.
MUTANTS_TCK := ^(Ranges|Slots|Purge|History|Restart|Operator|Interleave)$$
mutants-etcd:
	$(MUTANTS) -C drivers/etcd -pkg . -timeout 120s -run '^TestTCK$$/$(MUTANTS_TCK)' \
		-own-skip '^(TestTCK|TestBroken.*|TestLock.*|.*Lock.*)$$' \
		$(filter-out %_test.go,$(wildcard drivers/etcd/slot_*.go drivers/etcd/range_*.go))

# The ZooKeeper driver's slots and ranges, judged the same way on one
# server version (3.9).
mutants-zookeeper:
	COSID_ZK_VERSIONS=3.9 $(MUTANTS) -pkg ./drivers/zookeeper -timeout 180s \
		-run '^TestTCK$$/^3\.9$$/$(MUTANTS_TCK)' -before-skip '^TestTCK$$/.*/^Explore$$' \
		-explore '^TestTCK$$/^3\.9$$/^Explore$$' -own-skip '^(TestTCK|TestBroken.*|TestLock.*|.*Lock.*)$$' \
		$(filter-out %_test.go,$(wildcard drivers/zookeeper/slot_*.go drivers/zookeeper/range_*.go))

# Tags every module at VERSION (v0.1.0, drivers/etcd/v0.1.0, ...): one release
# commit without the nested modules' replace lines, checked as a user's go
# command sees it, then one commit back to development. CONTRIBUTING.md says
# when and how.
release:
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=vX.Y.Z"; exit 1; }
	cd tools && go run ./release tag $(VERSION)

# The release as a user meets it, from a scratch clone (nothing here changes).
release-test:
	bash scripts/release-test.sh

# Measures every driver on this machine in one run (Next latency, calls/s
# of 64 callers on one key and on 64 keys, Segment and Snowflake IDs/s,
# a fleet restart) and prints the markdown table of docs/sizing.md.
sizing: zookeeper postgres etcd mariadb
	bash scripts/sizing.sh
