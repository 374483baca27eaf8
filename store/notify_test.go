package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

func TestListenVersions(t *testing.T) {
	db := storetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The service_state row whose data version changes.
	if err := db.EnsureNetwork(ctx, "mainnet"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	versions := make(chan int64, 10)
	listening := make(chan error, 1)
	go func() {
		listening <- db.ListenVersions(ctx, func(ch string, v int64) {
			got <- ch
			if ch == store.DataVersionChannel {
				versions <- v
			}
		})
	}()
	await := func(want string) {
		t.Helper()
		select {
		case ch := <-got:
			if ch != want {
				t.Fatalf("announced on %s; want %s", ch, want)
			}
		case err := <-listening:
			t.Fatalf("ListenVersions ended: %v", err)
		case <-time.After(time.Minute):
			t.Fatalf("nothing announced on %s within a minute", want)
		}
	}

	// LISTEN takes effect at once, but the goroutine may not have run it
	// yet: bump until the first announcement arrives.
	bump := func() {
		t.Helper()
		if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.BumpDataVersion(ctx) }); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for first := false; !first; {
		bump()
		select {
		case ch := <-got:
			first = ch == store.DataVersionChannel
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no announcement of a data version change")
			}
		}
	}
	// The announcements of the bumps made while LISTEN was taking effect
	// may still be on their way: wait for that of the latest bump (the
	// callback queues the channel before the version) before going on.
	latest, err := db.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(-1); v != latest; {
		select {
		case v = <-versions:
		case <-time.After(time.Minute):
			t.Fatalf("the latest data version %d was not announced within a minute", latest)
		}
	}
	for len(got) > 0 {
		<-got
	}

	bump()
	await(store.DataVersionChannel)
	if v, err := db.DataVersion(ctx); err != nil || <-versions != v {
		t.Errorf("the announced version is not the data version %d (%v)", v, err)
	}
	if _, err := db.CreateAPIKey(ctx, "announced", nil); err != nil {
		t.Fatal(err)
	}
	await(store.APIKeysVersionChannel)
	// A transaction that rolls back announces nothing.
	_ = db.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.BumpDataVersion(ctx); err != nil {
			return err
		}
		return context.Canceled
	})
	bump()
	await(store.DataVersionChannel)
	select {
	case ch := <-got:
		t.Errorf("an extra announcement on %s", ch)
	default:
	}
	cancel()
	if err := <-listening; err != nil {
		t.Errorf("ListenVersions: %v", err)
	}
}
