# stakegraph's build, test and run targets. `make help` lists them.
#
# PostgreSQL: the targets that need it install Debian's postgresql package
# when no PostgreSQL server programs are found. Nothing is installed
# otherwise, and no system service is used: the commands run a private
# cluster under $STAKEGRAPH_HOME (./.stakegraph), the tests one in the
# temporary directory (see store/storetest).

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)

GO      ?= go
BIN     := bin/stakegraph
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/stakegraph/stakegraph/internal/version.Version=$(VERSION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build bin/stakegraph.
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/stakegraph

.PHONY: postgres
postgres: ## Install PostgreSQL (apt-get) if its server programs are missing.
	@if command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then \
		exit 0; \
	fi; \
	echo "No PostgreSQL server programs found: installing Debian's postgresql package."; \
	sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
	$$sudo apt-get update && \
	DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends postgresql

.PHONY: redis
redis: ## Install Debian's redis-server (apt-get) for the shared rate-limit tests if it is missing.
	@if command -v redis-server >/dev/null 2>&1; then \
		exit 0; \
	fi; \
	echo "No redis-server found: installing Debian's redis-server package for the shared rate-limit tests."; \
	sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
	$$sudo apt-get update && \
	DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends redis-server

.PHONY: chromium
chromium: ## Install Debian's chromium (apt-get) for the browser tests if it is missing.
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		exit 0; \
	fi; \
	echo "No Chromium found: installing Debian's chromium package for the browser tests."; \
	sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
	$$sudo apt-get update && \
	DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends chromium

.PHONY: run
run: postgres build ## Migrate, seed demo data into an empty database, add a dev API key and serve on 127.0.0.1:8080.
	$(BIN) migrate
	$(BIN) seed demo --if-empty
	@key=$$($(BIN) keys create --name "dev-$$(date +%Y%m%d-%H%M%S)" | tail -n 1) || exit 1; \
	echo; \
	echo "  Development API key (send it in the X-API-Token header):"; \
	echo; \
	echo "      $$key"; \
	echo; \
	echo "  Try: curl -H 'X-API-Token: $$key' -H 'Content-Type: application/json' \\"; \
	echo "         -d '{\"query\":\"{ __typename }\"}' http://127.0.0.1:8080/graphql"; \
	echo
	$(BIN) serve

.PHONY: cluster
cluster: postgres redis build ## Start a local deployment: PostgreSQL primary + streaming replica, Redis, two serve instances (RPC_URL=... to index); prints their URLs.
	@start=$$(date +%s); BIN=$(BIN) cluster/cluster.sh up && echo "  Up in $$(( $$(date +%s) - start )) s."

.PHONY: cluster-stop
cluster-stop: ## Stop the local deployment of make cluster (its data stays in .cluster).
	@BIN=$(BIN) cluster/cluster.sh down

# gotestsum (a tool of go.mod) runs go test, prints one line per package
# and the output of failing tests only; .ci/test-summary then prints the
# one-line summary and the failing tests' names.
GOTESTSUM = $(GO) tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg \
	--hide-summary=skipped --jsonfile "$$jsonfile"

# The packages tested without the race detector, in this order, one at a
# time: demo/demotest first, which builds the demo data set's template that
# the graph and rest tests copy (it is keyed on the seeding code, so the
# raced packages find it built, or wait for it, instead of seeding it twice
# under the detector); then the demo data generator and the benchmark
# harness, which run single-threaded code over large generated data that
# the detector slows down tenfold (demo: 99 s of CPU with it, 28 s without).
# The loaders' concurrent parts are raced elsewhere: the other packages'
# smaller fixtures are loaded by SeedBench under -race. Last, the code
# generator's checks of its templates, which run no concurrent code and
# would compile gqlgen's generator with the detector for nothing. And the
# test of make cluster's script, whose Go code only starts processes and
# sends a few requests, and which would otherwise put its minute of
# seeding and building on the raced packages' critical path.
RACE_FREE_PACKAGES := ./demo/demotest ./demo ./bench ./graph/execgen ./cluster

.PHONY: test
test: postgres chromium redis vet fmt-check ## Vet, check formatting and run every test, all but demo and bench with the race detector.
	@dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; start=$$(date +%s); \
	race_free=$$($(GO) list $(RACE_FREE_PACKAGES)); \
	packages=$$($(GO) list ./... | grep -vxF "$$race_free"); \
	jsonfile="$$dir/race-free.json"; \
	$(GOTESTSUM) -- -count=1 -p 1 -timeout 30m $$race_free & race_free_pid=$$!; \
	jsonfile="$$dir/race.json"; \
	$(GOTESTSUM) -- -race -count=1 -timeout 30m $$packages; race_rc=$$?; \
	wait $$race_free_pid; race_free_rc=$$?; \
	.ci/test-summary $$(( $$(date +%s) - start ))s "$$dir"/*.json; \
	[ $$race_rc -eq 0 ] && [ $$race_free_rc -eq 0 ]

# The packages whose tests wait on timers, caches and concurrent work.
STRESS_PACKAGES := ./graph ./indexer ./httpcache ./apikey

.PHONY: test-stress
test-stress: postgres ## Run the timing-sensitive packages' tests 20 times with the race detector, two packages at once, beside a CPU-heavy job.
	@jsonfile=$$(mktemp); burner=; start=$$(date +%s); \
	trap 'rm -f "$$jsonfile"; [ -n "$$burner" ] && kill $$burner 2>/dev/null' EXIT; \
	sh -c 'while :; do :; done' & burner=$$!; \
	$(GOTESTSUM) -- -race -count=20 -p 2 -timeout 90m $(STRESS_PACKAGES); rc=$$?; \
	.ci/test-summary $$(( $$(date +%s) - start ))s "$$jsonfile"; \
	exit $$rc

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: fmt-check
fmt-check: ## Fail, listing them, if Go files are not gofmt-formatted.
	@files=$$(find . \( -path ./.git -o -path ./.stakegraph -o -path ./bin -o -path '*/node_modules' \) -prune \
		-o -name '*.go' -print | xargs gofmt -l); \
	if [ -n "$$files" ]; then echo "These files need gofmt:"; echo "$$files"; exit 1; fi

.PHONY: graphql-audit
graphql-audit: postgres ## Run graphql-http's GraphQL-over-HTTP audit against /graphql (needs node and npm; part of make test).
	$(GO) test -count=1 -v -run 'TestGraphQLOverHTTPAudit' ./graph

.PHONY: generate
generate: ## Run go generate.
	$(GO) generate ./...

# The bench: a private PostgreSQL cluster in $(BENCH_HOME) holding the
# mainnet-scale data set (loaded by `stakegraph seed bench` on first use and
# kept), and bin/stakebench driving `stakegraph serve` on loopback. See
# bench/RESULTS.md.
STAKEBENCH := bin/stakebench
BENCH_HOME ?= bench/data
BENCH      := $(STAKEBENCH) --stakegraph $(BIN) --home $(BENCH_HOME)

.PHONY: stakebench
stakebench:
	$(GO) build -o $(STAKEBENCH) ./bench/cmd/stakebench

.PHONY: bench
bench: postgres redis build stakebench ## Measure every REST route and the GraphQL operations on the bench data, compare with PostGraphile 4, run two instances on a replica, check query plans, then make soak; writes bench/RESULTS.md.
	$(BENCH) measure
	$(BENCH) peer
	$(BENCH) cluster
	$(MAKE) --no-print-directory soak
	$(BENCH) plans

.PHONY: soak
soak: postgres build stakebench ## A 10-minute soak at 64 clients and a PostgreSQL restart under load, on the bench data; updates bench/RESULTS.md.
	$(BENCH) soak
	$(BENCH) restart

.PHONY: test-db-stop
test-db-stop: ## Stop the shared test PostgreSQL cluster the tests leave running.
	$(GO) run ./cmd/stakegraph localpg stop --test
