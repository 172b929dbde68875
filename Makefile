# make test: every test with the race detector, including the ZooKeeper
#            driver's against real 3.8 and 3.9 servers and the PostgreSQL
#            driver's against a real PostgreSQL server, which the tests start.
# make check: formatting, go vet and staticcheck (pinned).
# otelstore and examples/prometheus are modules of their own (OpenTelemetry
# needs a newer go line than the store's); both targets cover them, and
# check says when one needs `go mod tidy` after the store's requirements change.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GO_TEST_FLAGS ?=
NESTED := otelstore examples/prometheus

.PHONY: test check zookeeper postgres example bench

test: zookeeper postgres
	go test -race -count=1 -timeout 40m $(GO_TEST_FLAGS) ./...
	for m in $(NESTED); do (cd $$m && go test -race -count=1 -timeout 20m $(GO_TEST_FLAGS) ./...) || exit 1; done

# Installs ZooKeeper 3.8 and 3.9 for the tests when they are missing.
zookeeper:
	bash scripts/install-zookeeper.sh

# Installs PostgreSQL for the tests when it is missing.
postgres:
	bash scripts/install-postgres.sh

check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...
	go run $(STATICCHECK) ./...
	for m in $(NESTED); do (cd $$m && go mod tidy -diff && go vet ./... && go run $(STATICCHECK) ./...) || exit 1; done

example:
	go run ./examples/reserve

bench: zookeeper postgres
	go test -run '^$$' -bench . -benchtime 2s ./...
