// Package cluster holds cluster.sh, the local deployment of `make
// cluster`; its test runs the script.
package cluster

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/freeport"
)

// TestClusterUpAndDown runs `cluster.sh up` as `make cluster` does, on
// free ports in a directory of its own: both instances answer, report the
// primary and the replica as ok and share a key's rate limit; then
// `cluster.sh down` stops every process.
func TestClusterUpAndDown(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds the demo data into a cluster of its own")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server found (Debian: apt-get install redis-server; make test installs it)")
	}
	base, err := os.MkdirTemp("", "stakegraph-cluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	// The postgres OS user must reach the clusters in it.
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	bin := filepath.Join(base, "stakegraph")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/stakegraph").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	api := []int{freeport.Get(t), freeport.Get(t)}
	admin := []int{freeport.Get(t), freeport.Get(t)}
	stores := []int{freeport.Get(t), freeport.Get(t), freeport.Get(t)} // primary, replica, Redis
	env := append(os.Environ(),
		"BIN="+bin, "CLUSTER_DIR="+filepath.Join(base, "cluster"),
		fmt.Sprintf("PRIMARY_PORT=%d", stores[0]), fmt.Sprintf("REPLICA_PORT=%d", stores[1]), fmt.Sprintf("REDIS_PORT=%d", stores[2]),
		fmt.Sprintf("API_PORTS=%d %d", api[0], api[1]), fmt.Sprintf("ADMIN_PORTS=%d %d", admin[0], admin[1]),
		"RPC_URL=", "NETWORK=mainnet")
	script := func(arg string) string {
		t.Helper()
		cmd := exec.Command("./cluster.sh", arg)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cluster.sh %s: %v\n%s", arg, err, out)
		}
		return string(out)
	}
	start := time.Now()
	out := script("up")
	down := false
	defer func() {
		if !down {
			script("down")
		}
	}()
	t.Logf("cluster.sh up took %s", time.Since(start).Round(time.Second))
	key := regexp.MustCompile(`sg_[0-9a-f]{40}`).FindString(out)
	primary := regexp.MustCompile(`primary +(postgres://\S+)`).FindStringSubmatch(out)
	if key == "" || primary == nil {
		t.Fatalf("cluster.sh up printed no API key or no primary URL:\n%s", out)
	}

	get := func(port int, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
		req.Header.Set("X-API-Token", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	for _, port := range api {
		if code, body := get(port, "/readyz"); code != http.StatusOK || !strings.Contains(body, `"primary":"ok"`) || !strings.Contains(body, `"replica1":"ok"`) {
			t.Errorf("instance on %d: /readyz %d %s", port, code, body)
		}
		if code, body := get(port, "/avs?take=2"); code != http.StatusOK || !strings.Contains(body, `"data"`) {
			t.Errorf("instance on %d: GET /avs %d %s", port, code, body)
		}
	}

	// One limit across both instances, for a key of 3 requests a minute.
	create := exec.Command(bin, "keys", "create", "--name", "three", "--rate-limit", "3")
	create.Env = append(os.Environ(), "DATABASE_URL="+primary[1])
	created, err := create.Output()
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	key = regexp.MustCompile(`sg_[0-9a-f]{40}`).FindString(string(created))
	ok := 0
	for i := range 6 {
		if code, _ := get(api[i%2], "/avs?take=2"); code == http.StatusOK {
			ok++
		}
	}
	if ok != 3 {
		t.Errorf("%d of 6 requests of a key limited to 3 a minute succeeded across the two instances; want 3", ok)
	}

	script("down")
	down = true
	for _, port := range append(append(api, admin...), stores...) {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			conn.Close()
			t.Errorf("port %d still answers after cluster.sh down", port)
		}
	}
}
