package graph

import (
	"testing"

	"github.com/stakegraph/stakegraph/store"
)

// BenchmarkTVLFromShares computes the TVL of a page's worth of stakers'
// positions, as read from the bench data: most stakers hold one position,
// a beacon chain one or a liquid token, some a few liquid tokens.
func BenchmarkTVLFromShares(b *testing.B) {
	position := func(kind, symbol, underlying, eth string) store.StrategyShares {
		return store.StrategyShares{Kind: kind, Symbol: symbol, UnderlyingValue: underlying, ETHValue: eth}
	}
	stakers := [][]store.StrategyShares{
		{position("beacon", "Beacon ETH", "450.5930247580000000", "450.5930247580000000")},
		{position("liquid", "rETH", "3.5819417295568947", "4.04186304763199997948")},
		{
			position("liquid", "stETH", "0.43616094793978193100", "0.436030099655399996420700"),
			position("liquid", "ETHx", "0.00257945824482923468", "0.002696307703319999011004"),
		},
		{
			position("liquid", "stETH", "0.61378279078931679400", "0.613598655952079998961800"),
			position("liquid", "swETH", "0.01647543604090399600", "0.017641896912599998916800"),
			position("liquid", "osETH", "0.00124089077108922329", "0.001285066482539999639124"),
		},
		{position("beacon", "Beacon ETH", "855.0833074520000000", "855.0833074520000000")},
		{position("beacon", "Beacon ETH", "383.9867775519999985", "383.9867775519999985")},
	}
	b.ReportAllocs()
	for range b.N {
		for _, shares := range stakers {
			_ = tvlFromShares(shares)
		}
	}
}
