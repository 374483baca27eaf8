package graph

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

func TestCapMessage(t *testing.T) {
	long := strings.Repeat("y", 200)
	for _, tc := range []struct{ in, want string }{
		{`Cannot query field "x" on type "Query".`, `Cannot query field "x" on type "Query".`},
		{`Cannot query field "` + long + `" on type "Query".`, `Cannot query field "` + long[:100] + `"… (200 bytes) on type "Query".`},
		{`operation ` + long + ` not found`, `operation ` + long[:100] + `… (200 bytes) not found`},
		{`unterminated "` + long, `unterminated "` + long[:100] + `"… (200 bytes)`},
		{`escaped "a \" b" and "` + long + `"`, `escaped "a \" b" and "` + long[:100] + `"… (200 bytes)`},
		{strings.Repeat("word ", 40), strings.Repeat("word ", 40)},
	} {
		if got := capMessage(tc.in); got != tc.want {
			t.Errorf("capMessage(%.60q…) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Cuts keep characters whole, and long messages are cut as a whole.
	got := capMessage(`"` + strings.Repeat("é", 100) + `"`)
	if !utf8.ValidString(got) || !strings.Contains(got, "… (200 bytes)") {
		t.Errorf("multibyte: %q", got)
	}
	got = capMessage(strings.Repeat("word ", 1000))
	if len(got) > maxMessageBytes+30 || !strings.HasSuffix(got, "… (5000 bytes)") {
		t.Errorf("long message: %d bytes, ends %q", len(got), got[len(got)-20:])
	}
}

// TestFailuresLogOnce checks that the failures of a request, panics
// included, make one log line, and the status they call for.
func TestFailuresLogOnce(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	ctx := withFailures(context.Background(), &requestFailures{})
	recoverPanic := recoverFunc(logger)
	present := errorPresenter()
	for i := range 100 {
		ctx := graphql.WithPathContext(ctx, graphql.NewPathWithField(fmt.Sprintf("a%d", i)))
		present(ctx, recoverPanic(ctx, "boom"))
		present(ctx, fmt.Errorf("read: %w", derrors.Unavailable))
	}
	f := failuresFrom(ctx)
	if f.status() != http.StatusServiceUnavailable {
		t.Errorf("status %d", f.status())
	}
	f.log(ctx, logger)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "failed_fields=200") || !strings.Contains(lines[0], "stack=") ||
		!strings.Contains(lines[0], "level=ERROR") {
		t.Errorf("%d lines:\n%.2000s", len(lines), buf.String())
	}
}
