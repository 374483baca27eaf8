package demo

import (
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// chainClock maps block numbers to times: one anchor block with its time
// and 12-second slots from there on (missed slots are ignored).
type chainClock struct {
	block uint64
	time  time.Time
}

// clocks anchor each built-in network: mainnet at the Merge block, holesky
// at genesis. Other networks use mainnet's.
var clocks = map[string]chainClock{
	"mainnet": {15537394, time.Unix(1663224179, 0).UTC()},
	"holesky": {0, time.Unix(1695902400, 0).UTC()},
}

const slot = 12 * time.Second

func (c chainClock) timeOf(block uint64) time.Time {
	return c.time.Add(time.Duration(block-c.block) * slot)
}

// blockAt is the last block at or before t.
func (c chainClock) blockAt(t time.Time) (uint64, error) {
	if t.Before(c.time) {
		return 0, fmt.Errorf("%s is before the chain's anchor block %d (%s)", t.UTC().Format(time.RFC3339), c.block, c.time.Format(time.RFC3339))
	}
	return c.block + uint64(t.Sub(c.time)/slot), nil
}

// profile says what a staker restakes.
type profile uint8

const (
	profileLiquid profile = iota // liquid staking tokens
	profileBeacon                // beacon-chain ETH through an EigenPod
	profileEigen                 // the EIGEN token
	profileMixed                 // beacon ETH and liquid tokens
)

// holding is a staker's positive balance of deposit shares in one
// strategy, with its deposit scaling factor.
type holding struct {
	strat  int // index in generator.strategies
	shares *big.Int
	dsf    *big.Int // nil: WAD, as the DelegationManager reads an unset factor
}

// factor is the holding's deposit scaling factor.
func (h *holding) factor() *big.Int {
	if h.dsf == nil {
		return chain.WAD
	}
	return h.dsf
}

type stakerState struct {
	addr         string
	profile      profile
	operator     int32 // index of the operator delegated to, or -1
	isOperator   bool  // an operator's own stake: always delegated to itself
	holdings     []holding
	nonce        int64  // withdrawals queued so far
	beaconFactor uint64 // beacon-chain slashing factor; 0: never decreased (WAD)
}

func (s *stakerState) holding(strat int) *big.Int {
	for _, h := range s.holdings {
		if h.strat == strat {
			return h.shares
		}
	}
	return nil
}

// position returns the holding of a strategy, or nil.
func (s *stakerState) position(strat int) *holding {
	for i := range s.holdings {
		if s.holdings[i].strat == strat {
			return &s.holdings[i]
		}
	}
	return nil
}

// beaconSlashingFactor is the pod owner's beacon-chain slashing factor.
func (s *stakerState) beaconSlashingFactor() uint64 {
	if s.beaconFactor == 0 {
		return wad64
	}
	return s.beaconFactor
}

// add credits shares to a strategy, keeping beacon ETH first as the
// contracts list it.
func (s *stakerState) add(strat int, shares *big.Int, beacon int) {
	if v := s.holding(strat); v != nil {
		v.Add(v, shares)
		return
	}
	h := holding{strat: strat, shares: new(big.Int).Set(shares)}
	if strat == beacon {
		s.holdings = slices.Insert(s.holdings, 0, h)
		return
	}
	s.holdings = append(s.holdings, h)
}

// sub debits shares from a strategy (never below zero: callers check) and
// forgets emptied strategies, as the StrategyManager does, with their
// deposit scaling factor, as the DelegationManager resets it. It reports
// whether the strategy was emptied.
func (s *stakerState) sub(strat int, shares *big.Int) bool {
	for i, h := range s.holdings {
		if h.strat == strat {
			h.shares.Sub(h.shares, shares)
			if h.shares.Sign() <= 0 {
				s.holdings = slices.Delete(s.holdings, i, i+1)
				return true
			}
			return false
		}
	}
	return false
}

type operatorState struct {
	addr       string
	name       string
	day        int
	weight     int64 // relative pull on stakers choosing an operator
	actPPM     int64 // how eagerly it registers to AVS
	docMode    docMode
	selfStake  bool
	registered bool
	version    int // metadata document version

	// shares are the operator's delegated shares per strategy (nil: none
	// yet), the DelegationManager's operatorShares: Σ increases − Σ
	// decreases − Σ the shares slashes took.
	shares []*big.Int
	// slashing is the operator's AllocationManager state; nil until it
	// takes part in the slashing-era protocol.
	slashing *operatorSlashing
}

type docMode uint8

const (
	docFull    docMode = iota
	docNoName          // a document without a name
	docMissing         // the URI could not be fetched: no document
)

type avsState struct {
	addr         string
	name         string
	kind         string
	day          int
	popPPM       int64 // how many operators register to it
	rewardTokens []int // token indexes; empty when it pays no rewards
	strategies   []int // current restakeable strategies
	nonce        int64 // rewards submissions so far
	docMode      docMode
	curated      *store.CuratedMetadata
	exists       bool
	sets         []int32 // its operator sets, indexes in generator.sets
}

// pendingWithdrawal is a queued withdrawal whose completion is scheduled.
type pendingWithdrawal struct {
	root     string
	staker   int32
	op       int32  // the operator the staker was delegated to, or -1
	start    uint64 // the block it was queued in
	strats   []int
	shares   []*big.Int
	scaled   []*big.Int // the scaled shares; the shares before the slashing upgrade
	asShares bool       // completed by crediting the shares back instead of tokens
}

type actionKind uint8

const (
	actOperatorRegister actionKind = iota
	actOperatorMetadata
	actAVSCreate
	actAVSStrategies
	actRegister   // operator a to AVS b
	actDeregister // operator a from AVS b
	actStakerArrive
	actDelegate // staker a (or a random undelegated staker when a < 0), avoiding operator b
	actDeposit  // staker a, or a random staker when a < 0
	actPodUpdate
	actWithdraw
	actUndelegate
	actComplete
	actRewards
	actRewardsForAll

	// The slashing era.
	actSlashingUpgrade
	actCreateSets         // AVS a creates its operator sets
	actJoinSet            // operator a joins set b
	actLeaveSet           // operator a leaves set b
	actSetStrategy        // set b adds or removes a strategy
	actAllocationDelay    // operator a sets its allocation delay
	actAllocate           // operator a allocates to set b
	actDeallocate         // operator a deallocates some of its magnitude in set b
	actSlash              // a slash of an operator with slashable magnitude
	actOperatorDirected   // an operator-directed rewards submission of an AVS
	actOperatorSetRewards // an operator-directed rewards submission for an operator set
	actDistributionRoot
	actClaim
	actSplit    // an operator sets its split of an AVS's rewards
	actApprover // an operator changes its delegation approver
)

type action struct {
	block uint64
	seq   uint64
	kind  actionKind
	a, b  int32
	w     *pendingWithdrawal
}

type actionHeap []action

func (h actionHeap) Len() int { return len(h) }
func (h actionHeap) Less(i, j int) bool {
	if h[i].block != h[j].block {
		return h[i].block < h[j].block
	}
	return h[i].seq < h[j].seq
}
func (h actionHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *actionHeap) Push(x any)   { *h = append(*h, x.(action)) }
func (h *actionHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// generator simulates the ecosystem day by day. All randomness comes from
// one PCG source, and nothing iterates a map, so the output is a function of
// Options and Scale alone.
type generator struct {
	opts  Options
	sc    Scale
	rng   *rand.Rand
	seed  [8]byte
	clock chainClock

	strategies []strategyInfo
	beacon     int // strategy index, or -1
	eigen      int // strategy index, or -1
	liquid     []int
	liquidCum  []int64
	tokens     []tokenInfo
	weth       int // token index
	eigenToken int // token index
	tokenIndex map[string]int
	amountPPM  int64 // deposit sizes scaled down for worlds with many stakers

	firstBlock, headBlock uint64

	operators   []*operatorState
	avs         []*avsState
	stakers     []*stakerState // arrived so far, in arrival order
	beaconers   []int32        // arrived stakers restaking beacon ETH
	undelegated int64          // arrived stakers not delegated
	arrivals    []int          // stakers arriving per day
	submitter   string         // the rewards-for-all submitter
	forAllNo    int64

	// Registered operators in registration order with cumulative weights,
	// for choosing the operator a staker delegates to.
	opOrder []int32
	opCum   []int64

	registered map[[2]int32]bool // (operator, AVS) currently registered; looked up only

	// The slashing era, from upgradeBlock (beyond the head when the world
	// has none) on.
	upgradeBlock uint64
	upgradeDay   int
	sets         []*operatorSet
	allocs       []*allocation
	roots        int64              // distribution roots submitted
	lastRoot     string             // the latest distribution root, empty before the first
	splits       map[[2]int32]int64 // (operator, AVS) split bips set; looked up only

	actions actionHeap
	seq     uint64

	// The transaction being emitted.
	batch     *chain.Batch
	curBlock  uint64
	blockTime time.Time
	txHash    string
	logIndex  uint32
	txCount   uint64

	hashBuf []byte
}

func newGenerator(opts Options, sc Scale) (*generator, error) {
	if err := sc.validate(); err != nil {
		return nil, err
	}
	if opts.Now.IsZero() {
		return nil, errors.New("demo: Options.Now is required")
	}
	if opts.Network.Name == "" {
		opts.Network = chain.Networks["mainnet"]
	}
	if len(opts.Network.Strategies) == 0 {
		return nil, fmt.Errorf("demo: network %q has no strategies", opts.Network.Name)
	}
	g := &generator{
		opts:       opts,
		sc:         sc,
		rng:        rand.New(rand.NewPCG(uint64(opts.Seed), 0x5374616b65477261)),
		beacon:     -1,
		eigen:      -1,
		tokenIndex: map[string]int{},
		registered: map[[2]int32]bool{},
		splits:     map[[2]int32]int64{},
	}
	binary.BigEndian.PutUint64(g.seed[:], uint64(opts.Seed))
	clock, ok := clocks[opts.Network.Name]
	if !ok {
		clock = clocks["mainnet"]
	}
	g.clock = clock
	head, err := clock.blockAt(opts.Now)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	span := uint64(sc.Days) * BlocksPerDay
	if head < clock.block+span {
		return nil, fmt.Errorf("demo: %d days of history before %s reach before the chain's anchor block", sc.Days, opts.Now.UTC().Format(time.RFC3339))
	}
	if head > math.MaxUint32 {
		return nil, fmt.Errorf("demo: head block %d does not fit a withdrawal's uint32 start block", head)
	}
	g.headBlock = head
	g.firstBlock = head - span + 1
	g.upgradeBlock, g.upgradeDay = math.MaxUint64, sc.Days
	if days := min(sc.SlashingDays, sc.Days/2); days > 0 {
		g.upgradeDay = sc.Days - days
		g.upgradeBlock = g.firstBlock + uint64(g.upgradeDay)*BlocksPerDay
	}
	g.amountPPM = 1_000_000
	if sc.Stakers > DemoScale.Stakers {
		g.amountPPM = int64(DemoScale.Stakers) * 1_000_000 / int64(sc.Stakers)
	}
	g.setupMarkets()
	if len(g.liquid) == 0 {
		return nil, fmt.Errorf("demo: network %q has no liquid-token strategy", opts.Network.Name)
	}
	g.setupEntities()
	return g, nil
}

// setupMarkets builds the strategies and tokens of the world.
func (g *generator) setupMarkets() {
	var cum int64
	for i, s := range g.opts.Network.Strategies {
		si := newStrategyInfo(s)
		g.strategies = append(g.strategies, si)
		switch s.Kind {
		case chain.KindBeacon:
			g.beacon = i
		case chain.KindEigen:
			g.eigen = i
		default:
			g.liquid = append(g.liquid, i)
			cum += int64(max(si.popularity, 1))
			g.liquidCum = append(g.liquidCum, cum)
		}
		if s.UnderlyingToken != "" {
			symbol := s.Symbol
			if s.Kind == chain.KindEigen {
				symbol = "bEIGEN"
			}
			g.addToken(s.UnderlyingToken, symbol, si.priceMicro)
		}
	}
	// Reward tokens: mainnet's WETH and EIGEN; made-up addresses elsewhere.
	weth, eigen := mainnetWETH, mainnetEIGEN
	if g.opts.Network.Name != "mainnet" {
		weth, eigen = g.address("token", 1), g.address("token", 2)
	}
	g.weth = g.addToken(weth, "WETH", 1_000_000)
	g.eigenToken = g.addToken(eigen, "EIGEN", markets["EIGEN"].priceMicro)
}

func (g *generator) addToken(addr, symbol string, priceMicro int64) int {
	if i, ok := g.tokenIndex[addr]; ok {
		return i
	}
	g.tokens = append(g.tokens, tokenInfo{address: addr, symbol: symbol, priceMicro: priceMicro})
	g.tokenIndex[addr] = len(g.tokens) - 1
	return len(g.tokens) - 1
}

// setupEntities draws the operators, AVS and staker arrivals.
func (g *generator) setupEntities() {
	days := g.sc.Days
	g.submitter = g.address("submitter", 0)

	// Operators: a wave at launch, the rest spread over the history.
	// Their pull on stakers follows Zipf's law over a random ranking.
	opRanks := g.rng.Perm(g.sc.Operators)
	names := map[string]bool{}
	for i := range g.sc.Operators {
		var day int
		switch r := g.rng.IntN(100); {
		case r < 8:
			day = g.rng.IntN(min(4, days))
		case r < 35:
			day = g.rng.IntN(max(days/6, 1))
		default:
			day = g.rng.IntN(days)
		}
		rank := int64(opRanks[i])
		op := &operatorState{
			addr:      g.address("operator", uint64(i)),
			name:      g.uniqueName(names, operatorFirst, operatorSecond),
			day:       day,
			weight:    1_000_000_000 / (rank + 1),
			actPPM:    min(1_000_000, int64(1_000_000*math.Sqrt(20/float64(rank+1)))),
			selfStake: g.chance(350_000),
		}
		switch r := g.rng.IntN(100); {
		case r < 5:
			op.docMode = docMissing
		case r < 9:
			op.docMode = docNoName
		}
		g.operators = append(g.operators, op)
	}

	// AVS: the first early, the rest spread over the history; popularity
	// falls with rank, and the first is the most popular.
	first := max(days/20, 1)
	avsRanks := g.rng.Perm(g.sc.AVS)
	for i, r := range avsRanks {
		if r == 0 {
			avsRanks[0], avsRanks[i] = avsRanks[i], avsRanks[0]
			break
		}
	}
	names = map[string]bool{}
	ownTokens := max(2, g.sc.AVS/20)
	invisible := max(2, g.sc.AVS*8/100)
	for i := range g.sc.AVS {
		day := first
		if i > 0 {
			day = first + g.rng.IntN(days-first)
		}
		rank := avsRanks[i]
		a := &avsState{
			addr:   g.address("avs", uint64(i)),
			day:    day,
			popPPM: int64(1_000_000 / math.Sqrt(float64(rank+1))),
		}
		a.name = g.uniqueName(names, avsFirst, avsSecond)
		a.kind = a.name[strings.LastIndexByte(a.name, ' ')+1:]
		hidden := rank >= g.sc.AVS-invisible
		if hidden {
			a.name = fmt.Sprintf("Test AVS %d", i)
			a.kind = "Network"
			a.popPPM /= 4
		}
		switch r := g.rng.IntN(100); {
		case r < 4:
			a.docMode = docMissing
		case r < 7:
			a.docMode = docNoName
		}
		a.strategies = g.initialAVSStrategies()
		if !hidden && g.chance(750_000) {
			if g.chance(500_000) {
				a.rewardTokens = append(a.rewardTokens, g.weth)
			}
			if g.chance(600_000) || len(a.rewardTokens) == 0 {
				a.rewardTokens = append(a.rewardTokens, g.eigenToken)
			}
		}
		var ownToken string
		if rank >= 1 && rank <= ownTokens {
			ownToken = g.address("token", uint64(100+i))
			symbol := strings.ToUpper(a.name[:strings.IndexByte(a.name, ' ')])
			t := g.addToken(ownToken, symbol, 20+g.rng.Int64N(900))
			a.rewardTokens = append(a.rewardTokens, t)
		}
		switch {
		case hidden:
			a.curated = g.curatedFor(a, "", false)
		case rank < g.sc.AVS/3 || g.chance(200_000):
			a.curated = g.curatedFor(a, ownToken, true)
		}
		g.avs = append(g.avs, a)
	}

	// Staker arrivals: steady, with a boom over the points season.
	weights := make([]int64, days)
	var cum int64
	for d := range days {
		w := int64(100 + 150*d/days)
		if d >= days*15/100 && d < days*45/100 {
			w += 300
		}
		cum += w
		weights[d] = cum
	}
	g.arrivals = make([]int, days)
	for range g.sc.Stakers {
		g.arrivals[pickCum(g.rng, weights)]++
	}
}

// initialAVSStrategies draws the strategies an AVS accepts: beacon ETH
// always, often EIGEN, and all, some or none of the liquid tokens.
func (g *generator) initialAVSStrategies() []int {
	var out []int
	if g.beacon >= 0 {
		out = append(out, g.beacon)
	}
	if g.eigen >= 0 && g.chance(600_000) {
		out = append(out, g.eigen)
	}
	switch r := g.rng.IntN(100); {
	case r < 50:
		out = append(out, g.liquid...)
	case r < 80:
		for _, i := range g.liquid {
			if g.chance(400_000) {
				out = append(out, i)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, g.liquid[0])
	}
	slices.Sort(out)
	return out
}

func (g *generator) curatedFor(a *avsState, tokenAddr string, visible bool) *store.CuratedMetadata {
	s := slug(a.name)
	m := &store.CuratedMetadata{
		AVSAddress:  a.addr,
		Name:        a.name,
		Description: ptr(fmt.Sprintf("%s %s.", a.name, descriptionPhrases[g.rng.IntN(len(descriptionPhrases))])),
		Logo:        ptr("https://assets.stakegraph.example/avs/" + s + ".png"),
		Website:     ptr("https://" + s + ".xyz"),
		X:           ptr("https://x.com/" + strings.ReplaceAll(s, "-", "")),
		Github:      ptr("https://github.com/" + s),
		Tags:        append([]string(nil), avsKinds[a.kind]...),
		IsVisible:   visible,
		IsVerified:  visible && g.chance(700_000),
	}
	if g.chance(600_000) {
		m.Discord = ptr("https://discord.gg/" + strings.ReplaceAll(s, "-", ""))
	}
	if g.chance(300_000) {
		m.Telegram = ptr("https://t.me/" + strings.ReplaceAll(s, "-", ""))
	}
	if tokenAddr != "" {
		m.TokenAddress = ptr(tokenAddr)
	}
	if !visible {
		m.Tags = []string{"Testnet"}
		m.Github, m.X = nil, nil
	}
	return m
}

func (g *generator) uniqueName(seen map[string]bool, first, second []string) string {
	for {
		name := first[g.rng.IntN(len(first))] + " " + second[g.rng.IntN(len(second))]
		if seen[name] {
			name = fmt.Sprintf("%s %d", name, len(seen))
		}
		if !seen[name] {
			seen[name] = true
			return name
		}
	}
}

// run simulates every day in order and hands each day's batch to emit. The
// batch is not used by the generator after emit returns.
func (g *generator) run(emit func(*chain.Batch) error) error {
	nextOp, nextAVS := g.sortedByDay()
	var opIdx, avsIdx int
	rewardsStart := g.sc.Days / 3
	rewardsPerDayMicro := int64(g.sc.RewardsSubmissions) * 1_000_000 / int64(max(g.sc.Days-rewardsStart, 1))
	for d := range g.sc.Days {
		start := g.firstBlock + uint64(d)*BlocksPerDay
		end := start + BlocksPerDay - 1
		g.batch = &chain.Batch{}

		for ; opIdx < len(nextOp) && g.operators[nextOp[opIdx]].day == d; opIdx++ {
			g.schedule(start+g.rng.Uint64N(BlocksPerDay), actOperatorRegister, nextOp[opIdx], -1, nil)
		}
		for ; avsIdx < len(nextAVS) && g.avs[nextAVS[avsIdx]].day == d; avsIdx++ {
			g.schedule(start+g.rng.Uint64N(BlocksPerDay), actAVSCreate, nextAVS[avsIdx], -1, nil)
		}
		for range g.arrivals[d] {
			g.schedule(start+g.rng.Uint64N(BlocksPerDay), actStakerArrive, -1, -1, nil)
		}
		active := int64(len(g.stakers))
		g.scheduleRandom(start, actDeposit, active*int64(g.sc.DepositPPM))
		g.scheduleRandom(start, actPodUpdate, int64(len(g.beaconers))*int64(g.sc.PodUpdatePPM))
		g.scheduleRandom(start, actWithdraw, active*int64(g.sc.WithdrawalPPM))
		g.scheduleRandom(start, actUndelegate, active*int64(g.sc.UndelegationPPM))
		g.scheduleRandom(start, actDelegate, g.undelegated*int64(g.sc.DelegationPPM))
		if d >= rewardsStart {
			g.scheduleRandom(start, actRewards, rewardsPerDayMicro)
			if (d-rewardsStart)%14 == 0 {
				g.schedule(start+g.rng.Uint64N(BlocksPerDay), actRewardsForAll, -1, -1, nil)
			}
		}
		if d == g.upgradeDay {
			g.schedule(start, actSlashingUpgrade, -1, -1, nil)
		}
		if d >= g.upgradeDay {
			g.scheduleSlashingDay(d, start, rewardsPerDayMicro)
		}

		for len(g.actions) > 0 && g.actions[0].block <= end {
			g.execute(heap.Pop(&g.actions).(action))
		}
		g.batch.Head = chain.Position{BlockNumber: end, BlockTime: g.clock.timeOf(end)}
		if err := emit(g.batch); err != nil {
			return err
		}
		g.batch = nil
	}
	return nil
}

// sortedByDay returns operator and AVS indexes ordered by arrival day.
func (g *generator) sortedByDay() (ops, avss []int32) {
	for i := range g.operators {
		ops = append(ops, int32(i))
	}
	slices.SortStableFunc(ops, func(a, b int32) int { return g.operators[a].day - g.operators[b].day })
	for i := range g.avs {
		avss = append(avss, int32(i))
	}
	slices.SortStableFunc(avss, func(a, b int32) int { return g.avs[a].day - g.avs[b].day })
	return ops, avss
}

func (g *generator) schedule(block uint64, kind actionKind, a, b int32, w *pendingWithdrawal) {
	g.seq++
	heap.Push(&g.actions, action{block: block, seq: g.seq, kind: kind, a: a, b: b, w: w})
}

// scheduleRandom schedules about expectedMicro/1e6 actions of a kind at
// random blocks of the day starting at start; their subjects are chosen
// when they run.
func (g *generator) scheduleRandom(start uint64, kind actionKind, expectedMicro int64) {
	expectedMicro = expectedMicro * (700 + g.rng.Int64N(601)) / 1000 // day-to-day swing
	n := expectedMicro / 1_000_000
	if g.rng.Int64N(1_000_000) < expectedMicro%1_000_000 {
		n++
	}
	for range n {
		g.schedule(start+g.rng.Uint64N(BlocksPerDay), kind, -1, -1, nil)
	}
}

// later schedules an action a random delay after the current block: about
// meanDays on average, exponentially distributed, and at least one block.
func (g *generator) later(meanDays int, kind actionKind, a, b int32, w *pendingWithdrawal) {
	g.schedule(g.curBlock+1+g.expBlocks(uint64(meanDays)*BlocksPerDay), kind, a, b, w)
}

// expBlocks draws an approximately exponential delay with the given mean
// using integer arithmetic only.
func (g *generator) expBlocks(mean uint64) uint64 {
	unit := mean * 2 / 3
	if unit == 0 {
		return 0
	}
	k := uint64(0)
	for k < 16 && g.rng.IntN(2) == 0 {
		k++
	}
	return k*unit + g.rng.Uint64N(unit)
}

func (g *generator) execute(a action) {
	switch a.kind {
	case actOperatorRegister:
		g.registerOperator(a.block, a.a)
	case actOperatorMetadata:
		g.updateOperatorMetadata(a.block, a.a)
	case actAVSCreate:
		g.createAVS(a.block, a.a)
	case actAVSStrategies:
		g.updateAVSStrategies(a.block, a.a)
	case actRegister:
		g.setRegistration(a.block, a.a, a.b, true)
	case actDeregister:
		g.setRegistration(a.block, a.a, a.b, false)
	case actStakerArrive:
		g.arrive(a.block)
	case actDelegate:
		g.delegate(a.block, a.a, a.b)
	case actDeposit:
		g.deposit(a.block, a.a)
	case actPodUpdate:
		g.podUpdate(a.block)
	case actWithdraw:
		g.withdraw(a.block, a.a)
	case actUndelegate:
		g.undelegate(a.block, a.a)
	case actComplete:
		g.complete(a.block, a.w)
	case actRewards:
		g.submitRewards(a.block)
	case actRewardsForAll:
		g.submitRewardsForAll(a.block)
	default:
		g.executeSlashing(a)
	}
}

// beginTx starts a transaction at block: a new hash and the next free log
// index of the block (other contracts' logs leave gaps).
func (g *generator) beginTx(block uint64) {
	if block != g.curBlock {
		g.curBlock = block
		g.blockTime = g.clock.timeOf(block)
		g.logIndex = uint32(g.rng.IntN(160))
	} else {
		g.logIndex += uint32(g.rng.IntN(8))
	}
	g.txCount++
	g.txHash = g.hashHex("tx", g.txCount)
}

// pos is the position of the next log of the current transaction.
func (g *generator) pos() chain.Position {
	p := chain.Position{BlockNumber: g.curBlock, BlockTime: g.blockTime, TxHash: g.txHash, LogIndex: g.logIndex}
	g.logIndex++
	return p
}

func (g *generator) chance(ppm int64) bool { return g.rng.Int64N(1_000_000) < ppm }

// pickCum picks an index with probability proportional to its weight,
// given cumulative weights.
func pickCum(rng *rand.Rand, cum []int64) int {
	x := rng.Int64N(cum[len(cum)-1])
	i, _ := slices.BinarySearch(cum, x+1)
	return i
}

// digest hashes the seed, a label and numbers.
func (g *generator) digest(label string, parts ...uint64) [32]byte {
	b := append(g.hashBuf[:0], g.seed[:]...)
	b = append(b, label...)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint64(b, p)
	}
	g.hashBuf = b
	return sha256.Sum256(b)
}

func (g *generator) hashHex(label string, parts ...uint64) string {
	d := g.digest(label, parts...)
	return hexString(d[:])
}

func (g *generator) address(label string, i uint64) string {
	d := g.digest("address/"+label, i)
	return hexString(d[:20])
}

func hexString(b []byte) string {
	out := make([]byte, 2+hex.EncodedLen(len(b)))
	out[0], out[1] = '0', 'x'
	hex.Encode(out[2:], b)
	return string(out)
}
