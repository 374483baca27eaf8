package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/npmtest"
)

// redoclyDir holds the npm package @redocly/cli, pinned to an exact version
// by its package.json and package-lock.json, and the lint rules
// (redocly.yaml). `npm ci` installs the package into its node_modules,
// which git ignores.
const redoclyDir = "testdata/redocly"

// TestOpenAPIDocumentPassesRedoclyLint runs `redocly lint` on openapi.json
// with Redocly's recommended rules and fails on any problem of severity
// error; warnings are logged. It is skipped only when node or npm is
// missing.
func TestOpenAPIDocumentPassesRedoclyLint(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: skipping the @redocly/cli lint of openapi.json")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: skipping the @redocly/cli lint of openapi.json")
	}
	npmtest.Install(t, npm, redoclyDir)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	doc, err := filepath.Abs("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join("node_modules", ".bin", "redocly"),
		"lint", doc, "--config", "redocly.yaml", "--format", "json")
	cmd.Dir = redoclyDir
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var report struct {
		Totals struct {
			Errors   int `json:"errors"`
			Warnings int `json:"warnings"`
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("redocly lint: %v; output is not its JSON report (%v)\nstdout: %s\nstderr: %s", runErr, err, stdout.String(), stderr.String())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		if p.Severity == "error" {
			t.Errorf("redocly lint: %s at %s: %s", p.RuleID, where, p.Message)
		} else {
			t.Logf("redocly lint (%s): %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
		}
	}
	if report.Totals.Errors > 0 || (runErr != nil && len(report.Problems) == 0) {
		t.Errorf("redocly lint: %d errors, %d warnings (%v)\nstderr: %s", report.Totals.Errors, report.Totals.Warnings, runErr, stderr.String())
	}
}
