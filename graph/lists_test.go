package graph_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

type avsRecord struct {
	Address        string
	MetadataName   string
	TotalStakers   int
	TotalOperators int
	MaxApy         string
	MaxApyNumber   float64
	CreatedAtBlock string
	CreatedAt      string
	Tvl            struct{ Tvl float64 }
}

type avsListData struct {
	AvsList struct {
		Data []avsRecord
		Meta meta
	}
}

const avsListQuery = `
	query($mode: SearchMode, $text: String, $apy: SortOrder, $tvl: SortOrder, $stakers: SortOrder,
	      $operators: SortOrder, $all: Boolean, $skip: Int, $take: Int) {
		avsList(searchMode: $mode, searchByText: $text, sortByApy: $apy, sortByTvl: $tvl,
		        sortByTotalStakers: $stakers, sortByTotalOperators: $operators,
		        includeInvisible: $all, skip: $skip, take: $take) {
			data { address metadataName totalStakers totalOperators maxApy maxApyNumber
			       createdAtBlock createdAt tvl { tvl } }
			meta { total skip take }
		}
	}`

func TestAVSList(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())

	visible := sqlInt(t, db, `
		SELECT count(*) FROM avs a
		WHERE NOT EXISTS (SELECT 1 FROM curated_avs_metadata c WHERE c.avs_address = a.address AND NOT c.is_visible)`)
	all := sqlInt(t, db, `SELECT count(*) FROM avs`)
	if visible == all || visible < 20 {
		t.Fatalf("the demo data should have some invisible AVS among many: %d visible of %d", visible, all)
	}

	t.Run("default page", func(t *testing.T) {
		got := query[avsListData](c, avsListQuery, nil).AvsList
		checkMeta(t, "avsList", got.Meta, len(got.Data), visible, 0, 12)
		var created []string
		for _, a := range got.Data {
			created = append(created, a.CreatedAt)
			if a.Address != lower(a.Address) || len(a.Address) != 42 {
				t.Errorf("address %q is not a lowercase address", a.Address)
			}
			if a.MaxApyNumber != parseFloat(t, a.MaxApy) {
				t.Errorf("maxApy %q but maxApyNumber %v", a.MaxApy, a.MaxApyNumber)
			}
		}
		ordered(t, "createdAt", created, false)
	})

	t.Run("paging", func(t *testing.T) {
		whole := query[avsListData](c, avsListQuery, map[string]any{"take": 1000}).AvsList
		checkMeta(t, "whole", whole.Meta, len(whole.Data), visible, 0, 1000)
		page := query[avsListData](c, avsListQuery, map[string]any{"skip": 10, "take": 5}).AvsList
		checkMeta(t, "page", page.Meta, len(page.Data), visible, 10, 5)
		for i, a := range page.Data {
			if a.Address != whole.Data[10+i].Address {
				t.Errorf("page record %d is %s, want %s", i, a.Address, whole.Data[10+i].Address)
			}
		}
		beyond := query[avsListData](c, avsListQuery, map[string]any{"skip": visible, "take": 5}).AvsList
		checkMeta(t, "beyond", beyond.Meta, len(beyond.Data), visible, visible, 5)
	})

	t.Run("invisible", func(t *testing.T) {
		got := query[avsListData](c, avsListQuery, map[string]any{"all": true, "take": 1000}).AvsList
		checkMeta(t, "includeInvisible", got.Meta, len(got.Data), all, 0, 1000)
		invisible := sqlString(t, db, `SELECT avs_address FROM curated_avs_metadata WHERE NOT is_visible LIMIT 1`)
		if !slices.ContainsFunc(got.Data, func(a avsRecord) bool { return a.Address == invisible }) {
			t.Errorf("invisible AVS %s missing with includeInvisible", invisible)
		}
		def := query[avsListData](c, avsListQuery, map[string]any{"take": 1000}).AvsList
		if slices.ContainsFunc(def.Data, func(a avsRecord) bool { return a.Address == invisible }) {
			t.Errorf("invisible AVS %s listed by default", invisible)
		}
		// A lookup by address finds it anyway.
		one := query[struct{ Avs *avsRecord }](c, `query($a: Address!) { avs(address: $a) { address } }`, map[string]any{"a": invisible})
		if one.Avs == nil {
			t.Errorf("avs(%s) is null", invisible)
		}
	})

	t.Run("sorts", func(t *testing.T) {
		for _, dir := range []string{"asc", "desc"} {
			desc := dir == "desc"
			page := func(arg string) []avsRecord {
				return query[avsListData](c, avsListQuery, map[string]any{arg: dir, "take": 1000}).AvsList.Data
			}
			var apy, tvl []float64
			var stakers, operators []int
			for _, a := range page("apy") {
				apy = append(apy, a.MaxApyNumber)
			}
			for _, a := range page("tvl") {
				tvl = append(tvl, a.Tvl.Tvl)
			}
			for _, a := range page("stakers") {
				stakers = append(stakers, a.TotalStakers)
			}
			for _, a := range page("operators") {
				operators = append(operators, a.TotalOperators)
			}
			ordered(t, "maxApy "+dir, apy, desc)
			ordered(t, "tvl "+dir, tvl, desc)
			ordered(t, "totalStakers "+dir, stakers, desc)
			ordered(t, "totalOperators "+dir, operators, desc)
			if len(apy) != visible || len(tvl) != visible {
				t.Errorf("sorted lists have %d and %d records, want %d", len(apy), len(tvl), visible)
			}
		}
	})

	t.Run("search", func(t *testing.T) {
		name := sqlString(t, db, `SELECT metadata_name FROM avs WHERE metadata_name <> '' ORDER BY address LIMIT 1`)
		words := strings.Fields(name)
		prefix := strings.ToUpper(words[0][:3])
		got := query[avsListData](c, avsListQuery, map[string]any{"mode": "startsWith", "text": prefix, "take": 1000, "all": true}).AvsList
		want := sqlInt(t, db, `SELECT count(*) FROM avs WHERE lower(metadata_name) LIKE $1 || '%'`, lower(prefix))
		checkMeta(t, "startsWith "+prefix, got.Meta, len(got.Data), want, 0, 1000)
		for _, a := range got.Data {
			if !strings.HasPrefix(lower(a.MetadataName), lower(prefix)) {
				t.Errorf("startsWith %q matched %q", prefix, a.MetadataName)
			}
		}

		middle := lower(words[len(words)-1][1:4])
		got = query[avsListData](c, avsListQuery, map[string]any{"text": middle, "take": 1000, "all": true}).AvsList
		want = sqlInt(t, db, `SELECT count(*) FROM avs WHERE metadata_name ILIKE '%' || $1 || '%'`, middle)
		checkMeta(t, "contains "+middle, got.Meta, len(got.Data), want, 0, 1000)
		if want == 0 {
			t.Fatalf("no AVS name contains %q", middle)
		}

		// Addresses match too, by prefix.
		addr := sqlString(t, db, `SELECT address FROM avs ORDER BY address DESC LIMIT 1`)
		got = query[avsListData](c, avsListQuery, map[string]any{"mode": "startsWith", "text": strings.ToUpper(addr[2:9]), "all": true}).AvsList
		if got.Meta.Total != 1 || got.Data[0].Address != addr {
			t.Errorf("address search for %s: %+v", addr[:9], got)
		}

		// LIKE wildcards in the text match literally.
		for _, text := range []string{"%", "_", `\`, "a%e"} {
			got = query[avsListData](c, avsListQuery, map[string]any{"text": text, "all": true}).AvsList
			if got.Meta.Total != 0 {
				t.Errorf("search %q matched %d AVS", text, got.Meta.Total)
			}
		}
	})

	t.Run("addresses", func(t *testing.T) {
		got := query[struct {
			AvsAddresses struct {
				Data []struct {
					Address, Name string
					Logo          *string
				}
				Meta meta
			}
		}](c, `{ avsAddresses(take: 1000) { data { address name logo } meta { total skip take } } }`, nil).AvsAddresses
		checkMeta(t, "avsAddresses", got.Meta, len(got.Data), visible, 0, 1000)
		for _, a := range got.Data {
			want := sqlString(t, db, `SELECT metadata_name FROM avs WHERE address = $1`, a.Address)
			if a.Name != want {
				t.Errorf("%s: name %q, want %q", a.Address, a.Name, want)
			}
		}
	})
}

type operatorRecord struct {
	Address          string
	MetadataName     string
	TotalStakers     int
	TotalAvs         int
	MaxApy           string
	MaxApyNumber     float64
	CreatedAtBlock   string
	Tvl              struct{ Tvl float64 }
	AvsRegistrations []struct {
		AvsAddress string
		IsActive   bool
		Operator   *struct{ Address string }
	}
	Shares []sharesRecord
}

const operatorsQuery = `
	query($text: String, $mode: SearchMode, $apy: SortOrder, $tvl: SortOrder, $avs: SortOrder, $stakers: SortOrder, $skip: Int, $take: Int) {
		operators(searchByText: $text, searchMode: $mode, sortByApy: $apy, sortByTvl: $tvl, sortByTotalAvs: $avs,
		          sortByTotalStakers: $stakers, skip: $skip, take: $take) {
			data { address metadataName totalStakers totalAvs maxApy maxApyNumber createdAtBlock tvl { tvl }
			       avsRegistrations { avsAddress isActive operator { address } }
			       shares { strategyAddress shares ethValue } }
			meta { total skip take }
		}
	}`

type operatorsData struct {
	Operators struct {
		Data []operatorRecord
		Meta meta
	}
}

func TestOperatorList(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	total := sqlInt(t, db, `SELECT count(*) FROM operators`)

	got := query[operatorsData](c, operatorsQuery, map[string]any{"take": 1000}).Operators
	checkMeta(t, "operators", got.Meta, len(got.Data), total, 0, 1000)
	for _, o := range got.Data {
		active := 0
		for _, r := range o.AvsRegistrations {
			if r.IsActive {
				active++
			}
		}
		if active != o.TotalAvs {
			t.Errorf("operator %s: totalAvs %d but %d active registrations", o.Address, o.TotalAvs, active)
		}
		if want := sqlInt(t, db, `SELECT count(*) FROM avs_operators WHERE operator_address = $1`, o.Address); len(o.AvsRegistrations) != want {
			t.Errorf("operator %s: %d registrations, want %d", o.Address, len(o.AvsRegistrations), want)
		}
		for _, r := range o.AvsRegistrations {
			if r.Operator == nil || r.Operator.Address != o.Address {
				t.Errorf("registration of %s has operator %+v", o.Address, r.Operator)
			}
		}
		var eth float64
		for _, sh := range o.Shares {
			want := sqlString(t, db, `SELECT shares::text FROM operator_shares WHERE operator_address = $1 AND strategy_address = $2`, o.Address, sh.StrategyAddress)
			if sh.Shares != want {
				t.Errorf("operator %s shares in %s: %s, want %s", o.Address, sh.StrategyAddress, sh.Shares, want)
			}
			if sh.StrategyAddress != eigenStrategy {
				eth += sh.EthValue
			}
		}
		if len(o.Shares) != sqlInt(t, db, `SELECT count(*) FROM operator_shares WHERE operator_address = $1`, o.Address) || !near(eth, o.Tvl.Tvl) {
			t.Errorf("operator %s: %d shares worth %v, tvl %v", o.Address, len(o.Shares), eth, o.Tvl.Tvl)
		}
	}

	for _, dir := range []string{"asc", "desc"} {
		desc := dir == "desc"
		page := func(arg string) []operatorRecord {
			return query[operatorsData](c, operatorsQuery, map[string]any{arg: dir, "take": 200}).Operators.Data
		}
		var apy, tvl []float64
		var avs, stakers []int
		for _, o := range page("apy") {
			apy = append(apy, o.MaxApyNumber)
		}
		for _, o := range page("tvl") {
			tvl = append(tvl, o.Tvl.Tvl)
		}
		for _, o := range page("avs") {
			avs = append(avs, o.TotalAvs)
		}
		for _, o := range page("stakers") {
			stakers = append(stakers, o.TotalStakers)
		}
		ordered(t, "maxApy "+dir, apy, desc)
		ordered(t, "tvl "+dir, tvl, desc)
		ordered(t, "totalAvs "+dir, avs, desc)
		ordered(t, "totalStakers "+dir, stakers, desc)
	}

	name := sqlString(t, db, `SELECT metadata_name FROM operators WHERE metadata_name <> '' ORDER BY address LIMIT 1`)
	prefix := name[:4]
	found := query[operatorsData](c, operatorsQuery, map[string]any{"text": strings.ToLower(prefix), "mode": "startsWith", "take": 1000}).Operators
	want := sqlInt(t, db, `SELECT count(*) FROM operators WHERE lower(metadata_name) LIKE $1 || '%'`, strings.ToLower(prefix))
	checkMeta(t, "search", found.Meta, len(found.Data), want, 0, 1000)

	addr := got.Data[3].Address
	one := query[struct{ Operator *operatorRecord }](c, `query($a: Address!) { operator(address: $a) { address totalAvs } }`,
		map[string]any{"a": "0x" + strings.ToUpper(addr[2:])})
	if one.Operator == nil || one.Operator.Address != addr {
		t.Errorf("operator(%s) = %+v", addr, one.Operator)
	}
	missing := query[struct{ Operator *operatorRecord }](c, `{ operator(address: "0x000000000000000000000000000000000000dead") { address } }`, nil)
	if missing.Operator != nil {
		t.Errorf("unknown operator: %+v, want null", missing.Operator)
	}
}

func parseFloat(t *testing.T, s string) float64 {
	t.Helper()
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}
