package localpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// binaries is a directory holding the PostgreSQL server programs.
type binaries struct {
	dir     string
	version string // the full version, such as "15.18"
	major   string // the major version as PG_VERSION spells it: "15", "9.6"
}

func (b binaries) path(program string) string { return filepath.Join(b.dir, program) }

// searchDirs are the places PostgreSQL server programs are installed by
// common packagers, searched after PATH.
var searchDirs = []string{
	"/usr/lib/postgresql/*/bin", // Debian, Ubuntu
	"/usr/pgsql-*/bin",          // PGDG RPMs
	"/usr/local/pgsql/bin",      // source builds
	"/opt/homebrew/opt/postgresql*/bin",
	"/usr/local/opt/postgresql*/bin",
}

// errNoBinaries is returned when no PostgreSQL installation is found.
var errNoBinaries = errors.New("no PostgreSQL binaries found: install postgresql (on Debian: apt-get install postgresql)")

// findBinaries returns the PostgreSQL installation to use. An explicit
// directory wins; otherwise the installation on PATH and those in the usual
// places are candidates. When wantMajor is set (an existing cluster's
// PG_VERSION) only that major version will do; otherwise the highest version
// wins.
func findBinaries(ctx context.Context, explicit, wantMajor string) (binaries, error) {
	var dirs []string
	if explicit != "" {
		dirs = []string{explicit}
	} else {
		if p, err := exec.LookPath("pg_ctl"); err == nil {
			if resolved, err := filepath.EvalSymlinks(p); err == nil {
				p = resolved
			}
			dirs = append(dirs, filepath.Dir(p))
		}
		for _, pattern := range searchDirs {
			matches, _ := filepath.Glob(pattern)
			dirs = append(dirs, matches...)
		}
	}

	seen := map[string]bool{}
	var found []binaries
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil || seen[abs] {
			continue
		}
		seen[abs] = true
		b, err := probeBinaries(ctx, abs)
		if err != nil {
			if explicit != "" {
				return binaries{}, err
			}
			continue
		}
		found = append(found, b)
	}
	if len(found) == 0 {
		return binaries{}, errNoBinaries
	}
	sort.SliceStable(found, func(i, j int) bool { return versionLess(found[j].version, found[i].version) })
	if wantMajor == "" {
		return found[0], nil
	}
	var have []string
	for _, b := range found {
		if b.major == wantMajor {
			return b, nil
		}
		have = append(have, b.version)
	}
	return binaries{}, fmt.Errorf("the cluster was created by PostgreSQL %s but only PostgreSQL %s is installed: install PostgreSQL %s or remove the cluster directory",
		wantMajor, strings.Join(have, ", "), wantMajor)
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+(?:\.\d+)*)`)

// probeBinaries checks that dir holds initdb, pg_ctl and postgres and asks
// postgres for its version.
func probeBinaries(ctx context.Context, dir string) (binaries, error) {
	for _, program := range []string{"initdb", "pg_ctl", "postgres"} {
		info, err := os.Stat(filepath.Join(dir, program))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return binaries{}, fmt.Errorf("%s has no %s program", dir, program)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return binaries{}, fmt.Errorf("%s/postgres --version: %w", dir, err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return binaries{}, fmt.Errorf("%s/postgres --version: unexpected output %q", dir, strings.TrimSpace(string(out)))
	}
	return binaries{dir: dir, version: m[1], major: majorOf(m[1])}, nil
}

// majorOf returns the major version of a PostgreSQL version as the
// PG_VERSION file of a data directory spells it: "15" for 15.4, "9.6" for
// 9.6.24.
func majorOf(version string) string {
	parts := strings.Split(version, ".")
	if n, err := strconv.Atoi(parts[0]); err == nil && n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1]
	}
	return parts[0]
}

// versionLess compares dotted numeric versions.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}
