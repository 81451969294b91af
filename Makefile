# Kortyx for Go on Temporal.
#
#   make check   gofmt, go vet, workflowcheck, staticcheck, errcheck, docker-compose config and
#                every test (integration tests included); first installs the Debian packages
#                docker-compose, redis-server and chromium when absent (make deps)
#   make demo    the triage agent end to end on the embedded dev server
#   make conformance the official MCP conformance suite's server scenarios against /mcp (also run
#                by make check's tests; docs/mcp-server.md)
#   make surface the exported identifiers of every public package, and their total
#   make tools   install the Temporal CLI, workflowcheck, staticcheck and errcheck into .tools/bin (once;
#                with TEMPORAL_CLI_PATH set, that temporal binary is used and none is installed)

TOOLS         := $(CURDIR)/.tools/bin
# TEMPORAL_CLI_PATH, when set, names the temporal binary to use (nothing is installed); the
# tests find it through the same variable (devserver.Find).
TEMPORAL      := $(or $(TEMPORAL_CLI_PATH),$(TOOLS)/temporal)
WORKFLOWCHECK := $(TOOLS)/workflowcheck
STATICCHECK   := $(TOOLS)/staticcheck
ERRCHECK      := $(TOOLS)/errcheck
GO_FILES       = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.tools/*')

.PHONY: check deps tools npm fmt vet workflowcheck staticcheck errcheck compose test conformance demo surface bench record-histories

check: deps tools npm fmt vet workflowcheck staticcheck errcheck compose test

# The Debian packages the tests use, installed when absent (root or sudo needed only then).
deps:
	@scripts/install-deps docker-compose=docker-compose redis-server=redis-server chromium=chromium

# The official npm clients the protocol tests drive (test/npmclients, test dependencies only).
# The tests run the same `npm ci` themselves when the installed lock differs (test/nodeclient).
npm:
	go test -count=1 -run TestScriptTalksJSONLines ./test/nodeclient

tools: $(TEMPORAL) $(WORKFLOWCHECK) $(STATICCHECK) $(ERRCHECK)

ifdef TEMPORAL_CLI_PATH
export TEMPORAL_CLI_PATH
$(TEMPORAL):
	@echo "TEMPORAL_CLI_PATH=$(TEMPORAL_CLI_PATH) does not exist: point it at a temporal binary or unset it"; exit 1
else
$(TEMPORAL):
	@echo "installing the Temporal CLI v1.5.1 into .tools/bin (a few minutes, once)"
	GOBIN=$(TOOLS) go install -v github.com/temporalio/cli/cmd/temporal@v1.5.1
endif

$(WORKFLOWCHECK):
	GOBIN=$(TOOLS) go install go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

fmt:
	@out=$$(gofmt -l $(GO_FILES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	go vet ./...

workflowcheck: $(WORKFLOWCHECK)
	$(WORKFLOWCHECK) -config workflowcheck.config.yaml ./...

$(STATICCHECK):
	GOBIN=$(TOOLS) go install honnef.co/go/tools/cmd/staticcheck@v0.8.2

$(ERRCHECK):
	GOBIN=$(TOOLS) go install github.com/kisielk/errcheck@v1.30.0

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

# Errors of non-test code are handled; errcheck.excludes lists the few calls whose errors are not.
errcheck: $(ERRCHECK)
	$(ERRCHECK) -ignoretests -exclude errcheck.excludes ./...

# docker-compose.yml is valid with the variables of .env.example (no container engine needed;
# .ci/run installs the docker-compose package when it is absent).
compose:
	docker-compose --env-file .env.example config -q

# Integration tests start a real Temporal dev server (the CLI devserver.Find finds:
# TEMPORAL_CLI_PATH, .tools/bin/temporal, PATH); they fail, never skip, when it is missing.
test: $(TEMPORAL)
	go test -race -count=1 -timeout 30m ./...

# The MCP conformance suite's server scenarios (test/mcpconformance; it runs its own npm ci).
conformance: $(TEMPORAL)
	go test -count=1 -v -run TestServerScenarios ./test/mcpconformance

demo:
	go run ./starter demo

# The public surface's count (test/deprules/surface_test.go says what is counted).
surface:
	go test -count=1 -run TestPublicSurface -v ./test/deprules | grep -E '^ +[0-9]+  '

# Every benchmark and the LangGraph peer in one run; results in bench/results (docs/performance.md).
bench: $(TEMPORAL)
	bench/run.sh

# Re-record the histories replayed by test/integration (after an intended workflow change).
record-histories: $(TEMPORAL)
	KORTYX_RECORD_HISTORIES=1 go test -count=1 ./test/integration/ -run 'FastPathRun|FastPathLongPass|Answered|Cancel|Triage|Killed|AfterTool|Approval|DuringSchemaCorrections|SessionTurns|ChatResponseFinalized|ParallelJoinSurvivesWorkerKill|TestKitReplays'
