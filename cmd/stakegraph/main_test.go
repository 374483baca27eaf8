package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/freeport"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/localpg"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

type result struct {
	code           int
	stdout, stderr string
}

// stakegraph runs the command line with the given environment only.
func stakegraph(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr syncbuffer.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// errorLine returns the command's error: the last line of its stderr,
// which must be the only line that is not a JSON log record.
func errorLine(t *testing.T, r result) string {
	t.Helper()
	var plain []string
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.HasPrefix(line, "{") {
			plain = append(plain, line)
		}
	}
	if len(plain) != 1 {
		t.Fatalf("want one error line on stderr, got %d:\n%s", len(plain), r.stderr)
	}
	return plain[0]
}

func TestMigrateTwice(t *testing.T) {
	env := map[string]string{"DATABASE_URL": storetest.NewEmptyURL(t)}
	for i := range 2 {
		if r := stakegraph(t, env, "migrate"); r.code != 0 {
			t.Fatalf("migrate #%d: exit %d\n%s", i+1, r.code, r.stderr)
		}
	}
	db, err := sql.Open("postgres", env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var network string
	if err := db.QueryRow(`SELECT network FROM service_state`).Scan(&network); err != nil {
		t.Fatal(err)
	}
	if network != "mainnet" {
		t.Errorf("network = %q, want mainnet", network)
	}
}

var keyLineRE = regexp.MustCompile(`^sg_[0-9a-f]{40}$`)

func TestKeys(t *testing.T) {
	url := storetest.NewURL(t)
	env := map[string]string{"DATABASE_URL": url}

	r := stakegraph(t, env, "keys", "create", "--name", "ci", "--rate-limit", "30")
	if r.code != 0 {
		t.Fatalf("keys create: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	key := lines[len(lines)-1]
	if !keyLineRE.MatchString(key) {
		t.Fatalf("last line of stdout %q is not a key alone; stdout:\n%s", key, r.stdout)
	}
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	active, err := db.ActiveAPIKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := active[store.HashAPIKey(key)]; !ok || k.Name != "ci" || k.RateLimitPerMinute == nil || *k.RateLimitPerMinute != 30 {
		t.Fatalf("the printed key is not stored as ci with limit 30: %+v", active)
	}

	if r := stakegraph(t, env, "keys", "create", "--name", "ci"); r.code != 1 || !strings.Contains(errorLine(t, r), "already exists") {
		t.Errorf("duplicate keys create: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := stakegraph(t, env, "keys", "create"); r.code != 2 || !strings.Contains(errorLine(t, r), "--name is required") {
		t.Errorf("keys create without --name: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := stakegraph(t, env, "keys", "create", "--name", "zero", "--rate-limit", "0"); r.code != 1 {
		t.Errorf("keys create --rate-limit 0: exit %d, want 1", r.code)
	}

	r = stakegraph(t, env, "keys", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "ci") || !strings.Contains(r.stdout, key[:11]) || strings.Contains(r.stdout, key) {
		t.Errorf("keys list: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	if r := stakegraph(t, env, "keys", "revoke", "ci"); r.code != 0 {
		t.Errorf("keys revoke: exit %d\n%s", r.code, r.stderr)
	}
	if r := stakegraph(t, env, "keys", "revoke", "ci"); r.code != 1 || !strings.Contains(errorLine(t, r), "no active API key") {
		t.Errorf("keys revoke twice: exit %d, stderr %q", r.code, r.stderr)
	}
	if active, _ := db.ActiveAPIKeys(context.Background()); len(active) != 0 {
		t.Errorf("after revoke, active keys = %+v", active)
	}
}

func TestNetworkMismatch(t *testing.T) {
	env := map[string]string{"DATABASE_URL": storetest.NewURL(t)}
	if r := stakegraph(t, env, "migrate"); r.code != 0 {
		t.Fatalf("migrate: %d\n%s", r.code, r.stderr)
	}
	r := stakegraph(t, env, "--network", "holesky", "keys", "list")
	if r.code != 1 || !strings.Contains(errorLine(t, r), "holds mainnet data; refusing to use it for holesky") {
		t.Errorf("holesky on a mainnet database: exit %d, stderr %q", r.code, r.stderr)
	}
	env["STAKEGRAPH_NETWORK"] = "holesky"
	if r := stakegraph(t, env, "migrate"); r.code != 1 {
		t.Errorf("STAKEGRAPH_NETWORK=holesky on a mainnet database: exit %d", r.code)
	}
	// A flag after the command overrides the environment.
	if r := stakegraph(t, env, "migrate", "--network", "mainnet"); r.code != 0 {
		t.Errorf("--network mainnet after the command: exit %d\n%s", r.code, r.stderr)
	}
}

func TestCommandLineErrors(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?sslmode=disable"}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		code int
		want string
	}{
		{[]string{"migrate", "--bogus"}, env, 2, "flag provided but not defined: -bogus"},
		{[]string{"--bogus", "migrate"}, env, 2, "flag provided but not defined: -bogus"},
		{[]string{"frobnicate"}, env, 2, `unknown command "frobnicate"`},
		{[]string{"keys"}, env, 2, "keys needs a subcommand: create, list, revoke"},
		{[]string{"keys", "delete"}, env, 2, `unknown subcommand "delete" of keys`},
		{[]string{"migrate", "extra"}, env, 2, "unexpected arguments"},
		{[]string{"--network", "ropsten", "migrate"}, env, 2, `unknown network "ropsten"`},
		{[]string{"migrate", "--log-format", "xml"}, env, 2, `unknown log format "xml"`},
		{[]string{"migrate"}, map[string]string{"STAKEGRAPH_PG_PORT": "nope"}, 2, `STAKEGRAPH_PG_PORT="nope" is not a port number`},
		{[]string{"migrate"}, env, 1, "connection refused"},
		{[]string{"keys", "list", "--database-url", "postgres://u:hunter2@127.0.0.1:1/x?sslmode=disable"}, nil, 1, "stakegraph keys list: connect to database"},
	} {
		r := stakegraph(t, tc.env, tc.args...)
		if r.code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.args, r.code, tc.code, r.stderr)
			continue
		}
		if line := errorLine(t, r); !strings.Contains(line, tc.want) || strings.Contains(line, "hunter2") {
			t.Errorf("%q: error %q, want it to contain %q", tc.args, line, tc.want)
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	r := stakegraph(t, nil, "help")
	if r.code != 0 {
		t.Fatalf("help: exit %d", r.code)
	}
	for _, want := range []string{"migrate", "keys create", "keys revoke NAME", "serve", "--network", "STAKEGRAPH_NETWORK", "DATABASE_URL", "STAKEGRAPH_HOME", "STAKEGRAPH_LOG_FORMAT"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	r = stakegraph(t, nil, "help", "serve")
	if r.code != 0 || !strings.Contains(r.stdout, "--admin-addr") || !strings.Contains(r.stdout, "STAKEGRAPH_ADDR") ||
		!strings.Contains(r.stdout, "--pprof") || !strings.Contains(r.stdout, "STAKEGRAPH_PPROF") {
		t.Errorf("help serve: exit %d\n%s", r.code, r.stdout)
	}
	if r := stakegraph(t, nil, "keys", "create", "-h"); r.code != 0 || !strings.Contains(r.stdout, "--rate-limit") {
		t.Errorf("keys create -h: exit %d\n%s", r.code, r.stdout)
	}
	if r := stakegraph(t, nil); r.code != 2 || !strings.Contains(r.stderr, "Commands:") {
		t.Errorf("no command: exit %d", r.code)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if r := stakegraph(t, nil, args...); r.code != 0 || r.stdout != "stakegraph dev\n" {
			t.Errorf("%q: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}

// localHome returns a STAKEGRAPH_HOME the postgres OS user can reach when
// the tests run as root, and stops its cluster at the end.
func localHome(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "stakegraph-cli-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	t.Cleanup(func() {
		localpg.StopDir(context.Background(), filepath.Join(base, "pg"), nil)
		os.RemoveAll(base)
	})
	return base
}

// TestLocalCluster runs commands without DATABASE_URL: each starts the
// local cluster and stops it again.
func TestLocalCluster(t *testing.T) {
	home := localHome(t)
	env := map[string]string{"STAKEGRAPH_HOME": home, "STAKEGRAPH_PG_PORT": fmt.Sprint(freeport.Get(t))}
	if r := stakegraph(t, env, "migrate"); r.code != 0 {
		t.Fatalf("migrate on the local cluster: exit %d\n%s", r.code, r.stderr)
	}
	if st, _ := localpg.DirStatus(filepath.Join(home, "pg")); st.Running {
		t.Error("migrate left the cluster it started running")
	}
	r := stakegraph(t, env, "keys", "create", "--name", "local")
	if r.code != 0 {
		t.Fatalf("keys create on the local cluster: exit %d\n%s", r.code, r.stderr)
	}
	r = stakegraph(t, env, "keys", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "local") {
		t.Errorf("keys list on the local cluster: exit %d\n%s", r.code, r.stdout)
	}

	// A cluster that localpg start leaves running is reused, not stopped.
	if r := stakegraph(t, env, "localpg", "start"); r.code != 0 || !strings.Contains(r.stdout, "postgres://") {
		t.Fatalf("localpg start: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := stakegraph(t, env, "keys", "list"); r.code != 0 {
		t.Fatalf("keys list: exit %d", r.code)
	}
	if r := stakegraph(t, env, "localpg", "status"); !strings.Contains(r.stdout, "runs (pid") {
		t.Errorf("localpg status after keys list: %s", r.stdout)
	}
	if r := stakegraph(t, env, "localpg", "stop"); r.code != 0 || !strings.Contains(r.stdout, "Stopped") {
		t.Errorf("localpg stop: exit %d\n%s", r.code, r.stdout)
	}
	if r := stakegraph(t, env, "localpg", "status"); !strings.Contains(r.stdout, "not running") {
		t.Errorf("localpg status after stop: %s", r.stdout)
	}
}

func TestServe(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	env := map[string]string{"DATABASE_URL": storetest.NewURL(t), "STAKEGRAPH_ADDR": addr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuffer.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--admin-addr", adminAddr}, func(k string) string { return env[k] }, &stdout, &stderr)
	}()

	var resp *http.Response
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err = http.Get("http://" + addr + "/healthz"); err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d:\n%s", code, stderr.String())
		default:
		}
	}
	if err != nil {
		t.Fatalf("serve never answered: %v\n%s", err, stderr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Errorf("/healthz = %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/readyz = %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "stakegraph_http_requests_total") {
		t.Errorf("admin /metrics lacks the request counter:\n%.500s", body)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited with %d after cancel:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	if !strings.Contains(stderr.String(), `"msg":"shutting down"`) {
		t.Errorf("no shutdown log:\n%s", stderr.String())
	}
}

// TestSeedIfEmpty checks the seed command's handling of a database that
// already holds events; loading the demo set itself is the demo package's
// to test.
func TestSeedIfEmpty(t *testing.T) {
	url := storetest.NewURL(t)
	env := map[string]string{"DATABASE_URL": url}
	if r := stakegraph(t, env, "seed", "demo", "--now", "yesterday"); r.code != 2 || !strings.Contains(errorLine(t, r), "not an RFC 3339 time") {
		t.Errorf("seed demo --now yesterday: exit %d, stderr %q", r.code, r.stderr)
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO operator_registered_events (block_number, log_index, tx_hash, block_time, operator_address)
		VALUES (1, 0, '0x` + strings.Repeat("ab", 32) + `', now(), '0x` + strings.Repeat("cd", 20) + `')`); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"seed", "demo"}, {"seed", "bench"}} {
		r := stakegraph(t, env, append(cmd, "--if-empty")...)
		if r.code != 0 || !strings.Contains(r.stderr, "already holds data; not seeding") {
			t.Errorf("%q --if-empty on a database with events: exit %d\n%s", cmd, r.code, r.stderr)
		}
		r = stakegraph(t, env, cmd...)
		if r.code != 1 || !strings.Contains(errorLine(t, r), "already holds events") {
			t.Errorf("%q on a database with events: exit %d, stderr %q", cmd, r.code, r.stderr)
		}
	}
}
