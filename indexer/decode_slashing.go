package indexer

import (
	"bytes"
	"fmt"
	"math/big"
	"reflect"
	"strconv"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/stakegraph/stakegraph/chain"
)

// This file decodes the events of the slashing-era (v1.x) core contracts
// that the pre-slashing decoders do not cover: the AllocationManager's
// operator sets, allocations and slashes, the DelegationManager's and
// EigenPodManager's slashing factors, the operator-directed rewards
// submissions, and every configuration or bookkeeping event, which becomes
// a chain.ProtocolEvent.

// eventArgs checks a log against ev and returns the values of all of ev's
// arguments in declaration order: indexed ones read from the topics,
// the others unpacked from the data. An indexed argument of a static type
// must be encoded in its topic exactly as the ABI encodes it (an address
// with zero upper bytes, an integer within its range); an indexed argument
// of a dynamic type (string, bytes, array, tuple) is its keccak hash and is
// returned as a common.Hash.
func eventArgs(ev *abi.Event, lg *types.Log) ([]any, error) {
	topics, err := indexedArgs(ev, lg)
	if err != nil {
		return nil, err
	}
	data, err := unpackData(ev, lg)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(ev.Inputs))
	ti, di := 0, 0
	for i, in := range ev.Inputs {
		if !in.Indexed {
			out[i] = data[di]
			di++
			continue
		}
		v, err := topicValue(in.Type, topics[ti])
		if err != nil {
			return nil, fmt.Errorf("indexed argument %s: %w", in.Name, err)
		}
		out[i] = v
		ti++
	}
	return out, nil
}

// hashedInTopic reports whether an indexed argument of type t is stored in
// its topic as the keccak hash of its encoding rather than as its value.
func hashedInTopic(t abi.Type) bool {
	switch t.T {
	case abi.StringTy, abi.BytesTy, abi.SliceTy, abi.ArrayTy, abi.TupleTy:
		return true
	}
	return false
}

// topicValue decodes an indexed argument of type t from its topic.
func topicValue(t abi.Type, topic common.Hash) (any, error) {
	if hashedInTopic(t) {
		return topic, nil
	}
	args := abi.Arguments{{Type: t}}
	vals, err := args.Unpack(topic[:])
	if err != nil {
		return nil, err
	}
	packed, err := args.Pack(vals[0])
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(packed, topic[:]) {
		return nil, fmt.Errorf("topic %s is not a %s", topic.Hex(), t.String())
	}
	return vals[0], nil
}

// bytes32Type is the type an indexed argument of a dynamic type has in its
// topic: the hash of its encoding.
var bytes32Type = func() abi.Type {
	t, err := abi.NewType("bytes32", "", nil)
	if err != nil {
		panic(err)
	}
	return t
}()

// decodeProtocolEvent keeps any event as a ProtocolEvent whose Args hold
// every argument by name, rendered by renderArg.
func decodeProtocolEvent(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	args := make(map[string]any, len(vals))
	for i, in := range ev.Inputs {
		t := in.Type
		if in.Indexed && hashedInTopic(t) {
			t = bytes32Type
		}
		name := in.Name
		if name == "" {
			name = "arg" + strconv.Itoa(i)
		}
		args[name] = renderArg(t, reflect.ValueOf(vals[i]))
	}
	b.ProtocolEvents = append(b.ProtocolEvents, chain.ProtocolEvent{
		Position: pos,
		Contract: addrLower(lg.Address),
		Name:     ev.Name,
		Args:     args,
	})
	return nil
}

// renderArg renders a decoded ABI value of type t as a JSON-able value:
// addresses and byte strings as lowercase 0x-prefixed hex, integers as
// decimal strings, booleans and strings as themselves, arrays as []any and
// tuples as map[string]any keyed by the components' names, recursively.
func renderArg(t abi.Type, v reflect.Value) any {
	for v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	switch t.T {
	case abi.AddressTy:
		return addrLower(v.Interface().(common.Address))
	case abi.FixedBytesTy, abi.FunctionTy, abi.HashTy, abi.BytesTy:
		raw := make([]byte, v.Len())
		for i := range raw {
			raw[i] = byte(v.Index(i).Uint())
		}
		return hexLower(raw)
	case abi.IntTy, abi.UintTy:
		switch x := v.Interface().(type) {
		case *big.Int:
			return x.String()
		}
		if v.CanInt() {
			return strconv.FormatInt(v.Int(), 10)
		}
		return strconv.FormatUint(v.Uint(), 10)
	case abi.BoolTy:
		return v.Bool()
	case abi.StringTy:
		return v.String()
	case abi.SliceTy, abi.ArrayTy:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = renderArg(*t.Elem, v.Index(i))
		}
		return out
	case abi.TupleTy:
		out := make(map[string]any, len(t.TupleElems))
		for i, et := range t.TupleElems {
			out[t.TupleRawNames[i]] = renderArg(*et, v.Field(i))
		}
		return out
	}
	return fmt.Sprint(v.Interface())
}

// operatorSetTuple mirrors OperatorSetLib.OperatorSet.
type operatorSetTuple struct {
	Avs common.Address
	Id  uint32
}

func (s operatorSetTuple) set() chain.OperatorSet {
	return chain.OperatorSet{AVS: addrLower(s.Avs), ID: s.Id}
}

func toOperatorSet(v any) chain.OperatorSet {
	return abi.ConvertType(v, new(operatorSetTuple)).(*operatorSetTuple).set()
}

func copyBigs(in []*big.Int) []*big.Int {
	out := make([]*big.Int, len(in))
	for i, x := range in {
		out[i] = new(big.Int).Set(x)
	}
	return out
}

func decodeOperatorSetCreated(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	set := toOperatorSet(vals[0])
	b.OperatorSetsCreated = append(b.OperatorSetsCreated, chain.OperatorSetCreated{Position: pos, Set: set})
	obs.touchAVS(set.AVS, pos)
	return nil
}

func decodeOperatorSetStrategy(added bool) func(*abi.Event, *types.Log, chain.Position, *chain.Batch, *Observations) error {
	return func(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
		vals, err := eventArgs(ev, lg)
		if err != nil {
			return err
		}
		set := toOperatorSet(vals[0])
		b.OperatorSetStrategies = append(b.OperatorSetStrategies, chain.OperatorSetStrategy{
			Position: pos, Set: set, Strategy: addrLower(vals[1].(common.Address)), Added: added,
		})
		obs.touchAVS(set.AVS, pos)
		return nil
	}
}

func decodeOperatorSetMembership(added bool) func(*abi.Event, *types.Log, chain.Position, *chain.Batch, *Observations) error {
	return func(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
		vals, err := eventArgs(ev, lg)
		if err != nil {
			return err
		}
		set := toOperatorSet(vals[1])
		b.OperatorSetMemberships = append(b.OperatorSetMemberships, chain.OperatorSetMembership{
			Position: pos, Operator: addrLower(vals[0].(common.Address)), Set: set, Added: added,
		})
		obs.touchAVS(set.AVS, pos)
		return nil
	}
}

func decodeAllocationDelay(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	b.AllocationDelays = append(b.AllocationDelays, chain.AllocationDelaySet{
		Position: pos, Operator: addrLower(vals[0].(common.Address)), Delay: vals[1].(uint32), EffectBlock: vals[2].(uint32),
	})
	return nil
}

func decodeAllocationUpdated(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	set := toOperatorSet(vals[1])
	b.Allocations = append(b.Allocations, chain.AllocationUpdated{
		Position:    pos,
		Operator:    addrLower(vals[0].(common.Address)),
		Set:         set,
		Strategy:    addrLower(vals[2].(common.Address)),
		Magnitude:   vals[3].(uint64),
		EffectBlock: vals[4].(uint32),
	})
	obs.touchAVS(set.AVS, pos)
	return nil
}

func decodeMaxMagnitude(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	b.MaxMagnitudes = append(b.MaxMagnitudes, chain.MaxMagnitudeUpdated{
		Position:     pos,
		Operator:     addrLower(vals[0].(common.Address)),
		Strategy:     addrLower(vals[1].(common.Address)),
		MaxMagnitude: vals[2].(uint64),
	})
	return nil
}

func decodeEncumberedMagnitude(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	b.EncumberedMagnitudes = append(b.EncumberedMagnitudes, chain.EncumberedMagnitudeUpdated{
		Position:            pos,
		Operator:            addrLower(vals[0].(common.Address)),
		Strategy:            addrLower(vals[1].(common.Address)),
		EncumberedMagnitude: vals[2].(uint64),
	})
	return nil
}

func decodeOperatorSlashed(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	set := toOperatorSet(vals[1])
	strategies := vals[2].([]common.Address)
	wads := vals[3].([]*big.Int)
	if len(strategies) != len(wads) {
		return fmt.Errorf("%d strategies but %d slashed proportions", len(strategies), len(wads))
	}
	b.Slashings = append(b.Slashings, chain.OperatorSlashed{
		Position:    pos,
		Operator:    addrLower(vals[0].(common.Address)),
		Set:         set,
		Strategies:  addrsLower(strategies),
		WadsSlashed: copyBigs(wads),
		Description: vals[4].(string),
	})
	obs.touchAVS(set.AVS, pos)
	return nil
}

func decodeOperatorSharesSlashed(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	b.OperatorSharesSlashed = append(b.OperatorSharesSlashed, chain.OperatorSharesSlashed{
		Position:     pos,
		Operator:     addrLower(vals[0].(common.Address)),
		Strategy:     addrLower(vals[1].(common.Address)),
		BurnedShares: new(big.Int).Set(vals[2].(*big.Int)),
	})
	return nil
}

func decodeDepositScalingFactor(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	b.DepositScalingFactors = append(b.DepositScalingFactors, chain.DepositScalingFactorUpdated{
		Position: pos,
		Staker:   addrLower(vals[0].(common.Address)),
		Strategy: addrLower(vals[1].(common.Address)),
		Factor:   new(big.Int).Set(vals[2].(*big.Int)),
	})
	return nil
}

func decodeBeaconSlashingFactor(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, _ *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	b.BeaconSlashingFactors = append(b.BeaconSlashingFactors, chain.BeaconChainSlashingFactorDecreased{
		Position: pos,
		Staker:   addrLower(vals[0].(common.Address)),
		Previous: vals[1].(uint64),
		New:      vals[2].(uint64),
	})
	return nil
}

// operatorDirectedRewardsSubmissionTuple mirrors
// IRewardsCoordinator.OperatorDirectedRewardsSubmission.
type operatorDirectedRewardsSubmissionTuple struct {
	StrategiesAndMultipliers []struct {
		Strategy   common.Address
		Multiplier *big.Int
	}
	Token           common.Address
	OperatorRewards []struct {
		Operator common.Address
		Amount   *big.Int
	}
	StartTimestamp uint32
	Duration       uint32
	Description    string
}

// operatorDirectedSubmission builds the submission of an operator-directed
// rewards event from its struct: Amount is the sum of the operators'
// amounts.
func operatorDirectedSubmission(pos chain.Position, v any) chain.RewardsSubmission {
	rs := *abi.ConvertType(v, new(operatorDirectedRewardsSubmissionTuple)).(*operatorDirectedRewardsSubmissionTuple)
	sub := chain.RewardsSubmission{
		Position:       pos,
		Description:    rs.Description,
		Token:          addrLower(rs.Token),
		Amount:         new(big.Int),
		StartTimestamp: rs.StartTimestamp,
		Duration:       rs.Duration,
	}
	for _, sm := range rs.StrategiesAndMultipliers {
		sub.Strategies = append(sub.Strategies, chain.StrategyMultiplier{
			Strategy: addrLower(sm.Strategy), Multiplier: new(big.Int).Set(sm.Multiplier),
		})
	}
	for _, r := range rs.OperatorRewards {
		sub.OperatorRewards = append(sub.OperatorRewards, chain.OperatorReward{
			Operator: addrLower(r.Operator), Amount: new(big.Int).Set(r.Amount),
		})
		sub.Amount.Add(sub.Amount, r.Amount)
	}
	return sub
}

func decodeOperatorDirectedAVSRewards(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	// caller, avs, hash, nonce, submission
	sub := operatorDirectedSubmission(pos, vals[4])
	sub.Kind = chain.RewardsOperatorDirectedAVS
	sub.Submitter = addrLower(vals[0].(common.Address))
	sub.AVS = addrLower(vals[1].(common.Address))
	hash := vals[2].([32]byte)
	sub.Hash = hexLower(hash[:])
	sub.Nonce = new(big.Int).Set(vals[3].(*big.Int))
	b.RewardsSubmissions = append(b.RewardsSubmissions, sub)
	obs.touchAVS(sub.AVS, pos)
	return nil
}

func decodeOperatorDirectedOperatorSetRewards(ev *abi.Event, lg *types.Log, pos chain.Position, b *chain.Batch, obs *Observations) error {
	vals, err := eventArgs(ev, lg)
	if err != nil {
		return err
	}
	// caller, hash, operatorSet, nonce, submission
	sub := operatorDirectedSubmission(pos, vals[4])
	sub.Kind = chain.RewardsOperatorDirectedOpSet
	sub.Submitter = addrLower(vals[0].(common.Address))
	hash := vals[1].([32]byte)
	sub.Hash = hexLower(hash[:])
	set := toOperatorSet(vals[2])
	sub.AVS = set.AVS
	id := set.ID
	sub.OperatorSetID = &id
	sub.Nonce = new(big.Int).Set(vals[3].(*big.Int))
	b.RewardsSubmissions = append(b.RewardsSubmissions, sub)
	obs.touchAVS(sub.AVS, pos)
	return nil
}
