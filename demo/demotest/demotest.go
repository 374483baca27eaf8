// Package demotest gives tests a fresh copy of the demo data set as of a
// fixed time. The data set is seeded once per version of the code that
// seeds it and shared, as a template database, by every test package and
// test process that asks for it.
package demotest

import (
	"context"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/demo"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// Now is the time the demo history ends at. Tests use it as the clock of
// the API under test, so that default date ranges are deterministic.
var Now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// templateName names the template database of the data set, and
// seedingPackage is the package whose code seeds it.
const (
	templateName   = "demo_mainnet_seed1"
	seedingPackage = "github.com/stakegraph/stakegraph/demo"
)

// seed loads the demo data set into the empty, migrated database db.
func seed(ctx context.Context, db *store.DB) error {
	return demo.SeedDemo(ctx, db, demo.Options{Now: Now, Seed: 1, Network: chain.Networks["mainnet"]})
}

// DB returns a fresh copy of the demo data set for t, dropped when t ends.
func DB(t testing.TB) *store.DB {
	t.Helper()
	return storetest.SharedTemplate(t, templateName, seedingPackage, seed)
}

// URL is DB for tests that connect to the database themselves or hand its
// URL to another process.
func URL(t testing.TB) string {
	t.Helper()
	return storetest.SharedTemplateURL(t, templateName, seedingPackage, seed)
}
