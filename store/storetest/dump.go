package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/stakegraph/stakegraph/store"
)

// DumpState renders the content of every table of db (the API keys and
// their version left out) as sorted JSON rows, one table after another,
// without the bookkeeping columns that legitimately differ between two
// databases with the same content: data versions and the wall-clock times
// of refreshes and cursor writes. Tests compare two databases by comparing
// their dumps, and show the difference with LineDiff.
//
// Numbers are written in lowest terms, so that 0.00 and 0.0000 (numerics
// of different scales) compare equal; with decimals > 0 they are rounded to
// that many decimal places first. Quotients computed by PostgreSQL carry as
// many digits as their operands' scales give them, so the same ratio may
// come out with more digits in one database than in another when they were
// built by different paths: 18 decimals (one wei of an ETH amount) compares
// them.
func DumpState(t testing.TB, db *store.DB, decimals int) string {
	t.Helper()
	ctx := context.Background()
	var tables []string
	if err := SQL(t, db).SelectContext(ctx, &tables, `
		SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'goose%'
		  AND table_name NOT IN ('api_keys', 'api_keys_version')
		ORDER BY table_name`); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, table := range tables {
		drop := "'data_version' - 'refreshed_at' - 'dirty_since'"
		if table == "sync_cursor" {
			drop += " - 'updated_at'"
		}
		var rows []string
		if err := SQL(t, db).SelectContext(ctx, &rows, fmt.Sprintf(`SELECT (to_jsonb(t) - %s)::text FROM %q t`, drop, table)); err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			rows[i] = normaliseNumbers(t, rows[i], decimals)
		}
		sort.Strings(rows)
		fmt.Fprintf(&b, "== %s\n%s\n", table, strings.Join(rows, "\n"))
	}
	return b.String()
}

// normaliseNumbers rewrites every JSON number of row in lowest terms,
// rounded to decimals places when decimals > 0.
func normaliseNumbers(t testing.TB, row string, decimals int) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(row))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("row %s: %v", row, err)
	}
	var norm func(any) any
	norm = func(x any) any {
		switch x := x.(type) {
		case json.Number:
			r, ok := new(big.Rat).SetString(x.String())
			if !ok {
				t.Fatalf("number %s", x)
			}
			if decimals > 0 {
				return strings.TrimRight(strings.TrimRight(r.FloatString(decimals), "0"), ".")
			}
			return r.RatString()
		case []any:
			for i := range x {
				x[i] = norm(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = norm(x[k])
			}
		}
		return x
	}
	out, err := json.Marshal(norm(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// LineDiff lists the lines only in want (-) and only in got (+).
func LineDiff(want, got string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if g[l] < w[l] {
			fmt.Fprintf(&b, "- %s\n", l)
			w[l]--
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if w[l] < g[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
			g[l]--
		}
	}
	return b.String()
}
