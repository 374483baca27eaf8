package indexer

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/stakegraph/stakegraph/chain"
)

// eigenLayerABI holds every EigenLayer event the indexer decodes (the
// pre-slashing variants and every event of the v1.x core contracts except
// their pause, ownership and initialization events) and the few view
// functions it calls.
//
//go:embed eigenlayer.abi.json
var eigenLayerABIJSON []byte

// EigenLayerABI is the parsed form of eigenlayer.abi.json.
var EigenLayerABI = mustParseABI(eigenLayerABIJSON)

func mustParseABI(b []byte) abi.ABI {
	parsed, err := abi.JSON(bytes.NewReader(b))
	if err != nil {
		panic(fmt.Sprintf("indexer: embedded ABI: %v", err))
	}
	return parsed
}

// ErrUndecodable marks a log that carries a known event signature but whose
// topics or data do not match it.
var ErrUndecodable = errors.New("undecodable log")

// Observations are facts decoded from logs that the event model has no type
// for but the indexer acts on: strategies added to or removed from the
// deposit whitelist, and the AVSs whose set of strategies may have changed.
type Observations struct {
	WhitelistedStrategies []string
	// TouchedAVS holds, for every AVS that appeared in the decoded logs and
	// every block it appeared in, the position of the last log of that
	// block that named it.
	TouchedAVS map[AVSBlock]chain.Position
}

// AVSBlock names an AVS in one block.
type AVSBlock struct {
	AVS   string
	Block uint64
}

func (o *Observations) touchAVS(avs string, pos chain.Position) {
	if o.TouchedAVS == nil {
		o.TouchedAVS = make(map[AVSBlock]chain.Position)
	}
	k := AVSBlock{avs, pos.BlockNumber}
	if last, ok := o.TouchedAVS[k]; !ok || last.Before(pos) {
		o.TouchedAVS[k] = pos
	}
}

// contractRole names the core contract an event must come from.
type contractRole int

const (
	roleDelegationManager contractRole = iota
	roleStrategyManager
	roleEigenPodManager
	roleAVSDirectory
	roleRewardsCoordinator
	roleAllocationManager
)

// eventDecoder decodes one event signature.
type eventDecoder struct {
	event  abi.Event
	roles  []contractRole
	decode func(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error
}

// Decoder turns the logs of one EigenLayer deployment into chain events.
// Its methods are safe for concurrent use.
type Decoder struct {
	byTopic map[common.Hash]decoderEntry
	topics  []common.Hash
	addrs   []common.Address
	core    map[common.Address]bool // every address of addrs

	unknownMu     sync.Mutex
	unknownLog    *slog.Logger // nil: slog.Default()
	unknownCount  *Metrics
	unknownWarned map[common.Hash]bool
}

type decoderEntry struct {
	eventDecoder
	emitters map[common.Address]bool
}

// eventsBySignature maps each event's canonical signature to its decoder.
// Every event of the ABI is listed, including the ones that carry no state
// the service keeps (they are decoded, checked and dropped) and the ones
// kept only as a chain.ProtocolEvent.
var eventsBySignature = map[string]struct {
	roles  []contractRole
	decode func(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error
}{
	"OperatorRegistered(address,(address,address,uint32))": {[]contractRole{roleDelegationManager}, decodeOperatorRegistered},
	"OperatorRegistered(address,address)":                  {[]contractRole{roleDelegationManager}, decodeOperatorRegistered},
	"OperatorMetadataURIUpdated(address,string)":           {[]contractRole{roleDelegationManager}, decodeMetadataURI(chain.SubjectOperator)},
	"OperatorSharesIncreased(address,address,address,uint256)": {
		[]contractRole{roleDelegationManager}, decodeOperatorShares(chain.SharesIncreased)},
	// A slash emits OperatorSharesDecreased for the zero staker; the decoder
	// turns that one into a SlashedOperatorShares event.
	"OperatorSharesDecreased(address,address,address,uint256)": {
		[]contractRole{roleDelegationManager}, decodeOperatorShares(chain.SharesDecreased)},
	"OperatorSharesSlashed(address,address,uint256)": {
		[]contractRole{roleDelegationManager}, decodeOperatorSharesSlashed},
	"DepositScalingFactorUpdated(address,address,uint256)": {
		[]contractRole{roleDelegationManager}, decodeDepositScalingFactor},
	"DelegationApproverUpdated(address,address)": {[]contractRole{roleDelegationManager}, decodeProtocolEvent},
	"StakerDelegated(address,address)":           {[]contractRole{roleDelegationManager}, decodeDelegation(chain.Delegation)},
	"StakerUndelegated(address,address)":         {[]contractRole{roleDelegationManager}, decodeDelegation(chain.Undelegation)},
	// Every version of the DelegationManager emits StakerUndelegated right
	// beside StakerForceUndelegated; applying both would count one
	// undelegation twice, so the forced variant is only checked.
	"StakerForceUndelegated(address,address)": {[]contractRole{roleDelegationManager}, decodeOnly},
	"WithdrawalQueued(bytes32,(address,address,address,uint256,uint32,address[],uint256[]))": {
		[]contractRole{roleDelegationManager}, decodeWithdrawalQueued},
	"SlashingWithdrawalQueued(bytes32,(address,address,address,uint256,uint32,address[],uint256[]),uint256[])": {
		[]contractRole{roleDelegationManager}, decodeWithdrawalQueued},
	"WithdrawalCompleted(bytes32)":         {[]contractRole{roleDelegationManager}, decodeWithdrawalCompleted},
	"SlashingWithdrawalCompleted(bytes32)": {[]contractRole{roleDelegationManager}, decodeWithdrawalCompleted},
	// A migration re-queues an M1 withdrawal: the WithdrawalQueued event
	// emitted with it carries the state, so the migration itself is only checked.
	"WithdrawalMigrated(bytes32,bytes32)":                         {[]contractRole{roleDelegationManager}, decodeOnly},
	"Deposit(address,address,address,uint256)":                    {[]contractRole{roleStrategyManager}, decodeDeposit},
	"Deposit(address,address,uint256)":                            {[]contractRole{roleStrategyManager}, decodeDeposit},
	"StrategyAddedToDepositWhitelist(address)":                    {[]contractRole{roleStrategyManager}, decodeStrategyWhitelisted},
	"StrategyRemovedFromDepositWhitelist(address)":                {[]contractRole{roleStrategyManager}, decodeOnly},
	"StrategyWhitelisterChanged(address,address)":                 {[]contractRole{roleStrategyManager}, decodeProtocolEvent},
	"BurnableSharesIncreased(address,uint256)":                    {[]contractRole{roleStrategyManager}, decodeProtocolEvent},
	"BurnableSharesDecreased(address,uint256)":                    {[]contractRole{roleStrategyManager}, decodeProtocolEvent},
	"OperatorAVSRegistrationStatusUpdated(address,address,uint8)": {[]contractRole{roleAVSDirectory}, decodeRegistration},
	"AVSMetadataURIUpdated(address,string)": {
		[]contractRole{roleAVSDirectory, roleAllocationManager}, decodeMetadataURI(chain.SubjectAVS)},
	// A pod's existence changes no balance; PodSharesUpdated does.
	"PodDeployed(address,address)":     {[]contractRole{roleEigenPodManager}, decodeOnly},
	"PodSharesUpdated(address,int256)": {[]contractRole{roleEigenPodManager}, decodePodShares},
	"BeaconChainSlashingFactorDecreased(address,uint64,uint64)": {
		[]contractRole{roleEigenPodManager}, decodeBeaconSlashingFactor},
	"BeaconChainETHDeposited(address,uint256)": {[]contractRole{roleEigenPodManager}, decodeProtocolEvent},
	"NewTotalShares(address,int256)":           {[]contractRole{roleEigenPodManager}, decodeProtocolEvent},
	"BurnableETHSharesIncreased(uint256)":      {[]contractRole{roleEigenPodManager}, decodeProtocolEvent},
	"BeaconChainETHWithdrawalCompleted(address,uint256,uint96,address,address,bytes32)": {
		[]contractRole{roleEigenPodManager}, decodeProtocolEvent},
	"AVSRewardsSubmissionCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))": {
		[]contractRole{roleRewardsCoordinator}, decodeRewardsSubmission(chain.RewardsAVS)},
	"RewardsSubmissionForAllCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))": {
		[]contractRole{roleRewardsCoordinator}, decodeRewardsSubmission(chain.RewardsForAll)},
	"RewardsSubmissionForAllEarnersCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))": {
		[]contractRole{roleRewardsCoordinator}, decodeRewardsSubmission(chain.RewardsForAllEarners)},
	"OperatorDirectedAVSRewardsSubmissionCreated(address,address,bytes32,uint256,((address,uint96)[],address,(address,uint256)[],uint32,uint32,string))": {
		[]contractRole{roleRewardsCoordinator}, decodeOperatorDirectedAVSRewards},
	"OperatorDirectedOperatorSetRewardsSubmissionCreated(address,bytes32,(address,uint32),uint256,((address,uint96)[],address,(address,uint256)[],uint32,uint32,string))": {
		[]contractRole{roleRewardsCoordinator}, decodeOperatorDirectedOperatorSetRewards},
	"DistributionRootSubmitted(uint32,bytes32,uint32,uint32)": {[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"DistributionRootDisabled(uint32)":                        {[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"RewardsClaimed(bytes32,address,address,address,address,uint256)": {
		[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"ClaimerForSet(address,address,address)":       {[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"ActivationDelaySet(uint32,uint32)":            {[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"RewardsUpdaterSet(address,address)":           {[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"RewardsForAllSubmitterSet(address,bool,bool)": {[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"DefaultOperatorSplitBipsSet(uint16,uint16)":   {[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"OperatorPISplitBipsSet(address,address,uint32,uint16,uint16)": {
		[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"OperatorAVSSplitBipsSet(address,address,address,uint32,uint16,uint16)": {
		[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"OperatorSetSplitBipsSet(address,address,(address,uint32),uint32,uint16,uint16)": {
		[]contractRole{roleRewardsCoordinator}, decodeProtocolEvent},
	"OperatorSetCreated((address,uint32))": {[]contractRole{roleAllocationManager}, decodeOperatorSetCreated},
	"StrategyAddedToOperatorSet((address,uint32),address)": {
		[]contractRole{roleAllocationManager}, decodeOperatorSetStrategy(true)},
	"StrategyRemovedFromOperatorSet((address,uint32),address)": {
		[]contractRole{roleAllocationManager}, decodeOperatorSetStrategy(false)},
	"OperatorAddedToOperatorSet(address,(address,uint32))": {
		[]contractRole{roleAllocationManager}, decodeOperatorSetMembership(true)},
	"OperatorRemovedFromOperatorSet(address,(address,uint32))": {
		[]contractRole{roleAllocationManager}, decodeOperatorSetMembership(false)},
	"AllocationDelaySet(address,uint32,uint32)": {[]contractRole{roleAllocationManager}, decodeAllocationDelay},
	"AllocationUpdated(address,(address,uint32),address,uint64,uint32)": {
		[]contractRole{roleAllocationManager}, decodeAllocationUpdated},
	"MaxMagnitudeUpdated(address,address,uint64)": {[]contractRole{roleAllocationManager}, decodeMaxMagnitude},
	"EncumberedMagnitudeUpdated(address,address,uint64)": {
		[]contractRole{roleAllocationManager}, decodeEncumberedMagnitude},
	"OperatorSlashed(address,(address,uint32),address[],uint256[],string)": {
		[]contractRole{roleAllocationManager}, decodeOperatorSlashed},
	"AVSRegistrarSet(address,address)": {[]contractRole{roleAllocationManager}, decodeProtocolEvent},

	// Administration events every core contract (or its proxy) emits:
	// initialisation, ownership, pausing and upgrades. They change no
	// figure; they are kept as protocol events so that they are not
	// reported as unknown.
	"Initialized(uint8)":                    {allRoles, decodeProtocolEvent},
	"OwnershipTransferred(address,address)": {allRoles, decodeProtocolEvent},
	"Paused(address,uint256)":               {allRoles, decodeProtocolEvent},
	"Unpaused(address,uint256)":             {allRoles, decodeProtocolEvent},
	"PauserRegistrySet(address,address)":    {allRoles, decodeProtocolEvent},
	"Upgraded(address)":                     {allRoles, decodeProtocolEvent},
	"AdminChanged(address,address)":         {allRoles, decodeProtocolEvent},
	"BeaconUpgraded(address)":               {allRoles, decodeProtocolEvent},
}

// allRoles are the roles of every core contract.
var allRoles = []contractRole{roleDelegationManager, roleStrategyManager, roleEigenPodManager,
	roleAVSDirectory, roleRewardsCoordinator, roleAllocationManager}

// NewDecoder builds a decoder for the given deployment.
func NewDecoder(c chain.Contracts) (*Decoder, error) {
	roleAddr := map[contractRole]string{
		roleDelegationManager:  c.DelegationManager,
		roleStrategyManager:    c.StrategyManager,
		roleEigenPodManager:    c.EigenPodManager,
		roleAVSDirectory:       c.AVSDirectory,
		roleRewardsCoordinator: c.RewardsCoordinator,
		roleAllocationManager:  c.AllocationManager,
	}
	d := &Decoder{
		byTopic:       make(map[common.Hash]decoderEntry),
		core:          make(map[common.Address]bool),
		unknownCount:  NewMetrics(),
		unknownWarned: make(map[common.Hash]bool),
	}
	seenAddr := d.core
	for _, ev := range EigenLayerABI.Events {
		spec, ok := eventsBySignature[ev.Sig]
		if !ok {
			return nil, fmt.Errorf("event %s has no decoder", ev.Sig)
		}
		entry := decoderEntry{
			eventDecoder: eventDecoder{event: ev, roles: spec.roles, decode: spec.decode},
			emitters:     make(map[common.Address]bool),
		}
		for _, r := range spec.roles {
			s := roleAddr[r]
			if s == "" {
				continue // a deployment without, say, an AllocationManager yet
			}
			if !common.IsHexAddress(s) {
				return nil, fmt.Errorf("contract address %q is not an address", s)
			}
			a := common.HexToAddress(s)
			entry.emitters[a] = true
			if !seenAddr[a] {
				seenAddr[a] = true
				d.addrs = append(d.addrs, a)
			}
		}
		d.byTopic[ev.ID] = entry
		d.topics = append(d.topics, ev.ID)
	}
	if len(d.byTopic) != len(eventsBySignature) {
		return nil, fmt.Errorf("ABI has %d events, %d decoders", len(d.byTopic), len(eventsBySignature))
	}
	if len(d.addrs) == 0 {
		return nil, errors.New("no contract addresses configured")
	}
	return d, nil
}

// Addresses are the contracts whose logs the decoder understands.
func (d *Decoder) Addresses() []common.Address { return d.addrs }

// Topics are the event signatures (topic 0) the decoder understands. The
// indexer does not filter the logs it fetches by them: it reads every log
// of the core contracts, so that an event it does not know is reported.
func (d *Decoder) Topics() []common.Hash { return d.topics }

// SetReporting directs the reports of logs that a core contract emitted
// with an event signature (topic 0) the decoder does not know: each such
// log is counted in m (by contract and topic) and the first log of each
// signature is logged at level Warn to log. A nil log means slog.Default();
// a nil m keeps counting in metrics of the decoder's own. Without a call
// the decoder behaves as if called with nil and nil.
func (d *Decoder) SetReporting(log *slog.Logger, m *Metrics) {
	d.unknownMu.Lock()
	defer d.unknownMu.Unlock()
	d.unknownLog = log
	if m == nil {
		m = NewMetrics()
	}
	d.unknownCount = m
}

// Decode decodes one log into b (and obs for facts outside the event
// model). blockTime is the time of the log's block. A log of a known event
// from a contract that does not emit it is ignored, and so is a log of a
// contract outside the deployment; a log with a known signature but
// malformed topics or data returns an error wrapping ErrUndecodable. A log
// of a core contract with an unknown signature is never an error: it is
// reported (see SetReporting) and kept as a chain.ProtocolEvent named
// "unknown" with its raw topics and data.
func (d *Decoder) Decode(lg *types.Log, blockTime time.Time, b *chain.Batch, obs *Observations) (err error) {
	if len(lg.Topics) == 0 {
		return nil
	}
	entry, ok := d.byTopic[lg.Topics[0]]
	if !ok {
		if d.core[lg.Address] {
			d.unknownEvent(lg, blockTime, b)
		}
		return nil
	}
	if !entry.emitters[lg.Address] {
		return nil
	}
	if lg.Index > 1<<31-1 {
		return fmt.Errorf("%w: log index %d out of range", ErrUndecodable, lg.Index)
	}
	pos := logPosition(lg, blockTime)
	defer func() {
		// abi.ConvertType panics on a shape mismatch; that is a bad log,
		// not a reason to stop the process.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s at block %d log %d: %v", ErrUndecodable, entry.event.Name, lg.BlockNumber, lg.Index, r)
		}
	}()
	if err := entry.decode(&entry.event, lg, pos, b, obs); err != nil {
		return fmt.Errorf("%w: %s at block %d log %d: %v", ErrUndecodable, entry.event.Sig, lg.BlockNumber, lg.Index, err)
	}
	return nil
}

// logPosition is the position of lg, whose index must fit a uint32.
func logPosition(lg *types.Log, blockTime time.Time) chain.Position {
	return chain.Position{
		BlockNumber: lg.BlockNumber,
		BlockHash:   hexLower(lg.BlockHash[:]),
		BlockTime:   blockTime.UTC(),
		TxHash:      hexLower(lg.TxHash[:]),
		LogIndex:    uint32(lg.Index),
	}
}

// unknownEvent counts and reports a log of a core contract whose topic 0
// no decoder knows, and keeps it in b as a ProtocolEvent named "unknown"
// whose arguments are the log's raw topics and data.
func (d *Decoder) unknownEvent(lg *types.Log, blockTime time.Time, b *chain.Batch) {
	contract, topic := addrLower(lg.Address), hexLower(lg.Topics[0][:])
	d.unknownMu.Lock()
	d.unknownCount.UnknownEvent(contract, topic)
	first := !d.unknownWarned[lg.Topics[0]]
	d.unknownWarned[lg.Topics[0]] = true
	log := d.unknownLog
	d.unknownMu.Unlock()
	if first {
		if log == nil {
			log = slog.Default()
		}
		log.Warn("a core contract emitted an event the decoder does not know; it is kept as an unknown protocol event, "+
			"and further logs with this topic are only counted",
			slog.Group("log",
				slog.String("contract", contract),
				slog.String("topic", topic),
				slog.Uint64("block", lg.BlockNumber),
				slog.String("tx", hexLower(lg.TxHash[:])),
				slog.Uint64("index", uint64(lg.Index))))
	}
	if lg.Index > 1<<31-1 {
		return // no position to keep it at; it is counted all the same
	}
	topics := make([]any, len(lg.Topics))
	for i, t := range lg.Topics {
		topics[i] = hexLower(t[:])
	}
	b.ProtocolEvents = append(b.ProtocolEvents, chain.ProtocolEvent{
		Position: logPosition(lg, blockTime),
		Contract: contract,
		Name:     "unknown",
		Args:     map[string]any{"topics": topics, "data": hexLower(lg.Data)},
	})
}

// indexedArgs checks the log's topic count and returns the indexed topics
// (without topic 0).
func indexedArgs(ev *abi.Event, lg *types.Log) ([]common.Hash, error) {
	n := 0
	for _, in := range ev.Inputs {
		if in.Indexed {
			n++
		}
	}
	if len(lg.Topics) != n+1 {
		return nil, fmt.Errorf("want %d topics, got %d", n+1, len(lg.Topics))
	}
	return lg.Topics[1:], nil
}

// topicAddress reads an address from an indexed topic, rejecting a topic
// whose upper 12 bytes are not zero.
func topicAddress(t common.Hash) (string, error) {
	for _, b := range t[:12] {
		if b != 0 {
			return "", fmt.Errorf("topic %s is not an address", t.Hex())
		}
	}
	return addrLower(common.BytesToAddress(t[12:])), nil
}

// unpackData unpacks the non-indexed arguments of a log.
func unpackData(ev *abi.Event, lg *types.Log) ([]any, error) {
	return ev.Inputs.NonIndexed().Unpack(lg.Data)
}

func addrLower(a common.Address) string { return strings.ToLower(a.Hex()) }

func hexLower(b []byte) string { return "0x" + fmt.Sprintf("%x", b) }

func addrsLower(as []common.Address) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = addrLower(a)
	}
	return out
}

func decodeOnly(ev *abi.Event, lg *types.Log, _ chain.Position, _ *chain.Batch, _ *Observations) error {
	topics, err := indexedArgs(ev, lg)
	if err != nil {
		return err
	}
	for i, in := range indexedInputs(ev) {
		if in.Type.T == abi.AddressTy {
			if _, err := topicAddress(topics[i]); err != nil {
				return err
			}
		}
	}
	_, err = unpackData(ev, lg)
	return err
}

func indexedInputs(ev *abi.Event) []abi.Argument {
	var out []abi.Argument
	for _, in := range ev.Inputs {
		if in.Indexed {
			out = append(out, in)
		}
	}
	return out
}

func decodeOperatorRegistered(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	topics, err := indexedArgs(ev, lg)
	if err != nil {
		return err
	}
	op, err := topicAddress(topics[0])
	if err != nil {
		return err
	}
	// Both variants' data must decode, though only the operator is kept.
	if _, err := unpackData(ev, lg); err != nil {
		return err
	}
	b.OperatorsRegistered = append(b.OperatorsRegistered, chain.OperatorRegistered{Position: pos, Operator: op})
	return nil
}

func decodeMetadataURI(subject chain.Subject) func(*abi.Event, *types.Log, chain.Position, *chain.Batch, *Observations) error {
	return func(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
		topics, err := indexedArgs(ev, lg)
		if err != nil {
			return err
		}
		addr, err := topicAddress(topics[0])
		if err != nil {
			return err
		}
		vals, err := unpackData(ev, lg)
		if err != nil {
			return err
		}
		uri := vals[0].(string)
		b.MetadataURIs = append(b.MetadataURIs, chain.MetadataURIUpdated{Position: pos, Subject: subject, Address: addr, URI: uri})
		if subject == chain.SubjectAVS {
			obs.touchAVS(addr, pos)
		}
		return nil
	}
}

func decodeOperatorShares(typ chain.DelegationType) func(*abi.Event, *types.Log, chain.Position, *chain.Batch, *Observations) error {
	return func(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
		topics, err := indexedArgs(ev, lg)
		if err != nil {
			return err
		}
		op, err := topicAddress(topics[0])
		if err != nil {
			return err
		}
		vals, err := unpackData(ev, lg)
		if err != nil {
			return err
		}
		staker := vals[0].(common.Address)
		if typ == chain.SharesDecreased && staker == (common.Address{}) {
			// A slash takes the shares from the operator, not from a staker.
			b.SlashedOperatorShares = append(b.SlashedOperatorShares, chain.SlashedOperatorShares{
				Position: pos,
				Operator: op,
				Strategy: addrLower(vals[1].(common.Address)),
				Shares:   new(big.Int).Set(vals[2].(*big.Int)),
			})
			return nil
		}
		b.Delegations = append(b.Delegations, chain.DelegationEvent{
			Position: pos,
			Type:     typ,
			Staker:   addrLower(staker),
			Operator: op,
			Strategy: addrLower(vals[1].(common.Address)),
			Shares:   new(big.Int).Set(vals[2].(*big.Int)),
		})
		return nil
	}
}

func decodeDelegation(typ chain.DelegationType) func(*abi.Event, *types.Log, chain.Position, *chain.Batch, *Observations) error {
	return func(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
		topics, err := indexedArgs(ev, lg)
		if err != nil {
			return err
		}
		staker, err := topicAddress(topics[0])
		if err != nil {
			return err
		}
		op, err := topicAddress(topics[1])
		if err != nil {
			return err
		}
		if len(lg.Data) != 0 {
			return fmt.Errorf("unexpected %d data bytes", len(lg.Data))
		}
		b.Delegations = append(b.Delegations, chain.DelegationEvent{Position: pos, Type: typ, Staker: staker, Operator: op})
		return nil
	}
}

// withdrawalTuple mirrors the Withdrawal struct of the DelegationManager.
type withdrawalTuple struct {
	Staker      common.Address
	DelegatedTo common.Address
	Withdrawer  common.Address
	Nonce       *big.Int
	StartBlock  uint32
	Strategies  []common.Address
	Shares      []*big.Int
}

func decodeWithdrawalQueued(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	if _, err := indexedArgs(ev, lg); err != nil {
		return err
	}
	vals, err := unpackData(ev, lg)
	if err != nil {
		return err
	}
	root := vals[0].([32]byte)
	w := *abi.ConvertType(vals[1], new(withdrawalTuple)).(*withdrawalTuple)
	if len(w.Shares) != len(w.Strategies) {
		return fmt.Errorf("%d strategies but %d share amounts", len(w.Strategies), len(w.Shares))
	}
	shares := w.Shares
	var scaled []*big.Int
	if len(vals) == 3 {
		// After the slashing upgrade the struct holds scaled shares; the
		// shares the withdrawal was queued for are sharesToWithdraw.
		shares = vals[2].([]*big.Int)
		scaled = copyBigs(w.Shares)
		if len(shares) != len(w.Strategies) {
			return fmt.Errorf("%d strategies but %d shares to withdraw", len(w.Strategies), len(shares))
		}
	}
	out := copyBigs(shares)
	b.WithdrawalsQueued = append(b.WithdrawalsQueued, chain.WithdrawalQueued{
		Position:     pos,
		Root:         hexLower(root[:]),
		Nonce:        new(big.Int).Set(w.Nonce),
		Staker:       addrLower(w.Staker),
		DelegatedTo:  addrLower(w.DelegatedTo),
		Withdrawer:   addrLower(w.Withdrawer),
		StartBlock:   w.StartBlock,
		Strategies:   addrsLower(w.Strategies),
		Shares:       out,
		ScaledShares: scaled,
	})
	return nil
}

func decodeWithdrawalCompleted(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	if _, err := indexedArgs(ev, lg); err != nil {
		return err
	}
	vals, err := unpackData(ev, lg)
	if err != nil {
		return err
	}
	root := vals[0].([32]byte)
	b.WithdrawalsDone = append(b.WithdrawalsDone, chain.WithdrawalCompleted{Position: pos, Root: hexLower(root[:])})
	return nil
}

func decodeDeposit(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	if _, err := indexedArgs(ev, lg); err != nil {
		return err
	}
	vals, err := unpackData(ev, lg)
	if err != nil {
		return err
	}
	d := chain.Deposit{Position: pos, Staker: addrLower(vals[0].(common.Address))}
	if len(vals) == 4 {
		d.Token = addrLower(vals[1].(common.Address))
		vals = vals[1:]
	}
	d.Strategy = addrLower(vals[1].(common.Address))
	d.Shares = new(big.Int).Set(vals[2].(*big.Int))
	b.Deposits = append(b.Deposits, d)
	return nil
}

func decodeStrategyWhitelisted(ev *abi.Event, lg *types.Log, _ chain.Position, _ *chain.Batch, obs *Observations) error {
	if _, err := indexedArgs(ev, lg); err != nil {
		return err
	}
	vals, err := unpackData(ev, lg)
	if err != nil {
		return err
	}
	obs.WhitelistedStrategies = append(obs.WhitelistedStrategies, addrLower(vals[0].(common.Address)))
	return nil
}

func decodeRegistration(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
	topics, err := indexedArgs(ev, lg)
	if err != nil {
		return err
	}
	op, err := topicAddress(topics[0])
	if err != nil {
		return err
	}
	avs, err := topicAddress(topics[1])
	if err != nil {
		return err
	}
	vals, err := unpackData(ev, lg)
	if err != nil {
		return err
	}
	status := vals[0].(uint8)
	if status > 1 {
		return fmt.Errorf("registration status %d", status)
	}
	b.Registrations = append(b.Registrations, chain.RegistrationStatusUpdated{
		Position: pos, Operator: op, AVS: avs, Registered: status == 1,
	})
	obs.touchAVS(avs, pos)
	return nil
}

func decodePodShares(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	topics, err := indexedArgs(ev, lg)
	if err != nil {
		return err
	}
	owner, err := topicAddress(topics[0])
	if err != nil {
		return err
	}
	vals, err := unpackData(ev, lg)
	if err != nil {
		return err
	}
	b.PodShares = append(b.PodShares, chain.PodSharesUpdated{
		Position: pos, PodOwner: owner, SharesDelta: new(big.Int).Set(vals[0].(*big.Int)),
	})
	return nil
}

// rewardsSubmissionTuple mirrors IRewardsCoordinator.RewardsSubmission.
type rewardsSubmissionTuple struct {
	StrategiesAndMultipliers []struct {
		Strategy   common.Address
		Multiplier *big.Int
	}
	Token          common.Address
	Amount         *big.Int
	StartTimestamp uint32
	Duration       uint32
}

// decodeRewardsSubmission decodes the three submission events that share
// the RewardsSubmission struct: kind RewardsAVS (the first topic is the
// AVS), RewardsForAll (the submitter) and RewardsForAllEarners (the token
// hopper).
func decodeRewardsSubmission(kind chain.RewardsKind) func(*abi.Event, *types.Log, chain.Position, *chain.Batch, *Observations) error {
	forAll := kind != chain.RewardsAVS
	return func(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
		topics, err := indexedArgs(ev, lg)
		if err != nil {
			return err
		}
		avs, err := topicAddress(topics[0])
		if err != nil {
			return err
		}
		vals, err := unpackData(ev, lg)
		if err != nil {
			return err
		}
		rs := *abi.ConvertType(vals[0], new(rewardsSubmissionTuple)).(*rewardsSubmissionTuple)
		sub := chain.RewardsSubmission{
			Position:       pos,
			AVS:            avs,
			ForAll:         forAll,
			Kind:           kind,
			Nonce:          new(big.Int).SetBytes(topics[1][:]),
			Hash:           hexLower(topics[2][:]),
			Token:          addrLower(rs.Token),
			Amount:         new(big.Int).Set(rs.Amount),
			StartTimestamp: rs.StartTimestamp,
			Duration:       rs.Duration,
		}
		for _, sm := range rs.StrategiesAndMultipliers {
			sub.Strategies = append(sub.Strategies, chain.StrategyMultiplier{
				Strategy: addrLower(sm.Strategy), Multiplier: new(big.Int).Set(sm.Multiplier),
			})
		}
		b.RewardsSubmissions = append(b.RewardsSubmissions, sub)
		if !forAll {
			obs.touchAVS(avs, pos)
		}
		return nil
	}
}
