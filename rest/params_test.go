package rest

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

func query(t *testing.T, raw string) *params {
	t.Helper()
	v, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return newParams(v)
}

// wantParamError checks that p failed on the named parameter with a 422.
func wantParamError(t *testing.T, p *params, name string) {
	t.Helper()
	err := p.Err()
	var pe *ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a ParamError for %q", err, name)
	}
	if pe.Name != name {
		t.Errorf("error names %q, want %q", pe.Name, name)
	}
	if !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("error %v does not wrap derrors.InvalidArgument", err)
	}
	if !strings.Contains(err.Error(), `"`+name+`"`) {
		t.Errorf("message %q does not name the parameter", err.Error())
	}
}

func TestBool(t *testing.T) {
	for raw, want := range map[string]bool{"": false, "withTvl=": false, "withTvl=false": false, "withTvl=true": true, "withTvl=true&withTvl=x": true} {
		p := query(t, raw)
		if got := p.Bool("withTvl"); got != want || p.Err() != nil {
			t.Errorf("%q: got %v, %v; want %v", raw, got, p.Err(), want)
		}
	}
	for _, raw := range []string{"withTvl=1", "withTvl=TRUE", "withTvl=yes", "withTvl=%00"} {
		p := query(t, raw)
		p.Bool("withTvl")
		wantParamError(t, p, "withTvl")
	}
}

func TestEnumAndSort(t *testing.T) {
	p := query(t, "searchMode=startsWith&sortByApy=desc")
	if got := p.Enum("searchMode", "contains", "contains", "startsWith"); got != "startsWith" {
		t.Errorf("searchMode = %q", got)
	}
	if got := p.Sort("sortByApy"); got == nil || *got != "desc" {
		t.Errorf("sortByApy = %v", got)
	}
	if got := p.Sort("sortByTvl"); got != nil {
		t.Errorf("absent sortByTvl = %q, want nil", *got)
	}
	if got := p.Enum("missing", "contains", "contains", "startsWith"); got != "contains" {
		t.Errorf("default = %q", got)
	}
	if p.Err() != nil {
		t.Fatal(p.Err())
	}

	p = query(t, "sortByApy=DESC")
	p.Sort("sortByApy")
	wantParamError(t, p, "sortByApy")
	if !strings.Contains(p.Err().Error(), `"asc", "desc"`) {
		t.Errorf("message %q does not list the allowed values", p.Err())
	}
}

func TestFirstErrorWins(t *testing.T) {
	p := query(t, "withTvl=maybe&take=-1")
	p.Bool("withTvl")
	p.Page()
	wantParamError(t, p, "withTvl")
}

func TestPage(t *testing.T) {
	p := query(t, "")
	if skip, take := p.Page(); skip != 0 || take != 12 || p.Err() != nil {
		t.Errorf("defaults = %d, %d, %v", skip, take, p.Err())
	}
	p = query(t, "skip=24&take=1000")
	if skip, take := p.Page(); skip != 24 || take != 1000 || p.Err() != nil {
		t.Errorf("got %d, %d, %v", skip, take, p.Err())
	}
	p = query(t, "take=1&skip=0")
	if skip, take := p.Page(); skip != 0 || take != 1 || p.Err() != nil {
		t.Errorf("take=1: got %d, %d, %v", skip, take, p.Err())
	}
	for _, tc := range []struct{ raw, name string }{
		{"take=1001", "take"},
		{"take=0", "take"},
		{"take=-1", "take"},
		{"take=+5", "take"},
		{"take=1.5", "take"},
		{"take=ten", "take"},
		{"take=99999999999999999999999", "take"},
		{"skip=-1", "skip"},
		{"skip=2147483648", "skip"},
		{"skip=0x10", "skip"},
	} {
		p := query(t, tc.raw)
		p.Page()
		wantParamError(t, p, tc.name)
	}
}

func TestAddressAndHash(t *testing.T) {
	const mixed = "0xAbCdEf0123456789aBcDeF0123456789AbCdEf01"
	p := query(t, "operatorAddress="+mixed+"&txHash=0x"+strings.Repeat("Ab", 32))
	if got := p.Address("operatorAddress"); got == nil || *got != strings.ToLower(mixed) {
		t.Errorf("address = %v", got)
	}
	if got := p.Hash("txHash"); got == nil || *got != "0x"+strings.Repeat("ab", 32) {
		t.Errorf("hash = %v", got)
	}
	if p.Address("strategyAddress") != nil || p.Err() != nil {
		t.Errorf("absent address: %v", p.Err())
	}
	for _, bad := range []string{"0x123", mixed[2:], mixed + "0", "0xg" + mixed[3:], " " + mixed} {
		p := query(t, "operatorAddress="+url.QueryEscape(bad))
		p.Address("operatorAddress")
		wantParamError(t, p, "operatorAddress")
	}
	p = query(t, "txHash="+mixed)
	p.Hash("txHash")
	wantParamError(t, p, "txHash")

	if _, err := pathAddress("address", "0xnothex"); !errors.Is(err, derrors.InvalidArgument) || !strings.Contains(err.Error(), "path parameter") {
		t.Errorf("pathAddress error = %v", err)
	}
	if got, err := pathAddress("address", mixed); err != nil || got != strings.ToLower(mixed) {
		t.Errorf("pathAddress = %q, %v", got, err)
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2024, 4, 11, 8, 31, 11, 0, time.UTC)
	for in, w := range map[string]time.Time{
		"2024-04-11T08:31:11Z":          want,
		"2024-04-11T08:31:11.000Z":      want,
		"2024-04-11T08:31:11.5Z":        want.Add(500 * time.Millisecond),
		"2024-04-11T10:31:11+02:00":     want,
		"2024-04-11T10:31:11.000+02:00": want,
		"2024-04-11T10:31:11 02:00":     want, // '+' decoded as a space
		"2024-04-11T05:31:11-03:00":     want,
		"2024-04-11T08:31:11.000":       want,
		"2024-04-11T08:31:11":           want,
		"2024-04-11T08:31":              want.Add(-11 * time.Second),
		"2024-04-11T08:31Z":             want.Add(-11 * time.Second),
		"2024-04-11T10:31+02:00":        want.Add(-11 * time.Second),
		"2024-04-11":                    time.Date(2024, 4, 11, 0, 0, 0, 0, time.UTC),
	} {
		got, ok := parseTime(in)
		if !ok || !got.Equal(w) || got.Location() != time.UTC {
			t.Errorf("parseTime(%q) = %v, %v; want %v", in, got, ok, w)
		}
	}
	for _, in := range []string{"yesterday", "2024-13-01", "2024-02-30", "2024-04-11T25:00:00Z", "11/04/2024", "1712824271", "2024-04-11T08:31:11+2", " ", "2024-04-11 08:31:11"} {
		if got, ok := parseTime(in); ok {
			t.Errorf("parseTime(%q) = %v, want failure", in, got)
		}
	}
	p := query(t, "startAt=soon")
	p.Time("startAt")
	wantParamError(t, p, "startAt")
}

// FuzzParams checks that no query string makes the parser panic and that
// every failure is a ParamError.
func FuzzParams(f *testing.F) {
	for _, s := range []string{"take=5", "startAt=2024-04-11T08:31:11 02:00", "withTvl=%ff", "skip=-0", "txHash=0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		for name := range v {
			p := newParams(v)
			p.Bool(name)
			p.Sort(name)
			p.Enum(name, "a", "a", "b")
			p.Page()
			p.Address(name)
			p.Hash(name)
			p.Time(name)
			p.Text(name)
			var pe *ParamError
			if err := p.Err(); err != nil && !errors.As(err, &pe) {
				t.Fatalf("error %v is not a ParamError", err)
			}
		}
	})
}
