package graph

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestCompiledOperationsAreCurrent checks that operations_gen.go compiled
// exactly the REST routes' operations as they are now: an operation edited
// since the last go generate would silently run uncompiled.
func TestCompiledOperationsAreCurrent(t *testing.T) {
	files, err := filepath.Glob("../rest/operations/*.graphql")
	if err != nil {
		t.Fatal(err)
	}
	compiled := map[string]bool{}
	for _, op := range compiledOperations {
		compiled[op.query] = true
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !compiled[string(src)] {
			t.Errorf("%s is not compiled as it is now: run go generate ./graph", f)
		}
		delete(compiled, string(src))
	}
	if len(files) == 0 || len(compiled) > 0 {
		t.Errorf("%d operation files; %d compiled operations are of none of them: run go generate ./graph", len(files), len(compiled))
	}
	if len(preparedOperations) != len(compiledOperations) {
		t.Errorf("%d operations prepared of %d compiled", len(preparedOperations), len(compiledOperations))
	}
}

// TestFieldAt checks the selection paths of compiled operations: through
// fields and fragments to a field, and nothing else.
func TestFieldAt(t *testing.T) {
	op := preparedOperations[compiledOperations[0].query]
	if op == nil {
		t.Fatal("the first compiled operation is not prepared")
	}
	if _, err := fieldAt(op.op.SelectionSet, []int{99}); err == nil {
		t.Error("a path past the selection found a field")
	}
	if _, err := fieldAt(op.op.SelectionSet, nil); err == nil {
		t.Error("an empty path found a field")
	}
	f, err := fieldAt(op.op.SelectionSet, op.paths[0])
	if err != nil || f != op.fields[0] {
		t.Errorf("the first path gave %v, %v; want the operation's first field", f, err)
	}
}

// FuzzMarshalsAsIs checks the short cut of writeResponse: whenever
// marshalsAsIs accepts valid JSON, encoding/json writes it unchanged.
func FuzzMarshalsAsIs(f *testing.F) {
	for _, seed := range []string{
		`{"a":1}`, `{"a": 1}`, `{"a":"x y"}`, `{"a":"<b>"}`, `{"a":"\"q\" \\ "}`, `["\u2028"]`,
		"[\"\xe2\x80\xa8\"]", `{"a":[1,2,{"b":null}]}`, "{\n\"a\":1}", `"\\"`, `{"a":"é"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		if !json.Valid([]byte(data)) || !marshalsAsIs([]byte(data)) {
			return
		}
		got, err := json.Marshal(wireResponse{Data: json.RawMessage(data)})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"data":` + data + `}`; string(got) != want {
			t.Errorf("json.Marshal writes %s, not %s", got, want)
		}
	})
}
