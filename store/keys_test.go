package store_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

var keyRE = regexp.MustCompile(`^sg_[0-9a-f]{40}$`)

func TestAPIKeys(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)

	limit := 120
	alice, err := db.CreateAPIKey(ctx, "alice", &limit)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := db.CreateAPIKey(ctx, "bob", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{alice, bob} {
		if !keyRE.MatchString(k) {
			t.Errorf("key %q does not look like sg_ and 40 hex digits", k)
		}
	}
	if alice == bob {
		t.Fatal("two keys are equal")
	}

	keys, err := db.ListAPIKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].Name != "alice" || keys[1].Name != "bob" {
		t.Fatalf("ListAPIKeys = %+v, want alice and bob", keys)
	}
	if keys[0].Prefix != alice[:11] || !strings.HasPrefix(alice, keys[0].Prefix) {
		t.Errorf("prefix %q is not the start of key %q", keys[0].Prefix, alice)
	}
	if keys[0].RateLimitPerMinute == nil || *keys[0].RateLimitPerMinute != 120 {
		t.Errorf("alice's rate limit = %v, want 120", keys[0].RateLimitPerMinute)
	}
	if keys[1].RateLimitPerMinute != nil {
		t.Errorf("bob's rate limit = %v, want none", *keys[1].RateLimitPerMinute)
	}
	if keys[0].CreatedAt.IsZero() || keys[0].RevokedAt != nil {
		t.Errorf("alice: created %v, revoked %v", keys[0].CreatedAt, keys[0].RevokedAt)
	}

	// Only the hash is stored.
	var hashMatches, plainStored bool
	if err := storetest.SQL(t, db).QueryRowContext(ctx, `
		SELECT key_hash = sha256(convert_to($1, 'UTF8')),
		       position(convert_to($1, 'UTF8') in key_hash) > 0 OR key_prefix = $1 OR name = $1
		FROM api_keys WHERE name = 'alice'`, alice).Scan(&hashMatches, &plainStored); err != nil {
		t.Fatal(err)
	}
	if !hashMatches || plainStored {
		t.Errorf("stored hash is the key's SHA-256: %v; plain key stored: %v", hashMatches, plainStored)
	}

	active, err := db.ActiveAPIKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 2 || active[store.HashAPIKey(alice)].Name != "alice" || active[store.HashAPIKey(bob)].Name != "bob" {
		t.Fatalf("ActiveAPIKeys = %+v", active)
	}
	if _, ok := active[store.HashAPIKey(alice+"x")]; ok {
		t.Error("a wrong key matched")
	}

	if err := db.RevokeAPIKey(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeAPIKey(ctx, "alice"); !errors.Is(err, derrors.NotFound) {
		t.Errorf("revoking twice: %v, want NotFound", err)
	}
	if err := db.RevokeAPIKey(ctx, "nobody"); !errors.Is(err, derrors.NotFound) {
		t.Errorf("revoking an unknown key: %v, want NotFound", err)
	}
	active, err = db.ActiveAPIKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := active[store.HashAPIKey(alice)]; ok || len(active) != 1 {
		t.Errorf("after revoking alice ActiveAPIKeys = %+v", active)
	}
	keys, err = db.ListAPIKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if keys[0].RevokedAt == nil {
		t.Error("ListAPIKeys does not show alice as revoked")
	}
}

func TestCreateAPIKeyInvalid(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	if _, err := db.CreateAPIKey(ctx, "dup", nil); err != nil {
		t.Fatal(err)
	}
	zero, negative := 0, -5
	for _, tc := range []struct {
		name  string
		limit *int
	}{
		{"dup", nil},
		{"", nil},
		{"  ", nil},
		{"zero-limit", &zero},
		{"negative-limit", &negative},
	} {
		_, err := db.CreateAPIKey(ctx, tc.name, tc.limit)
		if !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("CreateAPIKey(%q, %v) = %v, want InvalidArgument", tc.name, tc.limit, err)
		}
	}
	// A revoked key's name stays taken, so that logs stay unambiguous.
	if err := db.RevokeAPIKey(ctx, "dup"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateAPIKey(ctx, "dup", nil); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("reusing a revoked key's name: %v, want InvalidArgument", err)
	}
}

// TestAPIKeysVersion checks that every change to the keys increments the
// keys version in its own transaction, and that the well-formedness check
// accepts exactly the keys CreateAPIKey makes.
func TestAPIKeysVersion(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	version := func() int64 {
		t.Helper()
		v, err := db.APIKeysVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v0 := version()
	key, err := db.CreateAPIKey(ctx, "v", nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := version()
	if v1 <= v0 {
		t.Errorf("version %d after creating a key, was %d", v1, v0)
	}
	if !store.WellFormedAPIKey(key) || store.APIKeyPrefix(key) != key[:11] {
		t.Errorf("key %q: well-formed %v, prefix %q", key, store.WellFormedAPIKey(key), store.APIKeyPrefix(key))
	}
	for _, bad := range []string{"", "sg_", key + "0", key[:len(key)-1], strings.ToUpper(key), "xx" + key[2:], key[:10] + "g" + key[11:]} {
		if store.WellFormedAPIKey(bad) {
			t.Errorf("WellFormedAPIKey(%q) = true", bad)
		}
	}

	// A change not yet committed is not visible, and neither is its count.
	tx, err := storetest.SQL(t, db).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = now() WHERE name = 'v'`); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != v1 {
		t.Errorf("version %d during an uncommitted revocation, want %d", v, v1)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	v2 := version()
	if v2 <= v1 {
		t.Errorf("version %d after revoking a key, was %d", v2, v1)
	}
	// Changes by hand count too.
	if _, err := storetest.SQL(t, db).ExecContext(ctx, `UPDATE api_keys SET rate_limit_per_minute = 5`); err != nil {
		t.Fatal(err)
	}
	if v := version(); v <= v2 {
		t.Errorf("version %d after an edit by hand, was %d", v, v2)
	}
}
