package rest

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestOperationsMatchSchema checks every embedded operation against the
// GraphQL schema, so that a change of the schema that breaks a REST route
// fails here, before any request is made.
func TestOperationsMatchSchema(t *testing.T) {
	src, err := os.ReadFile("../schema.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(src)})
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	ops := map[string]string{
		"avs_list":                 avsListOp,
		"avs_addresses":            avsAddressesOp,
		"avs_operators":            avsOperatorsOp,
		"avs_rewards":              avsRewardsOp,
		"operator_list":            operatorListOp,
		"staker_delegation_events": stakerDelegationEventsOp,
		"withdrawals":              withdrawalsOp,
		"metrics":                  metricsOp,
		"restaking_tvl":            restakingTVLOp,
		"strategy_tvl":             strategyTVLOp,
		"total_withdrawals":        totalWithdrawalsOp,
		"total_stakers":            totalStakersOp,
		"deployment_ratio":         deploymentRatioOp,
		"historical_staker_count":  historicalStakerCountOp,
		"reward_strategies":        rewardStrategiesOp,
	}
	files, err := fs.Glob(os.DirFS("operations"), "*.graphql")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(ops) {
		t.Errorf("%d operation files, %d embedded operations", len(files), len(ops))
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".graphql")
		op, ok := ops[name]
		if !ok {
			t.Errorf("operations/%s is not used by any route", f)
			continue
		}
		if _, errs := gqlparser.LoadQuery(schema, op); len(errs) > 0 {
			t.Errorf("operations/%s: %v", f, errs)
		}
	}
}
