# reef: the two commands of the README are `make run` (the main job: a paper
# reproduction on the default netns backend) and `make test` (everything CI checks).
GO          ?= go
BIN         := bin
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
EXPERIMENT  ?= experiments/poseidon-multihop.yaml
BACKEND     ?= netns

.PHONY: all build deps deps-run run test lint unit bench clean

all: build

# build puts reef and its daemons side by side in bin/ (reef finds switchd and hostd there).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/...

deps:
	./scripts/install-deps.sh test

deps-run:
	./scripts/install-deps.sh run

# run reproduces a paper result: brings a lab up, runs the traffic, tears it down, and
# leaves results/<experiment>-<time>/ with summary.json, plots and report.html.
run: deps-run build
	$(BIN)/reef run $(EXPERIMENT) --backend $(BACKEND)

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum: run go mod tidy (the diff above is what it would change)"; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The sans-I/O cores start no goroutines (internal/purity enforces it), so the race
# detector has nothing to find there and only slows their exact, virtual-time tests;
# every other package (drivers, backends, runner, dashboard, CLI) runs under -race.
CORES := ./units/... ./wire/... ./cc/... ./switchd ./hostd ./hostd/transport ./hostd/workload ./emulator/sim

# The paper reproductions on sim execute only core code and take minutes: they run
# without the race detector (the runner's own tests run under it).
REPRO := TestReproductionsOnSim|TestReproductionsOnSimWithDelaysMoved|TestTimelyIncastOnSim

# The packages that run labs of real daemons (netns, Docker) measure how well the machine
# keeps the emulated schedule: they run last, one package at a time, so that no other
# test competes with their daemons for the CPU.
LABS := ./emulator/netns ./emulator/docker

# The Swarm backend's labs span machines: scripts/machines.sh makes two on this one
# (namespaces with their own Docker engines, joined in a Swarm) for its tests, and
# removes them afterwards whether the tests passed or not.
SWARM := ./emulator/swarm

# The reproductions on netns run without the race detector too, last and alone: the
# controller's own work competes with the daemons for the two CPUs, and under -race it
# is several times heavier (its sim comparisons most of all). The netns backend and the
# runner it drives run under -race in the other lab tests.
NETNS_REPRO := TestReproductionsOnNetns

unit:
	$(GO) test -count=1 -timeout 30m $(CORES)
	cd examples/ecnreno && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd examples/udpint && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd labs/incast-dctcp/mycc && $(GO) vet ./...
	REEF_EXPERIMENTS=1 $(GO) test -count=1 -timeout 30m -run '^($(REPRO))$$' ./emulator/runner
	$(GO) test -race -count=1 -timeout 30m -skip '^($(REPRO))$$' $$($(GO) list ./... | grep -v -x -F "$$($(GO) list $(CORES) $(LABS) $(SWARM))")
	$(GO) test -race -count=1 -p 1 -timeout 60m -skip '^($(NETNS_REPRO))$$' $(LABS)
	./scripts/machines.sh up
	$(GO) test -race -count=1 -timeout 40m $(SWARM); rc=$$?; ./scripts/machines.sh down; exit $$rc
	$(GO) test -count=1 -timeout 90m -run '^($(NETNS_REPRO))$$' ./emulator/netns

# test is what CI runs: install prerequisites, build, lint, then every test with the race
# detector (integration tests need root; in CI a missing prerequisite fails them).
test: deps build lint unit

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x ./...

clean:
	rm -rf $(BIN)
