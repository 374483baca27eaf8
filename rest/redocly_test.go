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
	installRedocly(t, npm)

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

// installRedocly runs `npm ci` in redoclyDir unless its node_modules
// already holds the version of @redocly/cli that package-lock.json pins.
func installRedocly(t *testing.T, npm string) {
	t.Helper()
	if redoclyInstalled(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = redoclyDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", redoclyDir, err, out)
	}
	if !redoclyInstalled(t) {
		t.Fatalf("npm ci in %s did not install the version of package-lock.json", redoclyDir)
	}
}

// redoclyInstalled reports whether redoclyDir/node_modules holds every
// package of package-lock.json at its version.
func redoclyInstalled(t *testing.T) bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(redoclyDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &lock); err != nil {
		t.Fatalf("package-lock.json: %v", err)
	}
	for path, pkg := range lock.Packages {
		if path == "" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(redoclyDir, path, "package.json"))
		if err != nil {
			return false
		}
		var installed struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(raw, &installed) != nil || installed.Version != pkg.Version {
			return false
		}
	}
	return true
}
