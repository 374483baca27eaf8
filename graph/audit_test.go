package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/httpcache"
	"github.com/stakegraph/stakegraph/internal/npmtest"
)

// auditDir holds the npm package of graphql-http's audit, pinned by its
// package-lock.json, and the script that runs it (audit.mjs). `npm ci`
// installs the package into its node_modules, which git ignores.
const auditDir = "testdata/graphql-http"

// auditResult is one audit of graphql-http, as audit.mjs prints it.
type auditResult struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	Reason      string `json:"reason"`
	HTTPStatus  int    `json:"httpStatus"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
}

// TestGraphQLOverHTTPAudit runs graphql-http's audit of the GraphQL over
// HTTP specification (the npm package graphql-http, its auditServer
// function) against the endpoint served on a real HTTP server, alone and
// behind the response cache, without authentication since the audit sends
// no API key, and fails on every audit of a MUST or SHOULD that does not
// pass. It is skipped only when node or npm is missing.
func TestGraphQLOverHTTPAudit(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: skipping graphql-http's GraphQL-over-HTTP audit")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: skipping graphql-http's GraphQL-over-HTTP audit")
	}
	npmtest.Install(t, npm, auditDir)

	db := demoDB(t)
	t.Run("endpoint", func(t *testing.T) {
		runAudit(t, node, newClient(t, db, testOptions()).url)
	})
	t.Run("behind the response cache", func(t *testing.T) {
		// As serve mounts it: the audit sends the same query with each
		// Accept header, which the cache must not answer from an entry of
		// another media type.
		cache := httpcache.New(db, httpcache.Options{GraphQLMediaType: graph.ResponseMediaType, Logger: discardLogger()})
		if err := cache.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		opts := testOptions()
		opts.Authenticate = cache.GraphQLMiddleware
		runAudit(t, node, newClient(t, db, opts).url)
	})
}

// runAudit runs audit.mjs against the GraphQL endpoint at url and fails
// the test on every MUST or SHOULD audit that does not pass, listing them.
func runAudit(t *testing.T, node, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "audit.mjs", url)
	cmd.Dir = auditDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node audit.mjs: %v\n%s", err, stderr.String())
	}
	var results []auditResult
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		t.Fatalf("the audit's output is not its JSON results: %v\n%.1000s", err, stdout.String())
	}
	if len(results) < 50 {
		t.Fatalf("the audit ran %d audits, want graphql-http's 50 or more", len(results))
	}
	var failed []string
	passed := 0
	for _, r := range results {
		if r.Status == "ok" {
			passed++
			continue
		}
		line := r.ID + " " + r.Name + ": " + r.Reason
		if r.HTTPStatus != 0 {
			line += " (answer: " + r.ContentType + " " + strings.TrimSpace(r.Body) + ")"
		}
		if strings.HasPrefix(r.Name, "MUST ") || strings.HasPrefix(r.Name, "SHOULD ") {
			failed = append(failed, line)
		} else {
			t.Logf("optional audit failed: %s", line)
		}
	}
	t.Logf("%d of %d audits pass", passed, len(results))
	if len(failed) > 0 {
		t.Errorf("%d MUST or SHOULD audits fail:\n%s", len(failed), strings.Join(failed, "\n"))
	}
}
