package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/redistest"
)

// TestServeInstancesShareLimitsAndRevocations runs two serve instances on
// a primary and its read replica, with one Redis: a key limited to N requests a minute gets
// exactly N successes from both together, a revoked key is refused by both
// within 2 s, and with Redis stopped both keep serving.
func TestServeInstancesShareLimitsAndRevocations(t *testing.T) {
	redis := redistest.Start(t)
	dbURL, replicaURL, db, _ := primaryAndReplica(t, "mainnet")
	ctx := context.Background()
	const limit = 4
	n := limit
	limited, err := db.CreateAPIKey(ctx, "limited", &n)
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := db.CreateAPIKey(ctx, "revoked", nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateAPIKey(ctx, "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	instances := []string{
		serveOnFreePort(t, dbURL, "--redis-url", redis.URL(), "--replica-url", replicaURL),
		serveOnFreePort(t, dbURL, "--redis-url", redis.URL(), "--replica-url", replicaURL),
	}

	ok := 0
	for i := 0; i < 3*limit; i++ {
		switch code, body := statusWithKey(t, instances[i%2], "/avs", limited); code {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("request %d: %d %s", i+1, code, body)
		}
	}
	if ok != limit {
		t.Errorf("%d requests of a key limited to %d a minute succeeded across two instances", ok, limit)
	}

	for _, base := range instances {
		if code, body := statusWithKey(t, base, "/avs", revoked); code != http.StatusOK {
			t.Fatalf("GET /avs before the revocation: %d %s", code, body)
		}
	}
	if err := db.RevokeAPIKey(ctx, "revoked"); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	for i, base := range instances {
		for {
			sent := time.Now()
			code, body := statusWithKey(t, base, "/avs", revoked)
			if code == http.StatusUnauthorized {
				break
			}
			if code != http.StatusOK {
				t.Fatalf("instance %d, a key being revoked: %d %s", i+1, code, body)
			}
			if sent.Sub(at) > 2*time.Second {
				t.Fatalf("instance %d still accepted the revoked key %v after the revocation", i+1, sent.Sub(at))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	redis.Stop()
	for i, base := range instances {
		if code, body := statusWithKey(t, base, "/avs", other); code != http.StatusOK {
			t.Errorf("instance %d with Redis stopped: %d %s", i+1, code, body)
		}
	}
}
