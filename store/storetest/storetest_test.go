package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
)

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	var n int
	if err := theServer.admin.QueryRow(`SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func currentDatabase(t *testing.T, db *store.DB) string {
	t.Helper()
	var name string
	if err := SQL(t, db).QueryRowContext(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

func countTokens(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := SQL(t, db).QueryRowContext(context.Background(), `SELECT count(*) FROM tokens`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func insertToken(t *testing.T, db *store.DB, addr string) {
	t.Helper()
	if _, err := SQL(t, db).ExecContext(context.Background(), `INSERT INTO tokens (address, symbol) VALUES ($1, 'TKN')`, addr); err != nil {
		t.Fatal(err)
	}
}

const (
	addrA = "0x000000000000000000000000000000000000000a"
	addrB = "0x000000000000000000000000000000000000000b"
)

func TestNewIsolatedAndDropped(t *testing.T) {
	var names [2]string
	// Two parallel tests, each with a database of its own.
	t.Run("group", func(t *testing.T) {
		for i := range 2 {
			t.Run("", func(t *testing.T) {
				t.Parallel()
				db := New(t)
				names[i] = currentDatabase(t, db)
				if n := countTokens(t, db); n != 0 {
					t.Fatalf("fresh database has %d tokens", n)
				}
				insertToken(t, db, addrA)
				if n := countTokens(t, db); n != 1 {
					t.Fatalf("database has %d tokens after one insert", n)
				}
			})
		}
	})
	if names[0] == "" || names[0] == names[1] {
		t.Fatalf("databases %q and %q are not distinct", names[0], names[1])
	}
	for _, name := range names {
		if databaseExists(t, name) {
			t.Errorf("database %s survived its test", name)
		}
	}
}

func TestNewIsMigrated(t *testing.T) {
	db := New(t)
	var n int
	if err := SQL(t, db).QueryRowContext(context.Background(), `SELECT count(*) FROM api_keys`).Scan(&n); err != nil {
		t.Fatalf("api_keys missing from a fresh database: %v", err)
	}
	// Migrating again is a no-op.
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestNewEmptyURL(t *testing.T) {
	db, err := sql.Open("postgres", NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("empty database has %d tables", n)
	}
}

func TestTemplate(t *testing.T) {
	name := "st_" + randomHex(t, 6)
	var fills atomic.Int32
	fill := func(ctx context.Context, db *store.DB) error {
		fills.Add(1)
		_, err := SQL(t, db).ExecContext(ctx, `INSERT INTO tokens (address, symbol) VALUES ($1, 'TKN')`, addrA)
		return err
	}
	t.Cleanup(func() { dropTemplate(t, name) })

	first := Template(t, name, fill)
	second := Template(t, name, fill)
	if got := fills.Load(); got != 1 {
		t.Errorf("fill ran %d times, want 1", got)
	}
	if currentDatabase(t, first) == currentDatabase(t, second) {
		t.Fatal("two Template calls returned the same database")
	}
	insertToken(t, first, addrB)
	if n := countTokens(t, first); n != 2 {
		t.Errorf("first copy has %d tokens, want 2", n)
	}
	if n := countTokens(t, second); n != 1 {
		t.Errorf("second copy has %d tokens, want the template's 1", n)
	}
}

func TestTemplateFillFails(t *testing.T) {
	s := testServer(t)
	base := s.baseTemplate(t)
	name := templatePrefix + "fail_" + randomHex(t, 6)
	boom := errors.New("boom")
	err := s.ensureTemplate(name, base, func(context.Context, string) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("ensureTemplate = %v, want %v", err, boom)
	}
	if databaseExists(t, name) {
		t.Errorf("failed template %s was left behind", name)
	}
}

// TestTemplateAcrossProcesses runs this test binary three times at once;
// each child asks for the same filled template, which must be filled once.
func TestTemplateAcrossProcesses(t *testing.T) {
	if name := os.Getenv("STORETEST_CHILD_TEMPLATE"); name != "" {
		db := Template(t, name, func(ctx context.Context, db *store.DB) error {
			f, err := os.OpenFile(os.Getenv("STORETEST_CHILD_LOG"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := f.WriteString("filled\n"); err != nil {
				return err
			}
			time.Sleep(300 * time.Millisecond) // widen the window for a race
			_, err = SQL(t, db).ExecContext(ctx, `INSERT INTO tokens (address, symbol) VALUES ($1, 'TKN')`, addrA)
			return err
		})
		if n := countTokens(t, db); n != 1 {
			t.Fatalf("child's copy has %d tokens, want 1", n)
		}
		return
	}
	if testing.Short() {
		t.Skip("spawns test processes")
	}
	testServer(t) // start the shared server before the children race for it
	name := "xproc_" + randomHex(t, 6)
	t.Cleanup(func() { dropTemplate(t, name) })
	logPath := filepath.Join(t.TempDir(), "fills")
	var wg sync.WaitGroup
	outputs := make([][]byte, 3)
	errs := make([]error, 3)
	for i := range outputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestTemplateAcrossProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), "STORETEST_CHILD_TEMPLATE="+name, "STORETEST_CHILD_LOG="+logPath)
			outputs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range outputs {
		if errs[i] != nil {
			t.Fatalf("child %d: %v\n%s", i, errs[i], outputs[i])
		}
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "filled\n"); n != 1 {
		t.Errorf("the template was filled %d times across processes, want 1", n)
	}
}

func TestBadTemplateName(t *testing.T) {
	for _, name := range []string{"", "Upper", "has-dash", strings.Repeat("x", 25)} {
		if templateNameRE.MatchString(name) {
			t.Errorf("template name %q accepted", name)
		}
	}
}

// dropTemplate drops every template built for the named Template.
func dropTemplate(t *testing.T, name string) {
	ctx := context.Background()
	conn, err := theServer.admin.Conn(ctx)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT datname FROM pg_database WHERE datname LIKE $1`, templatePrefix+name+"_%")
	if err != nil {
		t.Error(err)
		return
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Error(err)
		}
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		if err := theServer.drop(ctx, conn, n); err != nil {
			t.Error(err)
		}
	}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestSharedTemplate checks that a shared template is keyed on the source
// of the package that fills it, not on the test binary, so that the test
// binaries of other packages find it.
func TestSharedTemplate(t *testing.T) {
	const pkg = "github.com/stakegraph/stakegraph/store"
	name := "shared_" + randomHex(t, 6)
	t.Cleanup(func() { dropTemplate(t, name) })
	fill := func(ctx context.Context, db *store.DB) error {
		_, err := SQL(t, db).ExecContext(ctx, `INSERT INTO tokens (address, symbol) VALUES ($1, 'TKN')`, addrA)
		return err
	}
	db := SharedTemplate(t, name, pkg, fill)
	if n := countTokens(t, db); n != 1 {
		t.Errorf("the copy has %d tokens, want the template's 1", n)
	}
	key, err := sourceHash(pkg)
	if err != nil {
		t.Fatal(err)
	}
	s := testServer(t)
	if want := templatePrefix + name + "_" + shortHash(s.baseTemplate(t), name, key); !databaseExists(t, want) {
		t.Errorf("no template %s keyed on the source of %s", want, pkg)
	}
}

// TestSourceHash checks that the source key is stable, covers a package's
// imports within the module and differs between packages.
func TestSourceHash(t *testing.T) {
	hash := func(pkg string) string {
		t.Helper()
		sourceMu.Lock()
		delete(sourceSums, pkg)
		sourceMu.Unlock()
		sum, err := sourceHash(pkg)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	const storePkg, selfPkg = "github.com/stakegraph/stakegraph/store", "github.com/stakegraph/stakegraph/store/storetest"
	if a, b := hash(storePkg), hash(storePkg); a != b {
		t.Errorf("two hashes of %s differ: %s and %s", storePkg, a, b)
	}
	if hash(storePkg) == hash(selfPkg) {
		t.Errorf("%s, which imports %s, hashes the same as it", selfPkg, storePkg)
	}
	if _, err := sourceHash("github.com/stakegraph/stakegraph/no_such_package"); err == nil {
		t.Error("a package that does not exist has a source hash")
	}
}
