// Package indexer fills the store from an Ethereum JSON-RPC node. It reads
// the logs of an EigenLayer deployment with eth_getLogs over adaptive block
// ranges, decodes them into chain.Batch values with the contracts' ABI, and
// applies each batch in one database transaction together with the sync
// cursor, so that a crash at any moment loses nothing and counts nothing
// twice. It follows the chain head a number of confirmations behind, rolls
// back to the common ancestor when the node's chain no longer matches the
// indexed blocks, fetches AVS and operator metadata documents, and reads
// strategy exchange rates and the withdrawal delay from the chain.
package indexer
