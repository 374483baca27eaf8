// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title EigenLayerMock
/// @notice Emits the EigenLayer core contracts' events with their real
/// signatures, so that the stakegraph indexer can be tested end to end on an
/// in-process chain. One instance stands in for each core contract; it also
/// answers the view calls the indexer makes of strategies, tokens, AVS service
/// managers and the DelegationManager. It holds no protocol logic: the test
/// scripts the history it emits.
contract EigenLayerMock {
    struct OperatorDetails {
        address earningsReceiver;
        address delegationApprover;
        uint32 stakerOptOutWindowBlocks;
    }

    struct Withdrawal {
        address staker;
        address delegatedTo;
        address withdrawer;
        uint256 nonce;
        uint32 startBlock;
        address[] strategies;
        uint256[] shares;
    }

    struct StrategyAndMultiplier {
        address strategy;
        uint96 multiplier;
    }

    struct RewardsSubmission {
        StrategyAndMultiplier[] strategiesAndMultipliers;
        address token;
        uint256 amount;
        uint32 startTimestamp;
        uint32 duration;
    }

    // DelegationManager
    event OperatorRegistered(address indexed operator, OperatorDetails operatorDetails);
    event OperatorRegistered(address indexed operator, address delegationApprover);
    event OperatorMetadataURIUpdated(address indexed operator, string metadataURI);
    event OperatorSharesIncreased(address indexed operator, address staker, address strategy, uint256 shares);
    event OperatorSharesDecreased(address indexed operator, address staker, address strategy, uint256 shares);
    event StakerDelegated(address indexed staker, address indexed operator);
    event StakerUndelegated(address indexed staker, address indexed operator);
    event StakerForceUndelegated(address indexed staker, address indexed operator);
    event WithdrawalQueued(bytes32 withdrawalRoot, Withdrawal withdrawal);
    event WithdrawalCompleted(bytes32 withdrawalRoot);
    event WithdrawalMigrated(bytes32 oldWithdrawalRoot, bytes32 newWithdrawalRoot);
    event SlashingWithdrawalQueued(bytes32 withdrawalRoot, Withdrawal withdrawal, uint256[] sharesToWithdraw);
    event SlashingWithdrawalCompleted(bytes32 withdrawalRoot);

    // StrategyManager
    event Deposit(address staker, address token, address strategy, uint256 shares);
    event Deposit(address staker, address strategy, uint256 shares);
    event StrategyAddedToDepositWhitelist(address strategy);
    event StrategyRemovedFromDepositWhitelist(address strategy);

    // AVSDirectory and AllocationManager
    event OperatorAVSRegistrationStatusUpdated(address indexed operator, address indexed avs, uint8 status);
    event AVSMetadataURIUpdated(address indexed avs, string metadataURI);

    // EigenPodManager
    event PodDeployed(address indexed eigenPod, address indexed podOwner);
    event PodSharesUpdated(address indexed podOwner, int256 sharesDelta);

    // RewardsCoordinator
    event AVSRewardsSubmissionCreated(
        address indexed avs,
        uint256 indexed submissionNonce,
        bytes32 indexed rewardsSubmissionHash,
        RewardsSubmission rewardsSubmission
    );
    event RewardsSubmissionForAllCreated(
        address indexed submitter,
        uint256 indexed submissionNonce,
        bytes32 indexed rewardsSubmissionHash,
        RewardsSubmission rewardsSubmission
    );
    event DistributionRootSubmitted(
        uint32 indexed rootIndex, bytes32 indexed root, uint32 indexed rewardsCalculationEndTimestamp, uint32 activatedAt
    );

    // --- Emitters, one per event variant. ---

    function registerOperatorV1(address operator, OperatorDetails calldata details) external {
        emit OperatorRegistered(operator, details);
    }

    function registerOperatorV2(address operator, address delegationApprover) external {
        emit OperatorRegistered(operator, delegationApprover);
    }

    function updateOperatorMetadataURI(address operator, string calldata uri) external {
        emit OperatorMetadataURIUpdated(operator, uri);
    }

    function increaseOperatorShares(address operator, address staker, address strategy, uint256 shares) external {
        emit OperatorSharesIncreased(operator, staker, strategy, shares);
    }

    function decreaseOperatorShares(address operator, address staker, address strategy, uint256 shares) external {
        emit OperatorSharesDecreased(operator, staker, strategy, shares);
    }

    function delegate(address staker, address operator) external {
        emit StakerDelegated(staker, operator);
    }

    function undelegate(address staker, address operator) external {
        emit StakerUndelegated(staker, operator);
    }

    function forceUndelegate(address staker, address operator) external {
        emit StakerForceUndelegated(staker, operator);
    }

    function queueWithdrawal(bytes32 root, Withdrawal calldata w) external {
        emit WithdrawalQueued(root, w);
    }

    function completeWithdrawal(bytes32 root) external {
        emit WithdrawalCompleted(root);
    }

    function migrateWithdrawal(bytes32 oldRoot, bytes32 newRoot) external {
        emit WithdrawalMigrated(oldRoot, newRoot);
    }

    function queueSlashingWithdrawal(bytes32 root, Withdrawal calldata w, uint256[] calldata sharesToWithdraw) external {
        emit SlashingWithdrawalQueued(root, w, sharesToWithdraw);
    }

    function completeSlashingWithdrawal(bytes32 root) external {
        emit SlashingWithdrawalCompleted(root);
    }

    function depositV1(address staker, address token, address strategy, uint256 shares) external {
        emit Deposit(staker, token, strategy, shares);
    }

    function depositV2(address staker, address strategy, uint256 shares) external {
        emit Deposit(staker, strategy, shares);
    }

    function whitelistStrategy(address strategy) external {
        emit StrategyAddedToDepositWhitelist(strategy);
    }

    function unwhitelistStrategy(address strategy) external {
        emit StrategyRemovedFromDepositWhitelist(strategy);
    }

    function updateRegistration(address operator, address avs, uint8 status) external {
        emit OperatorAVSRegistrationStatusUpdated(operator, avs, status);
    }

    function updateAVSMetadataURI(address avs, string calldata uri) external {
        emit AVSMetadataURIUpdated(avs, uri);
    }

    function deployPod(address pod, address owner) external {
        emit PodDeployed(pod, owner);
    }

    function updatePodShares(address owner, int256 delta) external {
        emit PodSharesUpdated(owner, delta);
    }

    function submitRewards(address avs, uint256 nonce, bytes32 hash, RewardsSubmission calldata s) external {
        emit AVSRewardsSubmissionCreated(avs, nonce, hash, s);
    }

    function submitRewardsForAll(address submitter, uint256 nonce, bytes32 hash, RewardsSubmission calldata s) external {
        emit RewardsSubmissionForAllCreated(submitter, nonce, hash, s);
    }

    function submitRoot(uint32 rootIndex, bytes32 root, uint32 endTimestamp, uint32 activatedAt) external {
        emit DistributionRootSubmitted(rootIndex, root, endTimestamp, activatedAt);
    }

    // --- View calls the indexer makes. ---

    uint256 public sharesToUnderlyingRate = 1e18;
    address public underlyingToken;
    uint256 public minWithdrawalDelayBlocks = 50400;
    address[] private restakeableStrategies;
    string public symbol = "MOCK";
    uint8 public decimals = 18;

    /// @notice Sets the answers of the strategy views.
    function setStrategy(uint256 rate, address token) external {
        sharesToUnderlyingRate = rate;
        underlyingToken = token;
    }

    /// @notice Sets the answer of the DelegationManager's delay view.
    function setMinWithdrawalDelayBlocks(uint256 blocks) external {
        minWithdrawalDelayBlocks = blocks;
    }

    /// @notice Sets what this contract, as an AVS service manager, restakes.
    function setRestakeableStrategies(address[] calldata strategies) external {
        restakeableStrategies = strategies;
    }

    /// @notice Sets the answers of the ERC-20 metadata views.
    function setToken(string calldata tokenSymbol, uint8 tokenDecimals) external {
        symbol = tokenSymbol;
        decimals = tokenDecimals;
    }

    /// @notice Underlying units for amountShares, as the strategy base contract reports it.
    function sharesToUnderlyingView(uint256 amountShares) external view returns (uint256) {
        return amountShares * sharesToUnderlyingRate / 1e18;
    }

    /// @notice The strategies an AVS accepts, as a service manager reports it.
    function getRestakeableStrategies() external view returns (address[] memory) {
        return restakeableStrategies;
    }
}
