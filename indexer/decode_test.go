package indexer

import (
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/indexer/testchain"
)

var testContracts = chain.Networks["mainnet"].Contracts

// eventBySig finds an event of the embedded ABI by its canonical signature.
func eventBySig(t testing.TB, sig string) abi.Event {
	t.Helper()
	for _, ev := range EigenLayerABI.Events {
		if ev.Sig == sig {
			return ev
		}
	}
	t.Fatalf("no event %s", sig)
	return abi.Event{}
}

// buildLog packs a log exactly as the EVM emits it: topic 0 is the keccak of
// the signature, indexed arguments are topics, the rest is ABI-encoded data.
func buildLog(t testing.TB, emitter string, sig string, indexed []any, data ...any) types.Log {
	t.Helper()
	ev := eventBySig(t, sig)
	if want := crypto.Keccak256Hash([]byte(sig)); ev.ID != want {
		t.Fatalf("%s: ABI id %s, keccak %s", sig, ev.ID, want)
	}
	topics := []common.Hash{ev.ID}
	for _, v := range indexed {
		ts, err := abi.MakeTopics([]any{v})
		if err != nil {
			t.Fatalf("%s: topic %v: %v", sig, v, err)
		}
		topics = append(topics, ts[0][0])
	}
	packed, err := ev.Inputs.NonIndexed().Pack(data...)
	if err != nil {
		t.Fatalf("%s: pack: %v", sig, err)
	}
	return types.Log{
		Address:     common.HexToAddress(emitter),
		Topics:      topics,
		Data:        packed,
		BlockNumber: 19_000_000,
		TxHash:      common.HexToHash("0xaaaa"),
		BlockHash:   common.HexToHash("0xbbbb"),
		Index:       7,
	}
}

// decodeCase is one log and what decoding it must add to an empty batch
// and empty observations.
type decodeCase struct {
	name    string
	log     types.Log
	want    chain.Batch
	wantObs Observations
}

func TestDecodeEveryEventVariant(t *testing.T) {
	dec, err := NewDecoder(testContracts)
	if err != nil {
		t.Fatal(err)
	}
	var (
		op       = common.HexToAddress("0x1111111111111111111111111111111111111111")
		staker   = common.HexToAddress("0x2222222222222222222222222222222222222222")
		avs      = common.HexToAddress("0x3333333333333333333333333333333333333333")
		strat    = common.HexToAddress("0x93c4b944D05dfe6df7645A86cd2206016c51564D")
		strat2   = common.HexToAddress("0x54945180dB7943c0ed0FEE7EdaB2Bd24620256bc")
		token    = common.HexToAddress("0xae7ab96520DE3A18E5e111B5EaAb095312D7fE84")
		root     = [32]byte{0xde, 0xad}
		big1e18  = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
		blockT   = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
		lower    = func(a common.Address) string { return strings.ToLower(a.Hex()) }
		huge, _  = new(big.Int).SetString("115792089237316195423570985008687907853269984665640564039457584007913129639935", 10)
		negative = big.NewInt(-32_000_000_000)
	)
	pos := chain.Position{
		BlockNumber: 19_000_000,
		BlockHash:   "0x000000000000000000000000000000000000000000000000000000000000bbbb",
		BlockTime:   blockT,
		TxHash:      "0x000000000000000000000000000000000000000000000000000000000000aaaa",
		LogIndex:    7,
	}
	w := withdrawalTuple{
		Staker: staker, DelegatedTo: op, Withdrawer: staker, Nonce: big.NewInt(3), StartBlock: 18_999_000,
		Strategies: []common.Address{strat, strat2}, Shares: []*big.Int{big1e18, huge},
	}
	wantQueued := chain.WithdrawalQueued{
		Position: pos, Root: "0xdead000000000000000000000000000000000000000000000000000000000000",
		Nonce: big.NewInt(3), Staker: lower(staker), DelegatedTo: lower(op), Withdrawer: lower(staker),
		StartBlock: 18_999_000, Strategies: []string{lower(strat), lower(strat2)}, Shares: []*big.Int{big1e18, huge},
	}
	wantSlashingQueued := wantQueued
	wantSlashingQueued.Shares = []*big.Int{big.NewInt(5), big.NewInt(6)}
	wantSlashingQueued.ScaledShares = []*big.Int{big1e18, huge}
	rewards := rewardsSubmissionTuple{
		StrategiesAndMultipliers: []struct {
			Strategy   common.Address
			Multiplier *big.Int
		}{{strat, big1e18}, {strat2, big.NewInt(2)}},
		Token: token, Amount: big.NewInt(1_000_000), StartTimestamp: 1714521600, Duration: 604800,
	}
	wantRewards := chain.RewardsSubmission{
		Position: pos, AVS: lower(avs), Kind: chain.RewardsAVS, Nonce: big.NewInt(9),
		Hash:  "0x00000000000000000000000000000000000000000000000000000000000000fe",
		Token: lower(token), Amount: big.NewInt(1_000_000), StartTimestamp: 1714521600, Duration: 604800,
		Strategies: []chain.StrategyMultiplier{{Strategy: lower(strat), Multiplier: big1e18}, {Strategy: lower(strat2), Multiplier: big.NewInt(2)}},
	}
	wantRewardsAll := wantRewards
	wantRewardsAll.ForAll = true
	wantRewardsAll.Kind = chain.RewardsForAll
	type details struct {
		EarningsReceiver         common.Address
		DelegationApprover       common.Address
		StakerOptOutWindowBlocks uint32
	}
	hash := common.HexToHash("0xfe")

	cases := []decodeCase{
		{
			name: "OperatorRegistered before slashing",
			log: buildLog(t, testContracts.DelegationManager, "OperatorRegistered(address,(address,address,uint32))",
				[]any{op}, details{op, common.Address{}, 50400}),
			want: chain.Batch{OperatorsRegistered: []chain.OperatorRegistered{{Position: pos, Operator: lower(op)}}},
		},
		{
			name: "OperatorRegistered after slashing",
			log:  buildLog(t, testContracts.DelegationManager, "OperatorRegistered(address,address)", []any{op}, common.Address{}),
			want: chain.Batch{OperatorsRegistered: []chain.OperatorRegistered{{Position: pos, Operator: lower(op)}}},
		},
		{
			name: "OperatorMetadataURIUpdated",
			log: buildLog(t, testContracts.DelegationManager, "OperatorMetadataURIUpdated(address,string)",
				[]any{op}, "https://example.org/op.json"),
			want: chain.Batch{MetadataURIs: []chain.MetadataURIUpdated{{Position: pos, Subject: chain.SubjectOperator, Address: lower(op), URI: "https://example.org/op.json"}}},
		},
		{
			name: "OperatorSharesIncreased",
			log: buildLog(t, testContracts.DelegationManager, "OperatorSharesIncreased(address,address,address,uint256)",
				[]any{op}, staker, strat, huge),
			want: chain.Batch{Delegations: []chain.DelegationEvent{{Position: pos, Type: chain.SharesIncreased, Staker: lower(staker), Operator: lower(op), Strategy: lower(strat), Shares: huge}}},
		},
		{
			name: "OperatorSharesDecreased",
			log: buildLog(t, testContracts.DelegationManager, "OperatorSharesDecreased(address,address,address,uint256)",
				[]any{op}, staker, strat, big1e18),
			want: chain.Batch{Delegations: []chain.DelegationEvent{{Position: pos, Type: chain.SharesDecreased, Staker: lower(staker), Operator: lower(op), Strategy: lower(strat), Shares: big1e18}}},
		},
		{
			name: "StakerDelegated",
			log:  buildLog(t, testContracts.DelegationManager, "StakerDelegated(address,address)", []any{staker, op}),
			want: chain.Batch{Delegations: []chain.DelegationEvent{{Position: pos, Type: chain.Delegation, Staker: lower(staker), Operator: lower(op)}}},
		},
		{
			name: "StakerUndelegated",
			log:  buildLog(t, testContracts.DelegationManager, "StakerUndelegated(address,address)", []any{staker, op}),
			want: chain.Batch{Delegations: []chain.DelegationEvent{{Position: pos, Type: chain.Undelegation, Staker: lower(staker), Operator: lower(op)}}},
		},
		{
			// Always emitted beside StakerUndelegated, which carries the event.
			name: "StakerForceUndelegated",
			log:  buildLog(t, testContracts.DelegationManager, "StakerForceUndelegated(address,address)", []any{staker, op}),
		},
		{
			name: "WithdrawalQueued",
			log: buildLog(t, testContracts.DelegationManager,
				"WithdrawalQueued(bytes32,(address,address,address,uint256,uint32,address[],uint256[]))", nil, root, w),
			want: chain.Batch{WithdrawalsQueued: []chain.WithdrawalQueued{wantQueued}},
		},
		{
			name: "SlashingWithdrawalQueued",
			log: buildLog(t, testContracts.DelegationManager,
				"SlashingWithdrawalQueued(bytes32,(address,address,address,uint256,uint32,address[],uint256[]),uint256[])",
				nil, root, w, []*big.Int{big.NewInt(5), big.NewInt(6)}),
			want: chain.Batch{WithdrawalsQueued: []chain.WithdrawalQueued{wantSlashingQueued}},
		},
		{
			name: "WithdrawalCompleted",
			log:  buildLog(t, testContracts.DelegationManager, "WithdrawalCompleted(bytes32)", nil, root),
			want: chain.Batch{WithdrawalsDone: []chain.WithdrawalCompleted{{Position: pos, Root: wantQueued.Root}}},
		},
		{
			name: "SlashingWithdrawalCompleted",
			log:  buildLog(t, testContracts.DelegationManager, "SlashingWithdrawalCompleted(bytes32)", nil, root),
			want: chain.Batch{WithdrawalsDone: []chain.WithdrawalCompleted{{Position: pos, Root: wantQueued.Root}}},
		},
		{
			name: "WithdrawalMigrated carries no state of its own",
			log:  buildLog(t, testContracts.DelegationManager, "WithdrawalMigrated(bytes32,bytes32)", nil, root, [32]byte{1}),
		},
		{
			name: "Deposit before slashing",
			log: buildLog(t, testContracts.StrategyManager, "Deposit(address,address,address,uint256)",
				nil, staker, token, strat, big1e18),
			want: chain.Batch{Deposits: []chain.Deposit{{Position: pos, Staker: lower(staker), Token: lower(token), Strategy: lower(strat), Shares: big1e18}}},
		},
		{
			name: "Deposit after slashing",
			log:  buildLog(t, testContracts.StrategyManager, "Deposit(address,address,uint256)", nil, staker, strat, big1e18),
			want: chain.Batch{Deposits: []chain.Deposit{{Position: pos, Staker: lower(staker), Strategy: lower(strat), Shares: big1e18}}},
		},
		{
			name:    "StrategyAddedToDepositWhitelist",
			log:     buildLog(t, testContracts.StrategyManager, "StrategyAddedToDepositWhitelist(address)", nil, strat),
			wantObs: Observations{WhitelistedStrategies: []string{lower(strat)}},
		},
		{
			name: "StrategyRemovedFromDepositWhitelist",
			log:  buildLog(t, testContracts.StrategyManager, "StrategyRemovedFromDepositWhitelist(address)", nil, strat),
		},
		{
			name: "OperatorAVSRegistrationStatusUpdated registered",
			log: buildLog(t, testContracts.AVSDirectory, "OperatorAVSRegistrationStatusUpdated(address,address,uint8)",
				[]any{op, avs}, uint8(1)),
			want:    chain.Batch{Registrations: []chain.RegistrationStatusUpdated{{Position: pos, Operator: lower(op), AVS: lower(avs), Registered: true}}},
			wantObs: Observations{TouchedAVS: map[AVSBlock]chain.Position{{lower(avs), pos.BlockNumber}: pos}},
		},
		{
			name: "OperatorAVSRegistrationStatusUpdated unregistered",
			log: buildLog(t, testContracts.AVSDirectory, "OperatorAVSRegistrationStatusUpdated(address,address,uint8)",
				[]any{op, avs}, uint8(0)),
			want:    chain.Batch{Registrations: []chain.RegistrationStatusUpdated{{Position: pos, Operator: lower(op), AVS: lower(avs), Registered: false}}},
			wantObs: Observations{TouchedAVS: map[AVSBlock]chain.Position{{lower(avs), pos.BlockNumber}: pos}},
		},
		{
			name:    "AVSMetadataURIUpdated from the AVSDirectory",
			log:     buildLog(t, testContracts.AVSDirectory, "AVSMetadataURIUpdated(address,string)", []any{avs}, "ipfs://QmAVS"),
			want:    chain.Batch{MetadataURIs: []chain.MetadataURIUpdated{{Position: pos, Subject: chain.SubjectAVS, Address: lower(avs), URI: "ipfs://QmAVS"}}},
			wantObs: Observations{TouchedAVS: map[AVSBlock]chain.Position{{lower(avs), pos.BlockNumber}: pos}},
		},
		{
			name:    "AVSMetadataURIUpdated from the AllocationManager",
			log:     buildLog(t, testContracts.AllocationManager, "AVSMetadataURIUpdated(address,string)", []any{avs}, "ipfs://QmAVS"),
			want:    chain.Batch{MetadataURIs: []chain.MetadataURIUpdated{{Position: pos, Subject: chain.SubjectAVS, Address: lower(avs), URI: "ipfs://QmAVS"}}},
			wantObs: Observations{TouchedAVS: map[AVSBlock]chain.Position{{lower(avs), pos.BlockNumber}: pos}},
		},
		{
			name: "PodDeployed",
			log:  buildLog(t, testContracts.EigenPodManager, "PodDeployed(address,address)", []any{common.HexToAddress("0x44"), staker}),
		},
		{
			name: "PodSharesUpdated negative",
			log:  buildLog(t, testContracts.EigenPodManager, "PodSharesUpdated(address,int256)", []any{staker}, negative),
			want: chain.Batch{PodShares: []chain.PodSharesUpdated{{Position: pos, PodOwner: lower(staker), SharesDelta: negative}}},
		},
		{
			name: "AVSRewardsSubmissionCreated",
			log: buildLog(t, testContracts.RewardsCoordinator,
				"AVSRewardsSubmissionCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))",
				[]any{avs, big.NewInt(9), hash}, rewards),
			want:    chain.Batch{RewardsSubmissions: []chain.RewardsSubmission{wantRewards}},
			wantObs: Observations{TouchedAVS: map[AVSBlock]chain.Position{{lower(avs), pos.BlockNumber}: pos}},
		},
		{
			name: "RewardsSubmissionForAllCreated",
			log: buildLog(t, testContracts.RewardsCoordinator,
				"RewardsSubmissionForAllCreated(address,uint256,bytes32,((address,uint96)[],address,uint256,uint32,uint32))",
				[]any{avs, big.NewInt(9), hash}, rewards),
			want: chain.Batch{RewardsSubmissions: []chain.RewardsSubmission{wantRewardsAll}},
		},
	}
	cases = append(cases, slashingEraCases(t, pos)...)
	covered := make(map[string]bool)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got chain.Batch
			var obs Observations
			if err := dec.Decode(&tc.log, blockT, &got, &obs); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("batch\n got %+v\nwant %+v", got, tc.want)
			}
			if !reflect.DeepEqual(obs, tc.wantObs) {
				t.Errorf("observations\n got %+v\nwant %+v", obs, tc.wantObs)
			}
			for _, e := range got.ProtocolEvents {
				if _, err := json.Marshal(e.Args); err != nil {
					t.Errorf("%s: arguments are not JSON: %v", e.Name, err)
				}
			}
		})
		ev, err := EigenLayerABI.EventByID(tc.log.Topics[0])
		if err != nil {
			t.Fatal(err)
		}
		covered[ev.Sig] = true
	}
	for _, ev := range EigenLayerABI.Events {
		if !covered[ev.Sig] {
			t.Errorf("event %s has no decoding case", ev.Sig)
		}
	}
}

func TestDecodeRejectsMalformedLogs(t *testing.T) {
	dec, err := NewDecoder(testContracts)
	if err != nil {
		t.Fatal(err)
	}
	staker := common.HexToAddress("0x2222222222222222222222222222222222222222")
	good := buildLog(t, testContracts.EigenPodManager, "PodSharesUpdated(address,int256)", []any{staker}, big.NewInt(1))

	truncated := good
	truncated.Data = good.Data[:20]
	missingTopic := good
	missingTopic.Topics = good.Topics[:1]
	dirtyTopic := good
	dirtyTopic.Topics = []common.Hash{good.Topics[0], common.HexToHash("0xff" + strings.Repeat("00", 11) + strings.Repeat("11", 20))}
	badStatus := buildLog(t, testContracts.AVSDirectory, "OperatorAVSRegistrationStatusUpdated(address,address,uint8)",
		[]any{staker, staker}, uint8(2))
	for name, lg := range map[string]types.Log{
		"truncated data": truncated, "missing topic": missingTopic, "address topic with high bytes": dirtyTopic,
		"unknown registration status": badStatus,
	} {
		var b chain.Batch
		err := dec.Decode(&lg, time.Now(), &b, &Observations{})
		if !errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: err = %v, want ErrUndecodable", name, err)
		}
		if b.Len() != 0 {
			t.Errorf("%s: decoded %d events from a bad log", name, b.Len())
		}
	}
}

func TestDecodeIgnoresForeignEmitters(t *testing.T) {
	dec, err := NewDecoder(testContracts)
	if err != nil {
		t.Fatal(err)
	}
	staker := common.HexToAddress("0x2222222222222222222222222222222222222222")
	// A PodSharesUpdated from the StrategyManager is not an EigenPodManager event.
	lg := buildLog(t, testContracts.StrategyManager, "PodSharesUpdated(address,int256)", []any{staker}, big.NewInt(1))
	var b chain.Batch
	if err := dec.Decode(&lg, time.Now(), &b, &Observations{}); err != nil || b.Len() != 0 {
		t.Fatalf("foreign emitter: err %v, %d events", err, b.Len())
	}
	// A known event from a contract outside the deployment is skipped.
	lg = buildLog(t, "0x4444444444444444444444444444444444444444", "PodSharesUpdated(address,int256)", []any{staker}, big.NewInt(1))
	if err := dec.Decode(&lg, time.Now(), &b, &Observations{}); err != nil || b.Len() != 0 {
		t.Fatalf("contract outside the deployment: err %v, %d events", err, b.Len())
	}
}

// TestEmitterEmitsTheRealSignatures checks that the solc-compiled test
// contract declares the events of the indexer's ABI, so that the
// end-to-end tests see the topics the real contracts emit. The mock
// declares the pre-slashing reference's 24 variants; the indexer's other
// events are the slashing-era ones of v1xCoreEvents and the administration
// events (their real emitters are exercised by the slashingchain package).
func TestEmitterEmitsTheRealSignatures(t *testing.T) {
	mock := map[common.Hash]string{}
	for _, ev := range testchain.MockABI.Events {
		mock[ev.ID] = ev.Sig
	}
	v1x := make(map[string]bool)
	for _, sigs := range v1xCoreEvents {
		for _, sig := range sigs {
			v1x[sig] = true
		}
	}
	// The administration events (initialisation, ownership, pausing,
	// proxy upgrades) come from the real contracts' deployment, which the
	// slashingchain end-to-end test indexes.
	for _, sig := range []string{"Initialized(uint8)", "OwnershipTransferred(address,address)", "Paused(address,uint256)",
		"Unpaused(address,uint256)", "PauserRegistrySet(address,address)", "Upgraded(address)",
		"AdminChanged(address,address)", "BeaconUpgraded(address)"} {
		v1x[sig] = true
	}
	for _, ev := range EigenLayerABI.Events {
		if _, ok := mock[ev.ID]; !ok && !v1x[ev.Sig] {
			t.Errorf("EigenLayerMock does not emit %s", ev.Sig)
		}
		delete(mock, ev.ID)
	}
	for _, sig := range mock {
		t.Errorf("EigenLayerMock emits %s, which the indexer does not decode", sig)
	}
	if n := len(testchain.MockABI.Events); n != 24 {
		t.Errorf("EigenLayerMock declares %d event variants, want the reference's 24", n)
	}
}
