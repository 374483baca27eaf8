package demo

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// marketData is what the generator assumes about one strategy's token:
// sharesToUnderlyingView(1e18), the price of one whole underlying token in
// ETH in millionths, and how popular it is with depositors.
type marketData struct {
	rate       string // sharesToUnderlyingView(1e18)
	priceMicro int64  // ETH per whole token × 1e6
	popularity int    // relative weight among liquid-token deposits
}

// markets holds plausible values for the strategies the chain package
// lists, by symbol.
var markets = map[string]marketData{
	"Beacon ETH": {"1000000000000000000", 1_000_000, 0},
	"EIGEN":      {"1000000000000000000", 800, 0},
	"stETH":      {"1000000000421738950", 999_700, 400},
	"rETH":       {"1100428730361482305", 1_128_400, 80},
	"cbETH":      {"1080215637812094413", 1_088_100, 80},
	"ETHx":       {"1040551896224510736", 1_045_300, 80},
	"ankrETH":    {"1150113984620517433", 1_170_200, 30},
	"OETH":       {"1000000000000000000", 998_100, 20},
	"osETH":      {"1030417302684407521", 1_035_600, 40},
	"swETH":      {"1060735115924031278", 1_070_800, 50},
	"wBETH":      {"1050277201480592417", 1_055_900, 60},
	"sfrxETH":    {"1090613877043928115", 1_101_400, 60},
	"LsETH":      {"1060114488716260062", 1_062_500, 20},
	"mETH":       {"1040938264918271550", 1_045_700, 60},
}

// defaultMarket is used for a strategy the table does not know.
var defaultMarket = marketData{"1000000000000000000", 1_000_000, 30}

// Mainnet reward tokens: wrapped ether and the EIGEN token.
const (
	mainnetWETH  = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"
	mainnetEIGEN = "0xec53bf9167f50cdeb3ae105f56099aaab9061f83"
)

// strategyInfo is a strategy of the generated world with the numbers the
// simulation needs.
type strategyInfo struct {
	chain.Strategy
	rate       *big.Int
	priceMicro int64
	popularity int
}

// tokenInfo is a token of the generated world.
type tokenInfo struct {
	address    string
	symbol     string
	priceMicro int64 // ETH per whole token × 1e6
}

func newStrategyInfo(s chain.Strategy) strategyInfo {
	m, ok := markets[s.Symbol]
	if !ok {
		m = defaultMarket
	}
	rate, _ := new(big.Int).SetString(m.rate, 10)
	return strategyInfo{Strategy: s, rate: rate, priceMicro: m.priceMicro, popularity: m.popularity}
}

// microText renders an amount in millionths as decimal text.
func microText(v int64) string {
	whole, frac := v/1_000_000, v%1_000_000
	if frac == 0 {
		return strconv.FormatInt(whole, 10)
	}
	f := strconv.FormatInt(1_000_000+frac, 10)[1:] // six digits, zero-padded
	return strconv.FormatInt(whole, 10) + "." + strings.TrimRight(f, "0")
}

// Word lists for generated names.
var (
	operatorFirst = []string{
		"Aurora", "Basalt", "Cobalt", "Delta", "Ember", "Falcon", "Granite", "Harbor", "Iris", "Juniper",
		"Kestrel", "Lumen", "Meridian", "Nimbus", "Obsidian", "Pioneer", "Quartz", "Ridge", "Summit", "Tundra",
		"Umbra", "Vertex", "Willow", "Xenon", "Yarrow", "Zenith", "Atlas", "Beacon", "Citadel", "Drift",
		"Echo", "Forge", "Glacier", "Horizon", "Ion", "Keystone", "Lattice", "Monolith", "Nova", "Orbit",
	}
	operatorSecond = []string{
		"Staking", "Validators", "Nodes", "Labs", "Capital", "Infrastructure", "Ventures", "Node Services",
		"Restake", "Operations", "Systems", "Network", "Collective", "Partners", "Cloud", "Digital",
	}
	avsFirst = []string{
		"Arc", "Bolt", "Cipher", "Dusk", "Eon", "Flux", "Gale", "Halo", "Index", "Jade",
		"Kite", "Loom", "Mosaic", "Nexus", "Onyx", "Prism", "Quill", "Relay", "Sable", "Tide",
		"Unity", "Vault", "Warp", "Axon", "Blitz", "Crest", "Dyno", "Ether", "Fable", "Glint",
	}
	avsSecond = []string{
		"DA", "Oracle", "Bridge", "Sequencer", "Coprocessor", "Prover", "Network", "Witness",
		"Finality", "Rollup", "Keeper", "Verifier", "Mesh", "Relay", "Guard", "Compute",
	}
	avsKinds = map[string][]string{
		"DA":          {"Data Availability", "Rollups"},
		"Oracle":      {"Oracle", "DeFi"},
		"Bridge":      {"Interoperability", "Bridge"},
		"Sequencer":   {"Sequencer", "Rollups"},
		"Coprocessor": {"Coprocessor", "ZK"},
		"Prover":      {"ZK", "Coprocessor"},
		"Network":     {"Infrastructure"},
		"Witness":     {"Security", "Data"},
		"Finality":    {"Finality", "Rollups"},
		"Rollup":      {"Rollups", "Infrastructure"},
		"Keeper":      {"Automation", "DeFi"},
		"Verifier":    {"ZK", "Security"},
		"Mesh":        {"Networking", "Infrastructure"},
		"Relay":       {"Interoperability", "MEV"},
		"Guard":       {"Security", "Monitoring"},
		"Compute":     {"AI", "Compute"},
	}
	descriptionPhrases = []string{
		"secures restaked infrastructure for Ethereum",
		"runs a decentralized validator set with restaked ETH",
		"provides low-latency services backed by economic security",
		"brings verifiable off-chain computation to smart contracts",
		"offers institutional-grade node operations since 2020",
		"operates across multiple regions with 99.9% uptime",
		"builds trust-minimized middleware on EigenLayer",
	}
)

// slug turns a name into a lowercase URL-friendly token.
func slug(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '.':
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

func ptr(s string) *string { return &s }

// storeTokens returns the token rows of the world.
func (g *generator) storeTokens() []store.Token {
	out := make([]store.Token, 0, len(g.tokens))
	for _, t := range g.tokens {
		out = append(out, store.Token{Address: t.address, Symbol: t.symbol, Decimals: 18, ETHPrice: microText(t.priceMicro)})
	}
	return out
}

// storeStrategies returns the strategy rows of the world.
func (g *generator) storeStrategies() []store.Strategy {
	out := make([]store.Strategy, 0, len(g.strategies))
	for _, s := range g.strategies {
		out = append(out, store.Strategy{
			Strategy:           s.Strategy,
			SharesToUnderlying: new(big.Int).Set(s.rate),
			ETHPrice:           microText(s.priceMicro),
		})
	}
	return out
}

// curated returns the curated metadata of the AVS that have it.
func (g *generator) curated() []store.CuratedMetadata {
	var out []store.CuratedMetadata
	for _, a := range g.avs {
		if a.curated == nil {
			continue
		}
		out = append(out, *a.curated)
	}
	return out
}

func (g *generator) reference() Reference {
	return Reference{
		Tokens:             g.storeTokens(),
		Strategies:         g.storeStrategies(),
		Curated:            g.curated(),
		MinWithdrawalDelay: MinWithdrawalDelayBlocks,
	}
}
