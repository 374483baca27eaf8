// Package storetest gives each test a fresh, migrated, empty PostgreSQL
// database of its own, dropped when the test ends.
//
// Databases are copied from template databases (CREATE DATABASE ...
// TEMPLATE), which is fast: the migrated schema is built once per set of
// migrations and kept on the server, and Template builds and keeps filled
// templates (demo data, say) the same way.
//
// The server is the one STAKEGRAPH_TEST_DATABASE_URL names (a URL whose
// role may create databases), or else a private test cluster that localpg
// runs in localpg.TestDir() for every test process of the OS user. That
// cluster keeps running between test runs so that they start fast; `make
// test-db-stop` (stakegraph localpg stop --test) stops it. It runs without
// fsync, for speed: should a machine crash corrupt it, stop it and remove
// its directory, and the next test run creates a new one.
//
// `go test ./...` runs packages as parallel processes: starting the cluster
// is serialised by localpg's file lock and building a template by a
// PostgreSQL advisory lock, so concurrent packages neither race nor repeat
// the work.
//
// Set STAKEGRAPH_TEST_KEEP_DB=1 to keep the database of a failed test (its
// URL is logged); leftover test databases are dropped after a few hours.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/localpg"
	"github.com/stakegraph/stakegraph/store"
)

// Prefixes of the databases this package creates.
const (
	templatePrefix = "stakegraph_tpl_"
	testDBPrefix   = "stakegraph_test_"
)

// Leftovers older than these are dropped when a test process starts.
const (
	staleTestDB   = 6 * time.Hour
	staleTemplate = 72 * time.Hour
)

// testPool is the connection pool of a test's database: small, since many
// test processes share one server.
var testPool = store.PoolConfig{MaxOpenConns: 8, MaxIdleConns: 8, ConnMaxLifetime: time.Hour}

// New returns a fresh, migrated, empty database for t, dropped when t ends.
func New(t testing.TB) *store.DB {
	t.Helper()
	return open(t, NewURL(t))
}

// NewURL creates a fresh, migrated, empty database for t, dropped when t
// ends, and returns its URL, for tests that connect to it themselves or hand
// it to another process.
func NewURL(t testing.TB) string {
	t.Helper()
	s := testServer(t)
	return s.createTestDB(t, s.baseTemplate(t))
}

// NewEmptyURL creates a database for t with no migrations applied, dropped
// when t ends, and returns its URL.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	return testServer(t).createTestDB(t, "template0")
}

// Template returns a fresh copy, for t, of the migrated database that fill
// filled. The filled template is built once and kept on the server, for
// every test and test process that asks for the same name with the same
// migrations and the same test binary (a rebuilt binary may fill
// differently, so it gets a template of its own). name is a short
// identifier: lowercase letters, digits and underscores, at most 24 bytes.
// fill must not keep connections to the database open after it returns.
func Template(t testing.TB, name string, fill func(ctx context.Context, db *store.DB) error) *store.DB {
	t.Helper()
	return open(t, TemplateURL(t, name, fill))
}

// TemplateURL is Template for tests that want the database's URL.
func TemplateURL(t testing.TB, name string, fill func(ctx context.Context, db *store.DB) error) string {
	t.Helper()
	exe, err := executableHash()
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return templateURL(t, name, exe, fill)
}

// templateURL returns a fresh copy, for t, of the filled template that name
// and key identify, building it with fill if needed.
func templateURL(t testing.TB, name, key string, fill func(ctx context.Context, db *store.DB) error) string {
	t.Helper()
	if !templateNameRE.MatchString(name) {
		t.Fatalf("storetest: bad template name %q: want 1 to 24 of [a-z0-9_]", name)
	}
	s := testServer(t)
	base := s.baseTemplate(t)
	tmpl := templatePrefix + name + "_" + shortHash(base, name, key)
	err := s.ensureTemplate(tmpl, base, func(ctx context.Context, url string) error {
		db, err := store.Open(ctx, url, testPool)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := fill(ctx, db); err != nil {
			return fmt.Errorf("fill template %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return s.createTestDB(t, tmpl)
}

// SharedTemplate is Template for a filled template that several test
// packages share: it is keyed on the Go source of the packages fill runs
// (pkg and the packages of this module it imports, found with `go list`)
// rather than on the test binary, so the test binaries of different
// packages, raced or not, copy the one template the first of them built.
// fill must depend only on that code: it must run pkg's exported functions
// with fixed arguments, and name must say which. When `go list` cannot
// run, the template is keyed on the test binary, as Template's are.
func SharedTemplate(t testing.TB, name, pkg string, fill func(ctx context.Context, db *store.DB) error) *store.DB {
	t.Helper()
	return open(t, SharedTemplateURL(t, name, pkg, fill))
}

// SharedTemplateURL is SharedTemplate for tests that want the database's
// URL.
func SharedTemplateURL(t testing.TB, name, pkg string, fill func(ctx context.Context, db *store.DB) error) string {
	t.Helper()
	key, err := sourceHash(pkg)
	if err != nil {
		t.Logf("storetest: template %s is keyed on the test binary: %v", name, err)
		if key, err = executableHash(); err != nil {
			t.Fatalf("storetest: %v", err)
		}
	}
	return templateURL(t, name, key, fill)
}

var templateNameRE = regexp.MustCompile(`^[a-z0-9_]{1,24}$`)

func open(t testing.TB, url string) *store.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := store.Open(ctx, url, testPool)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	// Cleanups run last-in first-out: this one runs before the drop that
	// createTestDB registered.
	t.Cleanup(func() { db.Close() })
	return db
}

// server is the PostgreSQL server the tests of this process use.
type server struct {
	admin *sql.DB                  // connected to the server's maintenance database
	dbURL func(name string) string // the URL of a database on the server
	force bool                     // DROP DATABASE ... WITH (FORCE) is supported

	mu        sync.Mutex
	templates map[string]*templateResult // built or checked in this process
}

type templateResult struct {
	done chan struct{}
	err  error
}

var (
	serverOnce sync.Once
	theServer  *server
	serverErr  error
)

// testServer returns the server, connecting to it (and starting the test
// cluster) the first time.
func testServer(t testing.TB) *server {
	t.Helper()
	serverOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		theServer, serverErr = connectServer(ctx)
	})
	if serverErr != nil {
		t.Fatalf("storetest: %v", serverErr)
	}
	return theServer
}

func connectServer(ctx context.Context) (*server, error) {
	var adminURL string
	var dbURL func(string) string
	if raw := os.Getenv("STAKEGRAPH_TEST_DATABASE_URL"); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, errors.New("STAKEGRAPH_TEST_DATABASE_URL must be a postgres:// URL")
		}
		adminURL = raw
		dbURL = func(name string) string {
			v := *u
			v.Path = "/" + name
			v.RawPath = ""
			return v.String()
		}
	} else {
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		cluster, err := localpg.Start(ctx, localpg.TestOptions(logger))
		if err != nil {
			return nil, fmt.Errorf("test PostgreSQL server: %w", err)
		}
		// The cluster outlives this process, for the next test run; the
		// process's hold on it ends when the process exits.
		if err := cluster.KeepRunning(); err != nil {
			return nil, err
		}
		adminURL = cluster.URL("postgres")
		dbURL = cluster.URL
	}
	admin, err := sql.Open("postgres", adminURL)
	if err != nil {
		return nil, err
	}
	admin.SetMaxOpenConns(4)
	var version int
	if err := admin.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		admin.Close()
		return nil, fmt.Errorf("connect to the test server: %w", err)
	}
	s := &server{admin: admin, dbURL: dbURL, force: version >= 130000, templates: map[string]*templateResult{}}
	s.dropLeftovers(ctx)
	return s, nil
}

// baseTemplate returns the name of the template that holds the migrated,
// empty schema, building it if needed.
func (s *server) baseTemplate(t testing.TB) string {
	t.Helper()
	hash, err := migrationsHash()
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	name := templatePrefix + "schema_" + hash[:16]
	err = s.ensureTemplate(name, "template0", func(ctx context.Context, url string) error {
		db, err := sql.Open("postgres", url)
		if err != nil {
			return err
		}
		defer db.Close()
		return store.Migrate(ctx, db)
	})
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return name
}

// ensureTemplate makes sure template database name exists, building it
// from source with build otherwise. It is safe across goroutines and
// processes; each process checks a name once.
func (s *server) ensureTemplate(name, source string, build func(ctx context.Context, url string) error) error {
	s.mu.Lock()
	r, ok := s.templates[name]
	if !ok {
		r = &templateResult{done: make(chan struct{})}
		s.templates[name] = r
	}
	s.mu.Unlock()
	if ok {
		<-r.done
		return r.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	r.err = s.buildTemplate(ctx, name, source, build)
	close(r.done)
	return r.err
}

func (s *server) buildTemplate(ctx context.Context, name, source string, build func(ctx context.Context, url string) error) error {
	conn, err := s.admin.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to the test server: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lockKey(name)); err != nil {
		return fmt.Errorf("lock template %s: %w", name, err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, lockKey(name))

	var isTemplate bool
	err = conn.QueryRowContext(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, name).Scan(&isTemplate)
	switch {
	case err == nil && isTemplate:
		return touch(ctx, conn, name)
	case err == nil:
		// A build that did not finish; start over.
		if err := s.drop(ctx, conn, name); err != nil {
			return err
		}
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("look up template %s: %w", name, err)
	}

	start := time.Now()
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+pq.QuoteIdentifier(name)+` TEMPLATE `+pq.QuoteIdentifier(source)); err != nil {
		return fmt.Errorf("create template %s: %w", name, err)
	}
	if err := build(ctx, s.dbURL(name)); err != nil {
		_ = s.drop(ctx, conn, name)
		return fmt.Errorf("build template %s: %w", name, err)
	}
	// A template must have no connections when it is copied; refuse new
	// ones and end any the build left behind.
	if _, err := conn.ExecContext(ctx, `ALTER DATABASE `+pq.QuoteIdentifier(name)+` WITH ALLOW_CONNECTIONS false`); err != nil {
		return fmt.Errorf("seal template %s: %w", name, err)
	}
	if _, err := conn.ExecContext(ctx, terminateQuery, name); err != nil {
		return fmt.Errorf("seal template %s: %w", name, err)
	}
	if _, err := conn.ExecContext(ctx, `ALTER DATABASE `+pq.QuoteIdentifier(name)+` WITH IS_TEMPLATE true`); err != nil {
		return fmt.Errorf("seal template %s: %w", name, err)
	}
	slog.Debug("storetest: built template", "name", name, "duration", time.Since(start))
	return touch(ctx, conn, name)
}

// touch records on a template when it was last used, for dropLeftovers.
func touch(ctx context.Context, conn *sql.Conn, name string) error {
	_, err := conn.ExecContext(ctx, `COMMENT ON DATABASE `+pq.QuoteIdentifier(name)+` IS `+pq.QuoteLiteral(strconv.FormatInt(time.Now().Unix(), 10)))
	if err != nil {
		return fmt.Errorf("touch template %s: %w", name, err)
	}
	return nil
}

// createTestDB copies template into a new database for t, dropped when t
// ends, and returns its URL.
func (s *server) createTestDB(t testing.TB, template string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%s%d_%s", testDBPrefix, time.Now().Unix(), hex.EncodeToString(rnd[:]))
	if _, err := s.admin.ExecContext(ctx, `CREATE DATABASE `+pq.QuoteIdentifier(name)+` TEMPLATE `+pq.QuoteIdentifier(template)); err != nil {
		t.Fatalf("storetest: create test database from %s: %v", template, err)
	}
	dbURL := s.dbURL(name)
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("STAKEGRAPH_TEST_KEEP_DB") != "" {
			t.Logf("storetest: keeping the database of the failed test: %s", dbURL)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := s.admin.Conn(ctx)
		if err != nil {
			t.Errorf("storetest: drop %s: %v", name, err)
			return
		}
		defer conn.Close()
		if err := s.drop(ctx, conn, name); err != nil {
			t.Errorf("storetest: %v", err)
		}
	})
	return dbURL
}

// drop drops database name, ending its connections first.
func (s *server) drop(ctx context.Context, conn *sql.Conn, name string) error {
	var isTemplate bool
	err := conn.QueryRowContext(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, name).Scan(&isTemplate)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	if isTemplate {
		// A template cannot be dropped; undo that first.
		if _, err := conn.ExecContext(ctx, `ALTER DATABASE `+pq.QuoteIdentifier(name)+` WITH IS_TEMPLATE false`); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
	}
	q := `DROP DATABASE IF EXISTS ` + pq.QuoteIdentifier(name)
	if s.force {
		q += ` WITH (FORCE)`
	} else if _, err := conn.ExecContext(ctx, terminateQuery, name); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}

// terminateQuery ends every connection to database $1.
const terminateQuery = `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`

// dropLeftovers drops the test databases of test processes that died
// before their cleanup, and templates nobody has used for days. Only one
// process at a time does it; the others skip it.
func (s *server) dropLeftovers(ctx context.Context) {
	conn, err := s.admin.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	var locked bool
	key := lockKey("storetest leftovers")
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&locked); err != nil || !locked {
		return
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, key)

	rows, err := conn.QueryContext(ctx, `
		SELECT d.datname, coalesce(shobj_description(d.oid, 'pg_database'), '')
		FROM pg_database d
		WHERE d.datname LIKE 'stakegraph\_test\_%' OR d.datname LIKE 'stakegraph\_tpl\_%'`)
	if err != nil {
		return
	}
	type candidate struct{ name, comment string }
	var all []candidate
	for rows.Next() {
		var c candidate
		if rows.Scan(&c.name, &c.comment) == nil {
			all = append(all, c)
		}
	}
	rows.Close()
	now := time.Now()
	for _, c := range all {
		var created int64
		var limit time.Duration
		if strings.HasPrefix(c.name, testDBPrefix) {
			created, _ = strconv.ParseInt(strings.SplitN(strings.TrimPrefix(c.name, testDBPrefix), "_", 2)[0], 10, 64)
			limit = staleTestDB
		} else {
			created, _ = strconv.ParseInt(c.comment, 10, 64)
			limit = staleTemplate
		}
		if created == 0 || now.Sub(time.Unix(created, 0)) < limit {
			continue
		}
		// A template some other process is copying right now cannot be
		// dropped; that is fine, the next run retries.
		if strings.HasPrefix(c.name, templatePrefix) {
			var locked bool
			if conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, lockKey(c.name)).Scan(&locked) != nil || !locked {
				continue
			}
			_ = s.drop(ctx, conn, c.name)
			conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, lockKey(c.name))
			continue
		}
		_ = s.drop(ctx, conn, c.name)
	}
}

// lockKey maps a name to a PostgreSQL advisory lock key.
func lockKey(name string) int64 {
	sum := sha256.Sum256([]byte("stakegraph storetest " + name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		io.WriteString(h, p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

var (
	migrationsOnce sync.Once
	migrationsSum  string
	migrationsErr  error
)

// migrationsHash hashes the names and contents of the store's embedded
// migration files, so that a changed migration gets a new base template.
func migrationsHash() (string, error) {
	migrationsOnce.Do(func() {
		fsys := store.Migrations()
		names, err := fs.Glob(fsys, "*.sql")
		if err != nil {
			migrationsErr = err
			return
		}
		if len(names) == 0 {
			migrationsErr = errors.New("the store embeds no migrations")
			return
		}
		sort.Strings(names)
		h := sha256.New()
		for _, n := range names {
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				migrationsErr = err
				return
			}
			fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
			h.Write(b)
		}
		migrationsSum = hex.EncodeToString(h.Sum(nil))
	})
	return migrationsSum, migrationsErr
}

var (
	exeOnce sync.Once
	exeSum  string
	exeErr  error
)

// executableHash hashes the running test binary: filled templates depend on
// the code that fills them.
func executableHash() (string, error) {
	exeOnce.Do(func() {
		path, err := os.Executable()
		if err != nil {
			exeErr = fmt.Errorf("find the test binary: %w", err)
			return
		}
		f, err := os.Open(path)
		if err != nil {
			exeErr = fmt.Errorf("read the test binary: %w", err)
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			exeErr = fmt.Errorf("read the test binary: %w", err)
			return
		}
		exeSum = hex.EncodeToString(h.Sum(nil))
	})
	return exeSum, exeErr
}

var (
	sourceMu   sync.Mutex
	sourceSums = map[string]string{}
)

// sourceHash hashes the Go and embedded files of pkg and of the packages
// of its module that it imports, with the module's go.sum, which pins the
// versions of the packages of other modules.
func sourceHash(pkg string) (string, error) {
	sourceMu.Lock()
	defer sourceMu.Unlock()
	if sum, ok := sourceSums[pkg]; ok {
		return sum, nil
	}
	const format = `{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}}|{{.}}{{end}}{{range .EmbedFiles}}|{{.}}{{end}}{{"\n"}}{{end}}{{end}}`
	cmd := exec.Command("go", "list", "-deps", "-f", format, pkg)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %v: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	modDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %v", err)
	}
	// Paths are hashed relative to the module's directory, so that clones
	// of the same commit share their templates.
	root := strings.TrimSpace(string(modDir))
	files := []string{"go.sum"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		dir, err := filepath.Rel(root, parts[0])
		if err != nil {
			return "", err
		}
		for _, f := range parts[1:] {
			files = append(files, filepath.Join(dir, f))
		}
	}
	if len(files) < 2 {
		return "", fmt.Errorf("go list %s: no files in this module", pkg)
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	sourceSums[pkg] = sum
	return sum, nil
}

var (
	rawMu sync.Mutex
	raw   = map[string]*sqlx.DB{}
)

// SQL returns a connection pool of its own to db's database, for tests
// that check the store's answers with SQL of their own: the store keeps
// its pool unexported, so that only package store speaks SQL. The pool is
// shared by the tests of the process that ask for the same database and
// closed when t ends.
func SQL(t testing.TB, db *store.DB) *sqlx.DB {
	t.Helper()
	url := db.URL()
	rawMu.Lock()
	defer rawMu.Unlock()
	if p, ok := raw[url]; ok {
		return p
	}
	p, err := sqlx.Open("postgres", url)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	p.SetMaxOpenConns(8)
	raw[url] = p
	t.Cleanup(func() {
		rawMu.Lock()
		defer rawMu.Unlock()
		if raw[url] == p {
			delete(raw, url)
			p.Close()
		}
	})
	return p
}
