package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/graph"
)

// readmeBlock is a fenced code block of the README.
type readmeBlock struct {
	lang, text string
	line       int // the line of its opening fence
}

// readmeBlocks returns the fenced code blocks of the repository's README.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(trimmed, "```"), line: i + 1}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return blocks
}

// readmeAPI is the address the README's examples send their requests to.
const readmeAPI = "http://127.0.0.1:8080"

// readmeShellPrelude runs before the README's shell examples: it sends
// curl's requests for the address of `make run` to $API, records every
// response (body, status and arguments) in $OUT, and makes GNU date's
// relative dates relative to $NOW, the demo data's end, instead of the
// machine's clock.
const readmeShellPrelude = `
curl() {
	local f args=("${@//http:\/\/127.0.0.1:8080/$API}")
	f=$(mktemp "$OUT/response.XXXXXX")
	printf '%s\n' "${args[*]}" > "$f.args"
	command curl -sS -o "$f" -w '%{http_code}' "${args[@]}" > "$f.status"
	cat "$f"
}
date() {
	local args=() dated=
	while [ $# -gt 0 ]; do
		case "$1" in
		-d) args+=(-d "$NOW $2"); dated=1; shift 2 ;;
		*) args+=("$1"); shift ;;
		esac
	done
	[ -n "$dated" ] || args+=(-d "$NOW")
	command date "${args[@]}"
}
`

// TestReadmeExamplesReturnData runs the README's shell examples (every
// block that sends requests to the API) against a server over the demo
// data, and its GraphQL operations, and checks that every request of them
// answers 200 with data: a list that is not empty, a record, a number.
func TestReadmeExamplesReturnData(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "grep", "date"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's examples need %s: %v", tool, err)
		}
	}
	db := demoDB(t)
	opts := graph.Options{Now: func() time.Time { return demoNow }}
	executor := graph.NewExecutor(db, opts)
	auth := apikey.New(db, apikey.Options{DefaultRateLimit: 1_000_000})
	opts.Authenticate = auth.Middleware
	r := chi.NewRouter()
	r.Handle("/graphql", graph.NewHandler(db, opts))
	r.Mount("/", NewHandler(Config{Executor: executor, Authenticate: auth.Middleware, Version: "test"}))
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	key, err := db.CreateAPIKey(context.Background(), "readme-test", nil)
	if err != nil {
		t.Fatal(err)
	}

	var script strings.Builder
	script.WriteString(readmeShellPrelude)
	var graphQL []readmeBlock
	for _, b := range readmeBlocks(t) {
		switch {
		case b.lang == "graphql":
			graphQL = append(graphQL, b)
		case b.lang == "sh" && strings.Contains(b.text, "curl") && (strings.Contains(b.text, "$API") || strings.Contains(b.text, readmeAPI)):
			fmt.Fprintf(&script, "\n# README.md line %d\n", b.line)
			for _, line := range strings.Split(b.text, "\n") {
				// The test sets the key and the address itself.
				if strings.HasPrefix(line, "KEY=") || strings.HasPrefix(line, "API=") {
					continue
				}
				script.WriteString(line + "\n")
			}
		}
	}
	// The staker the examples find, for the StakerPage operation.
	script.WriteString("\nprintf '%s' \"$STAKER\" > \"$OUT/staker\"\n")

	out := t.TempDir()
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Env = append(os.Environ(), "KEY="+key, "API="+srv.URL, "OUT="+out, "NOW="+demoNow.Format("2006-01-02 15:04:05 UTC"))
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's examples failed: %v\n%s", err, output)
	}

	responses, err := filepath.Glob(filepath.Join(out, "response.??????"))
	if err != nil {
		t.Fatal(err)
	}
	if len(responses) < 60 {
		t.Fatalf("the README's examples sent %d requests; want every curl line's", len(responses))
	}
	sort.Strings(responses)
	for _, f := range responses {
		args, _ := os.ReadFile(f + ".args")
		status, _ := os.ReadFile(f + ".status")
		body, _ := os.ReadFile(f)
		request := strings.NewReplacer(srv.URL, "$API", key, "$KEY").Replace(strings.TrimSpace(string(args)))
		if string(status) != "200" {
			t.Errorf("curl %s: status %s, want 200: %.300s", request, status, body)
			continue
		}
		if reason := readmeEmpty(body); reason != "" {
			t.Errorf("curl %s: %s: %.300s", request, reason, body)
		}
	}

	staker, err := os.ReadFile(filepath.Join(out, "staker"))
	if err != nil || !regexp.MustCompile(`^0x[0-9a-f]{40}$`).Match(staker) {
		t.Fatalf("the examples found no staker: %q", staker)
	}
	if len(graphQL) < 3 {
		t.Fatalf("the README has %d GraphQL operations; want its page examples", len(graphQL))
	}
	for _, b := range graphQL {
		vars := map[string]any{}
		if strings.Contains(b.text, "$staker") {
			vars["staker"] = string(staker)
		}
		payload, err := json.Marshal(map[string]any{"query": b.text, "variables": vars})
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/graphql", bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Token", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, err = body.ReadFrom(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Data   map[string]json.RawMessage `json:"data"`
			Errors []json.RawMessage          `json:"errors"`
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(body.Bytes(), &answer) != nil || len(answer.Errors) > 0 {
			t.Errorf("the GraphQL operation at README.md line %d: %d %.300s", b.line, res.StatusCode, body.Bytes())
			continue
		}
		for field, value := range answer.Data {
			if reason := readmeEmpty(value); reason != "" {
				t.Errorf("the GraphQL operation at README.md line %d: %s: %s: %.300s", b.line, field, reason, value)
			}
		}
	}
}

// readmeEmpty says why a JSON answer holds no data, or returns "" when it
// does: a paged answer needs records in its data, an object some member.
func readmeEmpty(body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "not JSON"
	}
	switch v := v.(type) {
	case nil:
		return "null"
	case []any:
		if len(v) == 0 {
			return "an empty list"
		}
	case map[string]any:
		if len(v) == 0 {
			return "an empty object"
		}
		if data, ok := v["data"]; ok {
			if list, ok := data.([]any); ok && len(list) == 0 {
				return "no records in data"
			}
			if data == nil {
				return "data is null"
			}
		}
	}
	return ""
}
